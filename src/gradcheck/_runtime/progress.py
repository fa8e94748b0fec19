"""Progress of a long check: one updating line on a terminal, silence everywhere else.

``check(..., progress=None)`` (the default) draws only when stderr is a terminal and the
differencing pass is projected to take more than :data:`MIN_SECONDS`; ``True`` draws
always (on whatever stderr is), ``False`` never. The line shows entries done / total,
the rate and the time left::

    gradcheck[loss]: 4096/9216 entries (44%)  1.9k entries/s  ETA 2.7s

Engines whose ``differences`` accept a ``progress`` keyword report as they go (a
callable taking the number of entries done so far); any other engine is driven in
chunks, which changes nothing in its results because entries are independent.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import numpy as np

from .._core.arguments import takes

#: Auto mode draws only for a pass projected to take longer than this.
MIN_SECONDS = 2.0
#: Auto mode waits this long before projecting (and drawing anything).
DELAY_SECONDS = 0.5
#: At most one redraw per interval.
INTERVAL_SECONDS = 0.2
#: Chunked engines get chunks sized to take about this long.
CHUNK_SECONDS = 0.2
#: A pass projected (or measured) to take longer than this suggests gradcheck.screen.
SCREEN_HINT_SECONDS = 120.0


class Progress:
    """A progress line for ``total`` entries. ``update(done)`` takes the number done so
    far; ``close()`` (or leaving the ``with`` block) ends the line if one was drawn.

    >>> import io
    >>> out = io.StringIO()
    >>> with Progress(3, enabled=True, stream=out, label="f") as bar:
    ...     bar.update(3)
    >>> "3/3 entries" in out.getvalue()
    True
    """

    def __init__(
        self,
        total: int,
        *,
        enabled: bool | None = None,
        label: str = "",
        stream: TextIO | None = None,
        min_seconds: float = MIN_SECONDS,
        delay_seconds: float = DELAY_SECONDS,
        clock: Callable[[], float] = time.perf_counter,
        header: str | None = None,
    ) -> None:
        if enabled not in (None, True, False):
            raise ValueError(f"progress must be None (auto), True or False, got {enabled!r}")
        self.total = int(total)
        self.stream = stream if stream is not None else sys.stderr
        self.forced = enabled is True
        self.active = enabled is True or (enabled is None and isatty(self.stream))
        self.label = label
        self.header = header  # a line said once above the progress line (the cost plan)
        self.min_seconds = min_seconds
        self.delay_seconds = delay_seconds
        self.clock = clock
        self.start = clock()
        self.done = 0
        self.drawing = False
        self._last_draw = -float("inf")
        self._width = 0
        if self.forced:
            self._begin()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, done: int) -> None:
        if not self.active:
            return
        self.done = int(done)
        now = self.clock()
        if not self.drawing:
            elapsed = now - self.start
            if elapsed < self.delay_seconds or self.done <= 0:
                return
            if elapsed / self.done * self.total < self.min_seconds:
                return
            self._begin()
        if now - self._last_draw >= INTERVAL_SECONDS or self.done >= self.total:
            self._draw(now)

    def close(self) -> None:
        if self.drawing:
            self._draw(self.clock())
            self.stream.write("\n")
            self.stream.flush()
            self.drawing = False
        self.active = False

    def line(self, now: float | None = None) -> str:
        """The text of the progress line at time ``now``."""
        now = self.clock() if now is None else now
        elapsed = max(now - self.start, 1e-9)
        done, total = self.done, self.total
        percent = 100.0 * done / total if total else 100.0
        rate = done / elapsed
        name = f"gradcheck[{self.label}]" if self.label else "gradcheck"
        text = f"{name}: {done}/{total} entries ({percent:.0f}%)  {_si(rate)} entries/s"
        if done >= total:
            return f"{text}  done in {_duration(elapsed)}"
        eta = (total - done) / rate if rate > 0 else float("inf")
        hint = "  (long: gradcheck.screen covers every entry in far fewer evaluations)" \
            if elapsed + eta > SCREEN_HINT_SECONDS else ""
        return f"{text}  ETA {_duration(eta)}{hint}"

    def _begin(self) -> None:
        if self.header:
            self.stream.write(self.header + "\n")
            self.header = None
        self.drawing = True
        self._draw(self.clock())

    def _draw(self, now: float) -> None:
        text = self.line(now)
        pad = max(0, self._width - len(text))
        self._width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._last_draw = now


def differences_with_progress(
    differences: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]],
    flat_indices: np.ndarray,
    steps: np.ndarray,
    bar: Progress | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``differences(flat_indices, steps)``, reporting to ``bar`` as entries finish."""
    if bar is None or not bar.active:
        return differences(flat_indices, steps)
    if takes(differences, "progress"):
        return differences(flat_indices, steps, progress=bar.update)
    return _chunked(differences, np.asarray(flat_indices), np.asarray(steps), bar)




def timed_chunks(count: int, seconds: float) -> Iterator[slice]:
    """``range(count)`` as consecutive slices for an engine that answers whole calls: 8
    entries first, then each chunk sized to take about ``seconds`` at the pace of the one
    before (the time until the caller asks for the next), growing at most 8x at a time."""
    start, size = 0, min(count, 8)
    while start < count:
        stop = min(count, start + size)
        began = time.perf_counter()
        yield slice(start, stop)
        per_entry = (time.perf_counter() - began) / (stop - start)
        wanted = int(seconds / per_entry) if per_entry > 0 else size * 8
        size = max(1, min(size * 8, wanted))
        start = stop


def _chunked(differences, flat_indices: np.ndarray, steps: np.ndarray, bar: Progress):
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for part in timed_chunks(flat_indices.size, CHUNK_SECONDS):
        parts.append(differences(flat_indices[part], steps[part]))
        bar.update(part.stop)
    if not parts:
        return differences(flat_indices, steps)
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(3))  # type: ignore[return-value]


def isatty(stream: Any) -> bool:
    """Is ``stream`` a terminal (False for anything that cannot say)?"""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _si(value: float) -> str:
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f}{unit}"
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def _duration(seconds: float) -> str:
    if seconds == float("inf"):
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def screen_hint(entries: int, seconds: float) -> str | None:
    """The note a long entry-wise pass gets: what ``gradcheck.screen`` would cost instead
    (its default top level, 2 draws x 16 blocks x 6 evaluations plus a step search, and
    about 6 evaluations per halving for each isolated bad entry), or None if not long.

    >>> screen_hint(10**6, 5.0) is None
    True
    >>> "gradcheck.screen" in screen_hint(10**6, 3600.0)
    True
    """
    if seconds <= SCREEN_HINT_SECONDS or entries < 4096:
        return None
    levels = max(1, int(np.ceil(np.log2(entries / 128))))
    return (f"the 2N = {2 * entries} evaluations took {_duration(seconds)}: gradcheck.screen(f, x, grad) "
            f"covers every entry in about 230 evaluations plus ~{6 * levels} per isolated bad entry, "
            "with a stated detection limit, and localizes what disagrees for an entry-wise look")
