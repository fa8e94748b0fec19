"""The README's table against torch.autograd.gradcheck and jax.test_util.check_grads, rendered
from the benchmark results recorded in this folder (nothing is re-measured, nothing is typed).

    python benchmarks/peers_table.py            # print the table
    python benchmarks/peers_table.py --write    # put it into README.md, between its markers
    python benchmarks/peers_table.py --check    # exit 1 if README.md's table differs

``tests/test_readme.py`` fails when README.md's table is not what this script renders from the
files in :data:`SOURCES`; after a new benchmark run, point :data:`SOURCES` at its record and run
``--write``. The docs' benchmarks page includes the same lines from README.md.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
README = ROOT / "README.md"
START, END = "<!-- peers-table:start -->", "<!-- peers-table:end -->"

#: The recorded runs the table is read from (each is also described in benchmarks/README.md).
SOURCES = {
    "orders": ROOT / "docs" / "peers_orders.md",                          # benchmarks/peers_orders.py
    "screen": HERE / "results" / "2026-12-01-screen-rerun.json",          # benchmarks/bench_screen.py
    "engines": HERE / "results" / "2026-11-29-session2.json",             # gradcheck bench (bench_torch.py)
    "axes": HERE / "results" / "2026-12-01-axes-2.json",                  # benchmarks/bench_axes.py
}
ORDER_CLAIMS = ("forward mode", "second order", "complex input")


def _seconds(s: float) -> str:
    return f"{s:.2g} s" if s < 10 else f"{s:.0f} s"


def _orders_cells() -> list[str]:
    """One row from docs/peers_orders.md: the 1e-4 error at one entry, for each claim kind."""
    verdicts: dict[str, list[str]] = {"gradcheck": [], "torch": [], "jax": []}
    correct_ok = True
    for line in SOURCES["orders"].read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith(ORDER_CLAIMS):
            continue
        claim, tool, correct, _, small = cells
        family = "gradcheck" if tool.startswith("gradcheck") else "torch" if tool.startswith("torch") else "jax"
        verdicts[family].append(small)
        correct_ok &= correct == "passes"
    if not all(verdicts.values()) or not correct_ok:
        raise ValueError(f"{SOURCES['orders']}: expected every tool to pass the correct claims: {verdicts}")

    def said(results: list[str]) -> str:
        flagged = sum(r.startswith("flags") for r in results)
        named = all("names the entry" in r for r in results)
        if flagged == len(results):
            return "flags it in all three" + (", names the entry" if named else "")
        return "**passes it in all three**" if flagged == 0 else f"flags {flagged} of {len(results)}"

    return ["a custom rule off by 1e-4 at one entry of a 3×4 input: forward mode, double backward, "
            "complex backward", said(verdicts["gradcheck"]), said(verdicts["torch"]), said(verdicts["jax"]),
            "`benchmarks/peers_orders.py`"]


def _screen_cells() -> list[str]:
    record = json.loads(SOURCES["screen"].read_text())
    ours = record["screen"]["1024"]["one entry 1e-2"]
    torch = record["torch_fast_mode"]["one entry 1e-2"]
    found = ours["mismatch"] == ours["planted"] and not ours["passed"]
    return ["one entry off by 1% in a 1024×1024 weight",
            f"`screen`: {'found at its index' if found else 'NOT found'}, {ours['evaluations']} evaluations",
            f"`fast_mode=True`: missed in {torch['trials'] - torch['flagged']} of {torch['trials']} trials",
            "not measured", "`benchmarks/bench_screen.py`"]


def _speed_cells() -> list[str]:
    torch = json.loads(SOURCES["engines"].read_text())["torch"]
    s = torch["seconds"]
    side = int(round(torch["entries"] ** 0.5))
    best = s[f"gradcheck {torch['best_engine']}"]
    return [f"every entry of `tanh(a @ W) · b`, W {side}×{side}",
            f"{_seconds(best)} ({torch['best_engine']} engine{', on an `@njit` twin' if torch['best_engine'] == 'compiled' else ''}), "
            f"{_seconds(s['gradcheck serial'])} (serial)",
            f"{_seconds(s['torch.autograd.gradcheck'])}: {torch['best_ratio']:.0f}× / "
            f"{torch['serial_ratio']:.0f}× slower", "not measured", "`benchmarks/bench_torch.py`"]


def _axes_cells() -> list[str]:
    largest = max(json.loads(SOURCES["axes"].read_text())["torch"], key=lambda r: r["entries"])
    rows, cols = largest["shape"]
    ratio = largest["torch_seconds"] / largest["gradcheck_seconds"]
    return [f"every entry of a layer norm's backward, ({rows}, {cols})",
            f"{_seconds(largest['gradcheck_seconds'])} (`independent_axes`)",
            f"{_seconds(largest['torch_seconds'])} (full Jacobian): {ratio:.0f}× slower",
            "not measured", "`benchmarks/bench_axes.py`"]


def render() -> str:
    """The markdown table, from the records in :data:`SOURCES`."""
    head = ["", "gradcheck", "`torch.autograd.gradcheck`", "`jax.test_util.check_grads`", "measured by"]
    rows = [head, ["---"] * len(head), _orders_cells(), _screen_cells(), _speed_cells(), _axes_cells()]
    return "\n".join("| " + " | ".join(r) + " |" for r in rows) + "\n"


def readme_table(text: str) -> str:
    """The lines between README.md's markers."""
    if text.count(START) != 1 or text.count(END) != 1:
        raise ValueError(f"README.md must hold {START} and {END} once each")
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the table in README.md")
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md's table differs")
    args = parser.parse_args(argv)
    table = render()
    text = README.read_text(encoding="utf-8")
    if args.write:
        before, rest = text.split(START, 1)
        README.write_text(f"{before}{START}\n{table}{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    elif args.check:
        if readme_table(text) != table:
            print("README.md's table differs from the recorded results: run python benchmarks/peers_table.py --write")
            return 1
    else:
        print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
