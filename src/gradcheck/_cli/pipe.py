"""A closed pipe on stdout is not an error (``gradcheck check ... --html r.html | head``).

When the reader goes away, the rest of the output is dropped and the command goes on: the
files it was asked for are still written and its exit code is still the verdict's, as
``git log | head`` ends quietly. Without this, Python raises ``BrokenPipeError`` at the next
write (exit 2 through the usage-error path, or a message at interpreter exit).
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO


class _PipeGuard(io.TextIOBase):
    """stdout that swallows a broken pipe: the first ``BrokenPipeError`` points the real
    file descriptor at ``/dev/null`` (so nothing fails at exit either) and drops the rest."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.broken = False

    def _drop(self) -> None:
        self.broken = True
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):  # a captured stream (pytest): nothing to redirect
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:  # type: ignore[override]
        if not self.broken:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return not self.broken and self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def quiet_broken_pipe() -> Iterator[_PipeGuard]:
    """Run a command with a stdout that survives its reader closing the pipe."""
    original = sys.stdout
    guard = _PipeGuard(original)
    sys.stdout = guard  # type: ignore[assignment]
    try:
        yield guard
    finally:
        sys.stdout = original
        if guard.broken:
            with contextlib.suppress(BrokenPipeError, OSError, ValueError):
                original.flush()  # to /dev/null now: no "Exception ignored" at exit
