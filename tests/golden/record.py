"""Record the golden corpus (``cases.py``), or check the current tree against it.

    python tests/golden/record.py                  # record every case into tests/golden/*.json
    python tests/golden/record.py --only 'zoo/*'   # record the matching cases (others kept)
    python tests/golden/record.py --check          # recompute every case, print what differs
    python tests/golden/record.py --check 'matrix/screen/*'

``gradcheck`` is whatever ``import gradcheck`` finds (``PYTHONPATH=...``), so the same script
records an older tree (e.g. a ``git worktree add --detach`` of main) with this corpus:
``--out DIR`` writes its JSON there instead. One JSON file per group (the name's first part),
keys sorted, so a re-recorded case shows as a small diff.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import cases  # noqa: E402


def load(folder: Path = HERE) -> dict[str, Any]:
    """Every recorded case, by name."""
    out: dict[str, Any] = {}
    for path in sorted(folder.glob("*.json")):
        out.update(json.loads(path.read_text()))
    return out


def save(recorded: dict[str, Any], folder: Path) -> None:
    groups: dict[str, dict[str, Any]] = {}
    for name, value in recorded.items():
        groups.setdefault(name.split("/")[0], {})[name] = value
    folder.mkdir(parents=True, exist_ok=True)
    for group, values in groups.items():
        (folder / f"{group}.json").write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")


def differences(want: Any, got: Any, path: str = "", limit: int = 12) -> list[str]:
    """Where ``got`` differs from ``want`` (paths into the JSON, with both values)."""
    found: list[str] = []
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got or key not in want:
                found.append(f"{path}/{key}: {'missing now' if key not in got else 'new'}")
            else:
                found += differences(want[key], got[key], f"{path}/{key}", limit)
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for k, (a, b) in enumerate(zip(want, got)):
            found += differences(a, b, f"{path}[{k}]", limit)
    elif want != got and not (want != want and got != got):  # NaN stays NaN
        found.append(f"{path}: recorded {str(want)[:200]!r}, now {str(got)[:200]!r}")
    return found[:limit]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", nargs="?", const="*", default=None, metavar="PATTERN")
    parser.add_argument("--only", default="*", metavar="PATTERN")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    import gradcheck

    print(f"gradcheck from {Path(gradcheck.__file__).parent}", file=sys.stderr)
    pattern = args.check if args.check is not None else args.only
    chosen = {n: run for n, run in cases().items() if fnmatch.fnmatch(n, pattern)}
    recorded = load(args.out if args.check is None else HERE)
    failed = 0
    for name, run in chosen.items():
        began = time.perf_counter()
        value = run()
        took = time.perf_counter() - began
        if args.check is None:
            recorded[name] = value
            print(f"{took:6.2f}s recorded {name}", file=sys.stderr)
            continue
        if name not in recorded:
            print(f"{took:6.2f}s NEW      {name} (not recorded)")
            failed += 1
            continue
        found = differences(recorded[name], value)
        print(f"{took:6.2f}s {'same    ' if not found else 'DIFFERS '} {name}")
        for line in found:
            print(f"           {line}")
        failed += bool(found)
    if args.check is None:
        save(recorded, args.out)
        return 0
    print(f"{len(chosen) - failed} of {len(chosen)} cases as recorded")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
