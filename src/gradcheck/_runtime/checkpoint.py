"""Checkpoint / resume: a long check survives Ctrl-C, SIGTERM, a lost machine.

``check(f, x, grad, checkpoint="run.npz")`` records every finished chunk of differences
(``f(x+h e_i)``, ``f(x-h e_i)``, the realized denominator) in one ``.npz`` file, and a
check started again with the same path resumes from it: finished entries are not
evaluated again, and the report is identical, bit for bit, to an uninterrupted run's
(entries are independent, and the engines that resume -- serial, processes, executor --
give every entry the same bits whatever the chunking). Every pass is recorded, the step
study's too, each under a digest of the indices and steps it asked for.

Safe to interrupt at any moment
    The file is replaced atomically: written to a temporary file beside it, flushed to
    disk, then ``os.replace``-d over the old one. A kill at any instant leaves the old or
    the new checkpoint, never a torn one. No pickle: arrays and a JSON header, loaded
    with ``allow_pickle=False``. Writes are rate-limited (at most one per
    ``Checkpoint.interval`` seconds, and at most ~10% of the time spent writing), plus
    one at the end of each pass and one when the check is interrupted by an exception
    (Ctrl-C is a KeyboardInterrupt: what finished is saved). SIGTERM's default action
    ends the process on the spot; the file then holds what was saved last.

It belongs to one check
    The header records the shape and dtype of ``x``, SHA-256 digests of ``x``'s bytes, of
    the configuration, of the cotangent, of ``f``'s code (and of the functions its
    closure holds), the backend, whether ``f`` is vectorized and the engine's arithmetic
    (serial, processes and executor share one). Resuming anything else raises
    :class:`CheckpointMismatchError` naming what differs. The digest of ``f`` cannot see
    data that ``f`` reads from globals, files or its closure's arrays: hence the next rule.

On success the file is deleted
    A finished check's result is its report; a checkpoint left behind would let a later
    run with an edited-but-same-looking ``f`` reuse stale differences. ``Checkpoint(path,
    keep=True)`` keeps it (a rerun then rebuilds the report without evaluating ``f``).
    After an error (f raised, a chunk failed) the file is kept: it holds the progress.

Checked before any difference is taken
    A file that cannot be a checkpoint (empty, not an npz archive, a header of the wrong
    shape, arrays of the wrong dtype or length) and a path that cannot be written (a
    missing folder, no permission) raise :class:`CheckpointError` when the check opens
    the checkpoint, after the one evaluation of ``f`` at ``x``: never after a whole pass.

Trust: a checkpoint is trusted input
    Its recorded differences are taken as they are: the header ties the file to one check,
    but it is not a signature, and a forged file with a matching header forges the
    report (any verdict at any entry). Resume only files you (or your own jobs) wrote.
    Reading one cannot run code: it is an npz archive loaded with ``allow_pickle=False``
    and a JSON header, never a pickle.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import logging
import os
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core.arguments import flag, nonnegative, takes
from .._core.errors import GradcheckError
from .progress import timed_chunks

if TYPE_CHECKING:
    from numpy.lib.npyio import NpzFile

    from .._core.config import Config

FORMAT = "gradcheck-checkpoint"
VERSION = 1
#: Seconds between two writes of the checkpoint (at least; see :class:`Checkpoint`).
INTERVAL = 2.0
#: Writes take at most about this fraction of the check's time.
WRITE_SHARE = 0.1
#: Engines without chunk callbacks are driven in chunks sized to take about this long.
CHUNK_SECONDS = 0.5
#: Engines giving every entry the same bits as serial (whatever the chunking).
SERIAL_ARITHMETIC = ("serial", "processes", "executor")

log = logging.getLogger("gradcheck.checkpoint")


@dataclass(frozen=True)
class Checkpoint:
    """Where and how a check saves its progress: ``check(..., checkpoint=Checkpoint(...))``
    (a plain path means ``Checkpoint(path)``).

    The file (npz, never pickle) records what it belongs to: shapes, dtype, digests of ``x``,
    the config and ``f``'s code. Run an interrupted check again with the same checkpoint and
    it resumes; the report is the uninterrupted one. A checkpoint is trusted input: resume
    only files your own runs wrote.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write and resume from.
    interval : float, default 2
        Least seconds between two writes (writes also stay under ~10% of the run).
    keep : bool, default False
        Keep the file after a successful check (by default it is deleted).

    Raises
    ------
    ValueError
        A negative or non-numeric ``interval``.

    Examples
    --------
    >>> import os, tempfile, numpy as np, gradcheck
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "run.npz")
    >>> f, x = (lambda x: np.sin(x).sum()), np.linspace(0.0, 1.0, 4)
    >>> gradcheck.check(f, x, np.cos, checkpoint=gradcheck.Checkpoint(path, keep=True)).passed
    True
    >>> os.path.exists(path)          # kept: running the same check again resumes from it
    True
    >>> folder.cleanup()
    """

    path: str | os.PathLike
    interval: float = INTERVAL
    keep: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or os.PathLike (the checkpoint file), got {self.path!r}")
        nonnegative("interval", self.interval, meaning=" (seconds between writes)")
        flag("keep", self.keep)


class CheckpointError(GradcheckError, RuntimeError):
    """A checkpoint file that cannot be read as one (damaged, or not a checkpoint), or a
    path where no checkpoint can be written (``writing=True``).

    Raised when the check opens the checkpoint, before any differencing. ``path``,
    ``problem`` and ``writing`` say which file and what is wrong with it.

    Examples
    --------
    >>> import os, tempfile, numpy as np, gradcheck
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "notes.npz")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write("not a checkpoint")
    >>> gradcheck.check(lambda x: np.sin(x).sum(), np.ones(3), np.cos, checkpoint=path)
    Traceback (most recent call last):
    ...
    gradcheck._runtime.checkpoint.CheckpointError: cannot resume from '...notes.npz': it is not an npz (zip) archive (16 bytes), so not a checkpoint; delete the file to start over
    >>> folder.cleanup()
    """

    def __init__(self, path: str, problem: str, *, writing: bool = False) -> None:
        self.path, self.problem, self.writing = path, problem, writing
        if writing:
            message = (f"cannot write a checkpoint to {path!r}: {problem}; pass a path in a "
                       "folder that exists and that you can write to")
        else:
            message = f"cannot resume from {path!r}: {problem}; delete the file to start over"
        super().__init__(message)


class CheckpointMismatchError(GradcheckError, ValueError):
    """The checkpoint file belongs to a different check.

    ``path`` is the file; ``differences`` maps each differing field to ``(in_file, now)``.

    Examples
    --------
    >>> import os, tempfile, numpy as np, gradcheck
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "run.npz")
    >>> f = lambda x: np.sin(x).sum()
    >>> kept = gradcheck.Checkpoint(path, keep=True)
    >>> gradcheck.check(f, np.linspace(0.0, 1.0, 4), np.cos, checkpoint=kept).passed
    True
    >>> try:                                          # another x: refused, not resumed
    ...     gradcheck.check(f, np.linspace(0.0, 2.0, 4), np.cos, checkpoint=path)
    ... except gradcheck.CheckpointMismatchError as err:
    ...     print(sorted(err.differences))
    ['x_sha256']
    >>> folder.cleanup()
    """

    def __init__(self, path: str, differences: dict[str, tuple[object, object]]) -> None:
        self.path, self.differences = path, dict(differences)
        lines = "".join(f"\n  {k}: file has {a!r}, this check has {b!r}" for k, (a, b) in differences.items())
        super().__init__(
            f"checkpoint {path!r} belongs to a different check; refusing to resume it:{lines}\n"
            "Pass another path, or delete the file to start this check from scratch."
        )


def as_checkpoint(spec: object) -> Checkpoint:
    if isinstance(spec, Checkpoint):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        return Checkpoint(spec)
    raise TypeError(f"checkpoint must be a path or a Checkpoint, got {type(spec).__name__}")


def for_input(spec: object, k: int) -> Checkpoint:
    """The checkpoint of input ``k`` of ``check(f, (x1, x2, ...))``: ``run.npz`` ->
    ``run.input1.npz``."""
    ck = as_checkpoint(spec)
    root, ext = os.path.splitext(os.fspath(ck.path))
    return dataclasses.replace(ck, path=f"{root}.input{k}{ext or '.npz'}")


# -- what a checkpoint belongs to ------------------------------------------------------------
def _sha(*chunks: bytes) -> str:
    h = hashlib.sha256()
    for c in chunks:
        h.update(len(c).to_bytes(8, "little"))
        h.update(c)
    return h.hexdigest()


def _array_digest(a: np.ndarray | None) -> str:
    if a is None:
        return "none"
    a = np.ascontiguousarray(a)
    return _sha(str(a.dtype).encode(), repr(a.shape).encode(), a.tobytes())


def _code_digest(code: CodeType) -> list[bytes]:
    parts = [code.co_code, repr(code.co_names).encode()]
    for const in code.co_consts:
        if inspect.iscode(const):
            parts.extend(_code_digest(const))
        elif isinstance(const, frozenset):  # its repr's order follows the per-process hash seed
            parts.append(repr(sorted(repr(c) for c in const)).encode())
        else:
            parts.append(repr(const).encode())
    return parts


def function_digest(fn: object, depth: int = 3) -> str:
    """Digest of a callable's code and of the functions its closure holds (best effort:
    no digest can see the data a function reads)."""
    parts: list[bytes] = []
    seen: set[int] = set()

    def visit(obj: object, level: int) -> None:
        if id(obj) in seen or level < 0:
            return
        seen.add(id(obj))
        target = getattr(obj, "py_func", obj)  # numba dispatchers
        target = getattr(target, "__wrapped__", target)
        code = getattr(target, "__code__", None)
        name = getattr(target, "__qualname__", type(target).__qualname__)
        parts.append(f"{getattr(target, '__module__', '')}.{name}".encode())
        if code is not None:
            parts.extend(_code_digest(code))
            for cell in getattr(target, "__closure__", None) or ():
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                if callable(value):
                    visit(value, level - 1)
        elif hasattr(obj, "func") and callable(obj.func):  # functools.partial
            visit(obj.func, level - 1)
        elif inspect.isfunction(getattr(type(obj), "__call__", None)):  # noqa: B004  (a callable instance)
            visit(type(obj).__call__, level - 1)

    visit(fn, depth)
    return _sha(*parts)


def fingerprint(*, x: np.ndarray, config: Config, cotangent: np.ndarray | None, f: object,
                backend: object, engine: str, vectorized: bool) -> dict[str, object]:
    """What a checkpoint belongs to (JSON-ready)."""
    cfg = {k: getattr(config, k) for k in config.__dataclass_fields__}
    return {
        "shape": [int(s) for s in x.shape],
        "dtype": str(x.dtype),
        "x_sha256": _array_digest(x),
        "config_sha256": _sha(json.dumps(cfg, sort_keys=True, default=repr).encode()),
        "cotangent_sha256": _array_digest(cotangent),
        "function_sha256": function_digest(f),
        "backend": str(getattr(backend, "name", type(backend).__name__)),
        "vectorized": bool(vectorized),
        "arithmetic": "serial" if engine in SERIAL_ARITHMETIC else engine,
    }


# -- the file -----------------------------------------------------------------------------
@dataclass
class _Record:
    """The differences of one pass: which positions are done, and their values."""

    done: np.ndarray
    fp: np.ndarray
    fm: np.ndarray
    den: np.ndarray

    @classmethod
    def empty(cls, count: int) -> _Record:
        return cls(np.zeros(count, bool), np.full(count, np.nan), np.full(count, np.nan), np.full(count, np.nan))


def pass_key(idx: np.ndarray, steps: np.ndarray) -> str:
    return _sha(np.ascontiguousarray(idx, np.int64).tobytes(), np.ascontiguousarray(steps, np.float64).tobytes())[:32]


def _load(path: str) -> tuple[dict[str, Any], dict[str, _Record]]:
    """The header and the passes of a checkpoint file, every field checked for its type:
    anything else is a :class:`CheckpointError`, raised before any difference is taken."""
    size = os.path.getsize(path)
    if size == 0:
        raise CheckpointError(path, "the file is empty (0 bytes), not a checkpoint")
    if not zipfile.is_zipfile(path):  # np.load would try it as a pickle, then refuse that
        raise CheckpointError(path, f"it is not an npz (zip) archive ({size} bytes), so not a checkpoint")
    try:
        with np.load(path, allow_pickle=False) as z:
            header = _header(path, z)
            records = {key: _record(path, z, j) for j, key in enumerate(header["passes"])}
    except CheckpointError:
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile, UnicodeDecodeError,
            json.JSONDecodeError) as exc:
        raise CheckpointError(path, f"{type(exc).__name__}: {exc}") from exc
    return header, records


def _header(path: str, z: NpzFile) -> dict[str, Any]:
    if "header" not in z.files:
        raise CheckpointError(path, f"it has no header (arrays {sorted(z.files)[:6]}): not a gradcheck checkpoint")
    raw = z["header"]
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise CheckpointError(path, f"its header is a {raw.dtype} array of shape {raw.shape}, not JSON bytes")
    header = json.loads(bytes(raw).decode("utf-8"))
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CheckpointError(path, "it is not a gradcheck checkpoint")
    if header.get("version") != VERSION:
        raise CheckpointError(path, f"it has format version {header.get('version')!r}, "
                                    f"this gradcheck reads version {VERSION}")
    passes, check_id = header.get("passes"), header.get("check")
    if not (isinstance(passes, list) and all(isinstance(k, str) for k in passes)) or len(set(passes)) != len(passes):
        raise CheckpointError(path, f"its header's 'passes' is {type(passes).__name__} {passes!r:.80}, "
                                    "not a list of distinct names")
    if not isinstance(check_id, dict):
        raise CheckpointError(path, f"its header's 'check' is {type(check_id).__name__}, not a mapping")
    return header


def _record(path: str, z: NpzFile, j: int) -> _Record:
    arrays = {}
    for part, kinds in (("done", "b"), ("fp", "f"), ("fm", "f"), ("den", "f")):
        a = z[f"p{j}_{part}"]
        if a.dtype.kind not in kinds or a.ndim != 1:
            want = "bool" if kinds == "b" else "float"
            raise CheckpointError(path, f"pass {j}'s array {part!r} is {a.dtype} of shape {a.shape}, "
                                        f"not a 1-d {want} array")
        arrays[part] = a
    rec = _Record(arrays["done"], *(arrays[k].astype(np.float64) for k in ("fp", "fm", "den")))
    sizes = {a.shape for a in (rec.done, rec.fp, rec.fm, rec.den)}
    if len(sizes) != 1:
        raise CheckpointError(path, f"pass {j} has arrays of different shapes {sizes}")
    return rec


def _require_writable(path: str) -> None:
    """Fail now, not after a whole pass, if the checkpoint cannot be written at ``path``:
    a probe file is created and removed beside it (where the atomic write puts its own)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CheckpointError(path, "it is a folder", writing=True)
    if not os.path.isdir(folder):
        raise CheckpointError(path, f"the folder {folder!r} does not exist", writing=True)
    probe = f"{path}.tmp-{os.getpid()}-probe"
    try:
        with open(probe, "wb"):
            pass
        os.unlink(probe)
    except OSError as exc:
        raise CheckpointError(path, f"{type(exc).__name__}: {exc.strerror or exc}", writing=True) from exc


