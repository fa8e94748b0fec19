"""Not run by ``gradcheck bench``: the K = 1,024 bfloat16 matmul dispute of this tree against
an older tree's, in one run (issue 29's 1,000x target is against the path of its day).

The same inputs (saved to a temporary ``.npz``) go to two subprocesses, one with
``PYTHONPATH=THIS/src`` and one with ``PYTHONPATH=OLD/src`` (an older tree extracted with
``git archive REV src | tar -x -C OLD`` and the compiled ``_kernels.abi3.so`` copied into it);
each times ``dispute(lambda p, q: p @ q, ...)`` on 32 x 1,024 @ 1,024 x 32 with two candidates
(a float32 matmul rounded once, a float16-accumulating one), best wall and CPU time of N, and
this tree's again with ``float32_evaluation=False``.

    OPENBLAS_NUM_THREADS=1 python benchmarks/dispute_old_tree.py src /tmp/old/src
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np

CHILD = r'''
import json, sys, time
import ml_dtypes, numpy as np
from gradcheck import dispute
d = np.load(sys.argv[1])
a, b = d["a"], d["b"]
cands = {"float32": d["f32"].astype(ml_dtypes.bfloat16), "float16 accumulation": d["f16"].astype(ml_dtypes.bfloat16)}
kw = json.loads(sys.argv[3])
dispute(lambda p, q: p @ q, (a[:2], b), {k: v[:2] for k, v in cands.items()}, "bfloat16", **kw)  # warm-up
best = (np.inf, np.inf)
for _ in range(int(sys.argv[2])):
    t, c = time.perf_counter(), time.process_time()
    r = dispute(lambda p, q: p @ q, (a, b), cands, "bfloat16", **kw)
    best = (min(best[0], time.perf_counter() - t), min(best[1], time.process_time() - c))
print(json.dumps({"wall": best[0], "cpu": best[1], "broken": list(r.broken)}))
'''


def _run(src: str, path: str, repeat: int, kw: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    out = subprocess.run([sys.executable, "-c", CHILD, path, str(repeat), json.dumps(kw)], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _inputs(path: str) -> None:
    rng = np.random.default_rng(0)

    def bf(y):
        return np.asarray(y, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)

    a, b = bf(rng.standard_normal((32, 1024))), bf(rng.standard_normal((1024, 32)))
    acc = np.zeros((32, 32), np.float16)
    for k in range(1024):  # a float16 accumulator, one rounding per multiply-add
        acc = (acc + a[:, k:k + 1].astype(np.float16) * b[k:k + 1, :].astype(np.float16)).astype(np.float16)
    np.savez(path, a=a, b=b, f32=bf(a @ b), f16=bf(acc.astype(np.float32)))


def main(this_src: str, old_src: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "inputs.npz")
        _inputs(path)
        old = _run(old_src, path, 1, {})
        rows = [("this tree", _run(this_src, path, 7, {})),
                ("this tree, float32_evaluation=False", _run(this_src, path, 7, {"float32_evaluation": False}))]
    print(f"old tree ({old_src}): {old['wall']:.2f} s wall, {old['cpu']:.2f} s CPU, broken {old['broken']}")
    for name, r in rows:
        print(f"{name}: {r['wall'] * 1e3:.1f} ms wall, {r['cpu'] * 1e3:.1f} ms CPU, broken {r['broken']}; "
              f"old / this: {old['wall'] / r['wall']:,.0f}x wall, {old['cpu'] / r['cpu']:,.0f}x CPU")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
