"""Exact cosine search over the dense collection's vectors held in memory, patched in place on refresh.

Reading every vector back from Chroma costs seconds at 50,000 passages; a refresh of one note
should cost the next query milliseconds. So a refresh marks the changed notes' rows dead and
appends their new vectors to a small delta matrix, folded into the main one once it grows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache

import numpy as np
from threadpoolctl import ThreadpoolController

from .split_product import product

FOLD_AT = 1024  # delta rows (or a twentieth of the matrix, if more) before they are folded in
DECIMALS = 6  # scores are rounded to 1e-6, so ties are ties on every machine
# Rounding moves a score by at most half a unit of the last kept decimal (plus float32 error): a score
# this far below the last place's unrounded one cannot round up to it.
_ROUNDING_REACH = 2 * 10.0**-DECIMALS


@cache
def blas_controller() -> ThreadpoolController:
    """The process's BLAS thread-pool controller (finding the libraries takes a tenth of a second, once)."""
    return ThreadpoolController()


class ExactVectors:
    """Unit vectors by passage (with each passage's note path), searched by a matrix product."""

    def __init__(self, ids: Sequence[str], paths: Sequence[str], matrix: np.ndarray) -> None:
        self.ids = list(ids)
        self.paths = list(paths)
        self.matrix = np.asarray(matrix, dtype="float32")
        if self.matrix.ndim != 2 or self.matrix.shape[0] != len(self.ids):
            raise ValueError(
                f"{len(self.ids)} ids need as many rows of vectors, not an array of shape {self.matrix.shape}"
            )
        self.dead = np.zeros(len(self.ids), dtype=bool)
        self._extra_ids: list[str] = []
        self._extra_paths: list[str] = []
        self._extra_rows: list[np.ndarray] = []
        self._rows_of: dict[str, list[int]] | None = None  # note path -> its rows of the matrix (made on first use)

    def __len__(self) -> int:
        return int((~self.dead).sum()) + len(self._extra_ids)

    def replace_notes(
        self, paths: Iterable[str], ids: Sequence[str], note_paths: Sequence[str], vectors: np.ndarray
    ) -> None:
        """Drop every row of ``paths`` and add ``vectors`` (rows of ``ids`` from ``note_paths``)."""
        gone = set(paths)
        if gone:
            if self._rows_of is None:
                self._rows_of = {}
                for row, path in enumerate(self.paths):
                    self._rows_of.setdefault(path, []).append(row)
            self.dead[[row for path in gone for row in self._rows_of.get(path, ())]] = True
            kept = [i for i, path in enumerate(self._extra_paths) if path not in gone]
            self._extra_ids = [self._extra_ids[i] for i in kept]
            self._extra_paths = [self._extra_paths[i] for i in kept]
            self._extra_rows = [self._extra_rows[i] for i in kept]
        self._extra_ids.extend(ids)
        self._extra_paths.extend(note_paths)
        self._extra_rows.extend(np.asarray(vectors, dtype="float32").reshape(len(ids), self.matrix.shape[1]))
        if len(self._extra_ids) > max(FOLD_AT, len(self.ids) // 20):
            self._fold()

    def folded(self) -> ExactVectors:
        """Itself with the dead rows dropped and the delta folded in (what a snapshot saves)."""
        if self._extra_ids or self.dead.any():
            self._fold()
        return self

    def _fold(self) -> None:
        alive = ~self.dead
        self.ids = [pid for pid, keep in zip(self.ids, alive, strict=True) if keep] + self._extra_ids
        self.paths = [path for path, keep in zip(self.paths, alive, strict=True) if keep] + self._extra_paths
        extra = np.stack(self._extra_rows) if self._extra_rows else np.zeros((0, self.matrix.shape[1]), "float32")
        self.matrix = np.vstack([self.matrix[alive], extra])
        self.dead = np.zeros(len(self.ids), dtype=bool)
        self._extra_ids, self._extra_paths, self._extra_rows = [], [], []
        self._rows_of = None

    def search(self, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """The ``limit`` most similar live passages (scores rounded to 1e-6), unordered; a tie at the
        last place keeps every tied passage (the caller orders by score, then id, and cuts)."""
        query = np.asarray(vector, dtype="float32")
        ids = self.ids
        # One BLAS thread (waking BLAS's other threads between queries cost 5-6 ms on a busy two-core
        # machine); a large product is shared with a helper thread of ours instead (split_product).
        with blas_controller().limit(limits=1, user_api="blas"):
            scores = product(self.matrix, query) if len(ids) else np.zeros(0, "float32")
            extra = np.stack(self._extra_rows) @ query if self._extra_rows else None
        dead = int(np.count_nonzero(self.dead))
        if dead:
            scores[self.dead] = -np.inf
        if extra is not None:
            ids = ids + self._extra_ids
            scores = np.concatenate([scores, extra])
        live = scores.size - dead
        if live == 0 or limit <= 0:
            return []
        return [(ids[i], score) for i, score in top_rounded(scores, min(limit, live))]


def top_rounded(scores: np.ndarray, count: int) -> list[tuple[int, float]]:
    """The rows whose score rounded to 1e-6 is among the ``count`` highest rounded scores (every row
    tied at the last place included), with those rounded scores; ``count`` <= the finite scores.

    Only the rows near the top are rounded: rounding never reorders scores (it can only make them
    equal), so the last place's rounded score is the rounding of its unrounded one, and a row can
    round up to it only from within :data:`_ROUNDING_REACH` below.
    """
    last = scores.size - count
    unrounded = np.partition(scores, last)[last : last + 1]  # the last place's score (a value: no index needed)
    threshold = np.round(unrounded, DECIMALS)[0]
    near = np.flatnonzero(scores >= unrounded[0] - _ROUNDING_REACH)
    rounded = np.round(scores[near], DECIMALS)
    kept = rounded >= threshold
    return list(zip(near[kept].tolist(), rounded[kept].tolist(), strict=True))