def _write_atomically(path: str, arrays: dict[str, np.ndarray]) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    tmp = f"{path}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds as allow_pickle
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _remove_stale_temporaries(path: str) -> None:
    """Temporary files of writers killed mid-write (their process is gone)."""
    folder = os.path.dirname(os.path.abspath(path))
    prefix = os.path.basename(path) + ".tmp-"
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        try:
            pid = int(name[len(prefix):].split("-")[0])
        except ValueError:
            continue
        if pid != os.getpid() and _alive(pid):
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


# -- the differencer ------------------------------------------------------------------------
class Checkpointed:
    """Wraps a differencer's ``differences`` (:class:`~gradcheck._differences.CentralDifferences`
    on a runner): finished entries come from the file, the rest from the differencer, and
    finished chunks go to the file."""

    def __init__(self, engine: Any, spec: Checkpoint, header: dict[str, Any]) -> None:
        self.engine = engine
        self.spec = spec
        self.path = os.fspath(spec.path)
        self.header = dict(header, format=FORMAT, version=VERSION)
        self.records: dict[str, _Record] = {}
        self.resumed_entries = 0
        _require_writable(self.path)
        _remove_stale_temporaries(self.path)
        if os.path.exists(self.path):
            found, records = _load(self.path)
            differing = {k: (found.get("check", {}).get(k), v) for k, v in header["check"].items()
                         if found.get("check", {}).get(k) != v}
            if differing:
                raise CheckpointMismatchError(self.path, differing)
            self.records = records
            self.resumed_entries = int(sum(r.done.sum() for r in records.values()))
            log.info("resuming %s: %d differenced entries on file", self.path, self.resumed_entries)
        self._dirty = False
        self._last_write = time.monotonic()
        self._write_seconds = 0.0
        # A differencer whose runner reports its chunks as they finish (the executor's) saves
        # them itself; any other is driven here in chunks sized by time.
        self._on_chunk = bool(getattr(engine, "reports_chunks", False))

    def differences(self, flat_indices, steps, progress: Callable[[int], None] | None = None):
        idx = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        steps = np.asarray(steps, dtype=np.float64).reshape(-1)
        key = pass_key(idx, steps)
        rec = self.records.get(key)
        if rec is None or rec.done.size != idx.size:
            rec = self.records[key] = _Record.empty(idx.size)
        pending = np.flatnonzero(~rec.done)
        if progress is not None and pending.size < idx.size:
            progress(int(idx.size - pending.size))
        if pending.size:
            completed = False
            try:
                self._run(rec, idx, steps, pending, progress)
                completed = True
            finally:
                if self._dirty:
                    try:
                        self.save()
                    except OSError:
                        if completed:
                            raise
                        log.exception("could not save checkpoint %s while interrupted", self.path)
        return rec.fp.copy(), rec.fm.copy(), rec.den.copy()

    def _record(self, rec: _Record, positions: np.ndarray, fp, fm, den) -> None:
        rec.fp[positions], rec.fm[positions], rec.den[positions] = fp, fm, den
        rec.done[positions] = True
        self._dirty = True
        wait = max(self.spec.interval, self._write_seconds / WRITE_SHARE)
        if time.monotonic() - self._last_write >= wait:
            self.save()

    def _run(self, rec: _Record, idx, steps, pending: np.ndarray, progress) -> None:
        before = int(idx.size - pending.size)
        if self._on_chunk:
            def on_chunk(positions, fp, fm, den):  # positions into this call's request
                self._record(rec, pending[positions], fp, fm, den)

            wrapped = None if progress is None else (lambda done: progress(before + done))
            kwargs: dict[str, Any] = {"on_chunk": on_chunk}
            if wrapped is not None and takes(self.engine.differences, "progress"):
                kwargs["progress"] = wrapped
            self.engine.differences(idx[pending], steps[pending], **kwargs)
            return
        # An engine that answers whole calls: drive it in chunks sized by time.
        for chunk in timed_chunks(pending.size, CHUNK_SECONDS):
            part = pending[chunk]
            fp, fm, den = self.engine.differences(idx[part], steps[part])
            self._record(rec, part, fp, fm, den)
            if progress is not None:
                progress(before + chunk.stop)

    def save(self) -> None:
        began = time.perf_counter()
        keys = list(self.records)
        header = dict(self.header, passes=keys, saved=time.time())
        arrays: dict[str, np.ndarray] = {
            "header": np.frombuffer(json.dumps(header, sort_keys=True).encode("utf-8"), dtype=np.uint8)
        }
        for j, key in enumerate(keys):
            rec = self.records[key]
            arrays[f"p{j}_done"] = rec.done
            arrays[f"p{j}_fp"], arrays[f"p{j}_fm"], arrays[f"p{j}_den"] = rec.fp, rec.fm, rec.den
        _write_atomically(self.path, arrays)
        self._dirty = False
        self._last_write = time.monotonic()
        self._write_seconds = time.perf_counter() - began

    def finish(self) -> None:
        """The check succeeded: delete the file (or, with ``keep=True``, save it)."""
        if self.spec.keep:
            if self._dirty or not os.path.exists(self.path):
                self.save()
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass




def open_checkpoint(spec: object, engine: Any, *, x: np.ndarray, config: Config, cotangent: np.ndarray | None,
                    f: object, backend: object, vectorized: bool) -> Checkpointed:
    """A checkpointed differencer for one check (resuming the file when it matches)."""
    ck = as_checkpoint(spec)
    check_id = fingerprint(x=x, config=config, cotangent=cotangent, f=f, backend=backend,
                           engine=engine.name, vectorized=vectorized)
    return Checkpointed(engine, ck, {"check": check_id})
