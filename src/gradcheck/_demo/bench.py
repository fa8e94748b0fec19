"""``gradcheck bench``: run the benchmark scripts of a source checkout.

The scripts live in ``benchmarks/`` at the top of the repository, not inside the
installed package: they measure gradcheck against what users would use instead (torch,
the naive loop) and pull in heavy optional dependencies, so they are developer tools,
not library code. ``gradcheck bench`` therefore works from a source checkout (an
editable install finds the directory beside ``src/``; elsewhere run it from the
repository root or pass ``--dir``). Each script ``bench_NAME.py`` exposes
``main(quick=False) -> dict``, prints its tables in the one format of :func:`text_table`
(through ``benchmarks/_common.py``), and runs alone as
``python benchmarks/bench_NAME.py [--quick]``. ``--quick`` runs small sizes (about 48 s for all
of them on two nearly quiet cores, warm: benchmarks/README.md); each benchmark's header says what its
quick run leaves out.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

#: Indent of every line a benchmark prints under its ``==`` title (tables included).
INDENT = "   "
#: Environment variable naming the benchmarks directory (overridden by ``--dir``).
BENCH_DIR_ENV = "GRADCHECK_BENCH_DIR"
PREFIX = "bench_"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[object]], indent: str = INDENT) -> str:
    """The one table format of ``gradcheck bench``: a header, a rule of dashes, one row per
    line, columns left-aligned to their widest cell, every line indented.

    >>> print(text_table(["f", "time"], [["tanh", "1.2 ms"], ["x * x", "80 us"]], indent=""))
    f      time
    -----  ------
    tanh   1.2 ms
    x * x  80 us
    """
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells if i < len(r)]) for i, h in enumerate(headers)]

    def line(row: Sequence[str]) -> str:
        return (indent + "  ".join(c.ljust(w) for c, w in zip(row, widths))).rstrip()

    return "\n".join([line(list(headers)), line(["-" * w for w in widths])] + [line(r) for r in cells])


def find_directory(directory: str | os.PathLike | None = None) -> Path:
    """The benchmarks directory: ``directory``, ``$GRADCHECK_BENCH_DIR``,
    ``./benchmarks``, or ``benchmarks/`` beside this package's ``src/`` (a checkout)."""
    candidates = []
    if directory is not None:
        candidates.append(Path(directory))
    elif os.environ.get(BENCH_DIR_ENV):
        candidates.append(Path(os.environ[BENCH_DIR_ENV]))
    else:
        candidates.append(Path.cwd() / "benchmarks")
        candidates.append(Path(__file__).resolve().parents[3] / "benchmarks")
    for path in candidates:
        if path.is_dir() and any(path.glob(f"{PREFIX}*.py")):
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise FileNotFoundError(
        f"no benchmark scripts ({PREFIX}*.py) found in {tried}; `gradcheck bench` runs the "
        "scripts of a source checkout: run it from the repository root, or pass --dir DIR"
    )


def discover(directory: Path) -> dict[str, Path]:
    """``{NAME: path}`` of every ``bench_NAME.py`` in ``directory``, sorted by name."""
    return {p.stem[len(PREFIX):]: p for p in sorted(directory.glob(f"{PREFIX}*.py"))}


def load(path: Path) -> ModuleType:
    """Import one script as a module (its directory on sys.path, for ``_common``)."""
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(f"gradcheck_benchmarks.{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "main", None)):
        raise AttributeError(f"{path} has no main(quick=False) function")
    return module


def call_main(main: Callable[..., object], quick: bool) -> object:
    """``main(quick=...)``, the convention; a ``main(argv)`` gets ``["--quick"]`` or ``[]``."""
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(main).parameters
    except (TypeError, ValueError):
        params = {}
    if "quick" in params:
        return main(quick=quick)
    if "argv" in params:
        return main(["--quick"] if quick else [])
    return main()


def run_benchmarks(
    names: Sequence[str] = (),
    *,
    quick: bool = False,
    directory: str | os.PathLike | None = None,
    json_path: str | None = None,
) -> int:
    """Run the named benchmarks (all when ``names`` is empty); 0 if every one ran,
    1 if one raised. Missed targets are reported, not failed: timings are measurements."""
    folder = find_directory(directory)
    scripts = discover(folder)
    unknown = [n for n in names if n not in scripts]
    if unknown:
        raise ValueError(f"unknown benchmark(s) {unknown}; available: {sorted(scripts)}")
    chosen = list(names) or list(scripts)
    results: dict[str, object] = {}
    summary = []
    status = 0
    for name in chosen:
        started, cpu_started = time.perf_counter(), cpu_seconds()
        try:
            result = call_main(load(scripts[name]).main, quick)
            outcome = "ran"
        except Exception as exc:  # one broken benchmark does not hide the others
            traceback.print_exc()
            result = {"error": f"{type(exc).__name__}: {exc}"}
            outcome = f"ERROR: {type(exc).__name__}: {exc}"
            status = 1
        took, cpu = time.perf_counter() - started, cpu_seconds() - cpu_started
        results[name] = result
        summary.append((name, outcome, took, cpu, _target_word(result)))
        print(flush=True)
    print("== gradcheck bench summary" + ("  [--quick]" if quick else ""))
    print(text_table(["benchmark", "outcome", "time", "CPU", "target"],
                     [[name, outcome, f"{took:.1f} s", f"{cpu:.1f} s", target]
                      for name, outcome, took, cpu, target in summary]))
    print(f"{INDENT}total {sum(row[2] for row in summary):.1f} s, CPU {sum(row[3] for row in summary):.1f} s "
          f"(user + system, with the benchmarks' child processes; on a shared machine the steadier figure)")
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(results, fh, indent=2, default=_jsonable)
    return status


def cpu_seconds() -> float:
    """User + system CPU time of this process and of its children that have ended (a
    benchmark's worker processes and subprocesses), in seconds."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _target_word(result: object) -> str:
    if not isinstance(result, dict):
        return ""
    if "skipped" in result:
        return f"skipped: {result['skipped']}"
    if "target_summary" in result:  # a benchmark whose target reads differently per case
        return str(result["target_summary"])
    for key in ("meets_target", "meets_targets"):
        if key in result:
            return "target met" if result[key] else "target MISSED"
    return ""


def _jsonable(value: Any) -> float | str:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)
