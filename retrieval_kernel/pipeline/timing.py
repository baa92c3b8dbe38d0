"""Where a query's time goes: wall-clock milliseconds by stage (for the benchmark and for anyone profiling)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Stages:
    """Consecutive or nested timed stages; ``stop()`` returns milliseconds by stage name."""

    def __init__(self) -> None:
        self._ms: dict[str, float] = {}
        self._open: tuple[str, float] | None = None

    def start(self, name: str) -> None:
        """End the running stage (if any) and start ``name``."""
        self._close()
        self._open = (name, time.perf_counter())

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        """Time a block as ``name`` (ends the running stage first)."""
        self.start(name)
        try:
            yield
        finally:
            self._close()

    def stop(self) -> dict[str, float]:
        self._close()
        return dict(self._ms)

    def _close(self) -> None:
        if self._open is not None:
            name, started = self._open
            self._ms[name] = self._ms.get(name, 0.0) + 1000 * (time.perf_counter() - started)
            self._open = None
