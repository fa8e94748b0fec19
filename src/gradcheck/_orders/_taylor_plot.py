"""The log-log picture of a Taylor test (matplotlib, imported here and only here)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def plot_taylor(result: Any, path: Any) -> Path:
    """Remainders against the step on log-log axes, counted steps filled, reference
    slopes 1, 2 and 3 through the smallest counted point, the threshold as a line."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError('Taylor-test plots need matplotlib: pip install "gradcheck[plot]"') from exc
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    h = np.asarray(result.steps)
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    labels = ("R1: gradient", "R2: gradient + Hessian")
    for j, rem in enumerate(result.remainders):
        r = np.maximum(np.asarray(rem), 1e-300)
        counted = np.asarray(result.counted[j])
        line, = ax.loglog(h, r, "-", lw=1, label=f"{labels[j]} (order {result.observed[j]:.2f})")
        ax.loglog(h[counted], r[counted], "o", color=line.get_color())
        ax.loglog(h[~counted], r[~counted], "o", mfc="none", color=line.get_color())
        if counted.any():  # the expected slope (and 1, a wrong gradient's) through the last counted point
            k = np.flatnonzero(counted)[-1]
            for slope in ((1, 2) if j == 0 else (3,)):
                ax.loglog(h, r[k] * (h / h[k]) ** slope, ":", lw=0.8, color="grey")
                ax.annotate(f"h^{slope}", (h[0], r[k] * (h[0] / h[k]) ** slope), fontsize=7, color="grey")
    shown = np.concatenate([np.asarray(rem) for rem in result.remainders] + [[result.threshold]])
    shown = shown[np.isfinite(shown) & (shown > 0)]
    if shown.size:
        ax.set_ylim(shown.min() / 10, shown.max() * 10)
    ax.axhline(result.threshold, color="red", lw=0.8, ls="--", label="threshold (100 x round-off)")
    ax.set_xlabel("step h")
    ax.set_ylabel("remainder")
    ax.set_title(f"{result.name}: {result.status}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
