"""Shared helpers of the benchmark scripts: timing, the machine line, tables, the CLI.

Every benchmark measures its contenders in ONE run, interleaved (A, B, A, B, ...) and
keeps the best of k wall times of each, so a neighbour's load on a shared machine hits
both sides alike; it prints the ratios beside the absolute times and the core count.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from gradcheck._demo.bench import INDENT, text_table


def cores() -> int:
    """Cores this process may use (its affinity mask where the OS tells it)."""
    from gradcheck._evaluate import usable_cores

    return usable_cores()


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    try:
        load = round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        load = None
    return {
        "date": datetime.date.today().isoformat(),
        "cores": cores(),
        "cpu": cpu_name(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_1min": load,
    }


def machine_line() -> str:
    m = machine()
    return (
        f"{m['date']}  {m['cores']} cores ({m['cpu']})  Python {m['python']}  numpy {m['numpy']}"
        f"  load {m['load_1min']}"
    )


def wall(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def best_of(fn: Callable[[], Any], repeat: int = 5) -> float:
    """Best wall time of ``repeat`` calls of ``fn`` (seconds)."""
    return min(wall(fn) for _ in range(max(1, repeat)))


def compare(contenders: dict[str, Callable[[], Any]], repeat: int = 5, warmup: bool = True) -> dict[str, float]:
    """Best-of-``repeat`` wall time of each contender, measured in interleaved rounds."""
    if warmup:
        for fn in contenders.values():
            fn()
    best = {name: float("inf") for name in contenders}
    for _ in range(max(1, repeat)):
        for name, fn in contenders.items():
            best[name] = min(best[name], wall(fn))
    return best


def seconds(value: float) -> str:
    if value < 1e-3:
        return f"{value * 1e6:.1f} us"
    if value < 1.0:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain-text table in the one format of ``gradcheck bench`` (every benchmark's tables)."""
    return text_table(headers, list(rows))


def header(title: str, quick: bool, leaves_out: str = "") -> None:
    """The title line, the machine line and, for ``--quick``, what the quick run leaves out
    (quick means small, never silently skipped)."""
    print(f"== {title}{'  [--quick]' if quick else ''}")
    print(f"{INDENT}{machine_line()}")
    if quick and leaves_out:
        print(f"{INDENT}--quick leaves out: {leaves_out}")


def note(text: str) -> None:
    """A line of prose under a benchmark's title, indented like its tables."""
    print(f"{INDENT}{text}")


def naive_loop(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """The seed's loop, verbatim: perturb in place, f twice, restore (``numerical_grad``)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        old = x[idx]
        x[idx] = old + h
        fp = f(x)
        x[idx] = old - h
        fm = f(x)
        x[idx] = old
        g[idx] = (fp - fm) / (2 * h)
    return g


def run(main: Callable[..., dict], argv: Sequence[str] | None = None) -> int:
    """``python bench_X.py [--quick] [--json FILE]``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    result = main(quick=args.quick)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2, default=float)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit("this module is imported by the bench_*.py scripts")
