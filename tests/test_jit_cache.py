"""numba's on-disk cache of gradcheck's kernels (``cache=True``, gradcheck._core.jit):
reused by the next process, never stale across argument types or a changed source."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import gradcheck

#: The folder holding the gradcheck under test: the subprocess imports the same one.
SOURCE = str(pathlib.Path(gradcheck.__file__).resolve().parents[1])

KERNEL_SOURCE = textwrap.dedent(
    """
    from gradcheck._core.jit import kernel

    @kernel()
    def affine(x):
        return x * FACTOR + 1
    """
)

RUN = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import cached_kernel

    out = {}
    for dtype in sys.argv[1:]:
        y = cached_kernel.affine(np.arange(4).astype(dtype))
        out[dtype] = [str(y.dtype), y.tolist()]
    stats = cached_kernel.affine.dispatcher.stats
    out["hits"] = sorted(str(s) for s in stats.cache_hits)
    out["misses"] = sorted(str(s) for s in stats.cache_misses)
    print(json.dumps(out))
    """
)


def _run(folder: pathlib.Path, *dtypes: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), SOURCE]),
               NUMBA_CACHE_DIR=str(folder / "numba-cache"))
    out = subprocess.run([sys.executable, "-c", RUN, *dtypes], cwd=folder, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _write_kernel(folder: pathlib.Path, factor: int, mtime: float | None = None) -> None:
    path = folder / "cached_kernel.py"
    path.write_text(f"FACTOR = {factor}\n{KERNEL_SOURCE}")
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def test_the_cache_serves_the_next_process_and_is_never_stale(tmp_path):
    """A kernel compiled for float64 in one process is loaded from the cache by the next
    one; the next one's float32 and int64 calls are compiled for their own types (not
    handed the float64 machine code: float32 stays float32, integers stay exact). After
    an edit of the kernel's source (saved later, as an editor would), the next process
    runs the new code, not the cached old one."""
    _write_kernel(tmp_path, 2)
    first = _run(tmp_path, "float64")
    assert first["float64"] == ["float64", [1.0, 3.0, 5.0, 7.0]]
    assert first["hits"] == [] and len(first["misses"]) == 1

    second = _run(tmp_path, "float64", "float32", "int64")
    assert second["float64"] == ["float64", [1.0, 3.0, 5.0, 7.0]]
    assert second["float32"] == ["float32", [1.0, 3.0, 5.0, 7.0]]
    assert second["int64"] == ["int64", [1, 3, 5, 7]]
    assert len(second["hits"]) == 1 and "float64" in second["hits"][0]
    assert len(second["misses"]) == 2 and not any("float64" in s for s in second["misses"])

    before = (tmp_path / "cached_kernel.py").stat().st_mtime
    _write_kernel(tmp_path, 3, mtime=before + 5)
    third = _run(tmp_path, "float64", "int64")
    assert third["float64"] == ["float64", [1.0, 4.0, 7.0, 10.0]]
    assert third["int64"] == ["int64", [1, 4, 7, 10]]
    assert third["hits"] == [] and len(third["misses"]) == 2
