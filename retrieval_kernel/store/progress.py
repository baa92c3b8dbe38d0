"""Progress for long indexing: a tqdm bar (a widget in a notebook, a line on stderr in a terminal).

Only jobs of at least ``min_items`` get a bar: a refresh of a few notes finishes before a bar
would help, and tests and notebooks that index small folders stay quiet. tqdm shows the rate
(notes or passages per second) and the time left.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

MIN_ITEMS = 500


class Progress:
    """``track(what, total, unit)`` yields a ``step(n)`` to call as work is done."""

    def __init__(self, enabled: bool = False, min_items: int = MIN_ITEMS) -> None:
        self.enabled = enabled
        self.min_items = min_items

    @contextmanager
    def track(self, what: str, total: int, unit: str) -> Iterator[Callable[[int], object]]:
        if not self.enabled or total < self.min_items:
            yield _ignore
            return
        from tqdm.auto import tqdm

        with tqdm(total=total, desc=what, unit=f" {unit}", dynamic_ncols=True) as bar:
            yield bar.update


def _ignore(count: int) -> None:
    return None


SILENT = Progress()
