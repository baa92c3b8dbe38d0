"""The lexical lane's scoring form: term frequencies by passage, compiled from the Whoosh index.

Whoosh stays the durable lexical projection; scoring reads this in-memory form of it: per
field a SciPy CSC matrix of term frequencies (passages by terms), each passage's exact token
count, and the one-byte-encoded length Whoosh scores with. A query takes its terms' columns
(slices of three arrays, no Python loop over postings) and computes Whoosh's BM25F on them,
so ranked ids and scores equal Whoosh's own (a test pins them to 1e-6).

A refresh changes it in place: the passages of a changed note are marked dead and its new
passages appended to a small delta, compacted into the matrices once it grows. A snapshot
(``compiled.npz`` in the serving version's folder, with the change-log position it holds) makes
a new process's first query cheap; the changes after that position are replayed from the
record store. Statistics (idf, average lengths) count live passages only, as Whoosh's do.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from whoosh.util.numeric import _length_byte_cache

FIELDS = ("heading", "body")
SNAPSHOT_NAME = "compiled.npz"
SNAPSHOT_FORMAT = 1
COMPACT_AT = 2048  # delta passages (or a twentieth of the index, if more) before they are folded into the matrices
HOLD_BITS = 52  # query terms per holds mask: sums of distinct powers of two stay exact in a float64
WEIGHTS_KEPT = 2_000_000  # posting weights kept between questions (16 MB of float64) before the cache starts over
_BYTE_LENGTHS = np.asarray(_length_byte_cache, dtype=float)


@dataclass(frozen=True)
class AnalysedPassage:
    """One passage as the lexical index holds it: term counts and exact token count per field."""

    id: str
    path: str
    counts: dict[str, Counter[str]]


def length_bytes(exact: np.ndarray) -> np.ndarray:
    """Whoosh's one-byte logarithmic code of each field length (``length_to_byte``)."""
    return np.minimum(np.searchsorted(_BYTE_LENGTHS, exact, side="left"), 255)


def encoded_lengths(exact: np.ndarray) -> np.ndarray:
    """Field lengths as Whoosh stores and scores them (the length each one-byte code stands for)."""
    return _BYTE_LENGTHS[length_bytes(exact)]


class _Numbering(dict[str, int]):
    """Terms numbered in the order they are first asked for."""

    def __missing__(self, term: str) -> int:
        self[term] = number = len(self)
        return number


@dataclass
class _Delta:
    """Passages added since the last compaction: per field, each term's (docnums, frequencies)."""

    postings: dict[str, dict[str, tuple[list[int], list[float]]]] = field(
        default_factory=lambda: {name: {} for name in FIELDS}
    )
    size: int = 0

    def add(self, docnum: int, counts: dict[str, Counter[str]]) -> None:
        for name in FIELDS:
            for term, count in counts[name].items():
                docs, tfs = self.postings[name].setdefault(term, ([], []))
                docs.append(docnum)
                tfs.append(float(count))
        self.size += 1


class CompiledLexicon:
    """Term frequencies by passage for the heading and body fields, with ids, paths and live flags."""

    def __init__(
        self,
        ids: list[str],
        paths: list[str],
        terms: dict[str, int],
        matrices: dict[str, sparse.csc_matrix],
        exact: dict[str, np.ndarray],
        version: int | None = None,
        high_water: int = 0,
    ) -> None:
        self.ids, self.paths, self.terms = ids, paths, terms
        self.matrices, self.exact = matrices, exact
        self.version, self.high_water = version, high_water
        self.live = np.ones(len(ids), dtype=bool)
        self.lengths = {name: encoded_lengths(values) for name, values in exact.items()}
        self._delta = _Delta()
        self._stats: tuple[int, dict[str, float]] | None = None
        # The same statistics over the live passages a caller may see, by the passages hidden from it.
        self._scoped: dict[frozenset[str], tuple[np.ndarray, int, dict[str, float]]] = {}
        self._holding: dict[tuple[str, tuple[str, ...]], int] = {}  # (term, fields) -> live holders, until a change
        self._weights: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}  # see _weighted
        self._weights_kept = 0
        self._norms: dict[tuple[Any, ...], np.ndarray] = {}  # see bm25
        self._by_id: dict[str, int] = {}
        self._by_id_size = -1
        self._by_path: dict[str, list[int]] = {}
        for docnum, path in enumerate(paths):
            self._by_path.setdefault(path, []).append(docnum)

    # ------------------------------------------------------------ building

    @classmethod
    def from_passages(
        cls, passages: Iterable[AnalysedPassage], version: int | None = None, high_water: int = 0
    ) -> CompiledLexicon:
        ids: list[str] = []
        paths: list[str] = []
        terms = _Numbering()
        sizes: dict[str, list[int]] = {name: [] for name in FIELDS}  # distinct terms per passage
        columns: dict[str, list[int]] = {name: [] for name in FIELDS}
        counts: dict[str, list[int]] = {name: [] for name in FIELDS}
        for passage in passages:
            ids.append(passage.id)
            paths.append(passage.path)
            for name in FIELDS:
                held = passage.counts[name]
                sizes[name].append(len(held))
                columns[name].extend(map(terms.__getitem__, held))  # numbered in order of first appearance
                counts[name].extend(held.values())
        shape = (len(ids), len(terms))
        matrices, exact = {}, {}
        for name in FIELDS:
            rows = np.repeat(np.arange(len(ids)), sizes[name])
            data = np.asarray(counts[name], dtype=float)
            matrices[name] = _csc(rows, columns[name], data, shape)
            exact[name] = np.bincount(rows, weights=data, minlength=len(ids))
        return cls(ids, paths, dict(terms), matrices, exact, version, high_water)

    @classmethod
    def from_whoosh(cls, searcher: Any, version: int | None = None, high_water: int = 0) -> CompiledLexicon:
        """Read every posting of a Whoosh index (an index built before snapshots existed)."""
        from .lexical import read_postings

        reader = searcher.reader()
        size = int(reader.doc_count_all())
        ids = [""] * size
        live = np.zeros(size, dtype=bool)
        exact = {name: np.zeros(size) for name in FIELDS}
        for docnum in reader.all_doc_ids():
            stored = reader.stored_fields(docnum)
            live[docnum] = True
            ids[docnum] = stored["id"]
            for name in FIELDS:
                exact[name][docnum] = stored[f"{name}_len"]
        paths = [""] * size
        leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]
        terms: dict[str, int] = {}
        rows = {name: ([], [], []) for name in FIELDS}  # type: dict[str, tuple[list[Any], list[Any], list[Any]]]
        for leaf, offset in leaves:
            for name in ("path", *FIELDS):
                for raw in leaf.lexicon(name):
                    term = raw.decode() if isinstance(raw, bytes) else str(raw)
                    docnums, tfs = read_postings(leaf.postings(name, raw))
                    docnums = docnums + offset
                    if name == "path":
                        for docnum in docnums.tolist():
                            paths[docnum] = term
                        continue
                    row, col, data = rows[name]
                    row.append(docnums)
                    col.append(np.full(docnums.size, terms.setdefault(term, len(terms))))
                    data.append(tfs)
        shape = (size, len(terms))
        matrices = {name: _csc(*_joined(rows[name]), shape) for name in FIELDS}
        compiled = cls(ids, paths, terms, matrices, exact, version, high_water)
        compiled.live = live
        return compiled.compacted()

    # ------------------------------------------------------------ changing

    def replace_notes(self, paths: Iterable[str], passages: Sequence[AnalysedPassage], high_water: int) -> bool:
        """Drop every passage of ``paths`` and add ``passages`` (a refresh of those notes).

        Returns whether the delta was folded into fresh matrices (then worth a new snapshot).
        """
        for path in paths:
            for docnum in self._by_path.pop(path, []):
                self.live[docnum] = False
        in_step = self._by_id_size == len(self.ids)  # the id map is whole: extend it rather than rebuild it
        for passage in passages:
            docnum = len(self.ids)
            if in_step:
                self._by_id[passage.id] = docnum  # later rows win: the live one
            self.ids.append(passage.id)
            self.paths.append(passage.path)
            self._by_path.setdefault(passage.path, []).append(docnum)
            for term_counts in passage.counts.values():
                for term in term_counts:
                    self.terms.setdefault(term, len(self.terms))
            self._delta.add(docnum, passage.counts)
        for name in FIELDS:  # one copy per refresh, not one per passage
            added = np.asarray([float(sum(p.counts[name].values())) for p in passages])
            self.exact[name] = np.concatenate([self.exact[name], added])
            self.lengths[name] = np.concatenate([self.lengths[name], encoded_lengths(added)])
        self.live = np.concatenate([self.live, np.ones(len(passages), dtype=bool)])
        if in_step:
            self._by_id_size = len(self.ids)
        self.high_water = high_water
        self.forget_statistics()
        if self._delta.size <= max(COMPACT_AT, len(self.ids) // 20):
            return False
        self.__dict__.update(self.compacted().__dict__)
        return True

    def forget_statistics(self) -> None:
        """Drop everything computed from the live passages' statistics (they just changed)."""
        self._stats = None
        self._scoped = {}
        self._holding = {}
        self._weights, self._weights_kept = {}, 0
        self._norms = {}

    def compacted(self) -> CompiledLexicon:
        """The same live passages in fresh matrices: no delta, no dead rows."""
        keep = np.flatnonzero(self.live)
        renumber = np.full(len(self.ids), -1)
        renumber[keep] = np.arange(keep.size)
        matrices = {}
        for name in FIELDS:
            base = self.matrices[name].tocoo()
            rows, cols, data = [base.row], [base.col], [base.data]
            for term, (docs, tfs) in self._delta.postings[name].items():
                rows.append(np.asarray(docs))
                cols.append(np.full(len(docs), self.terms[term]))
                data.append(np.asarray(tfs))
            row, col, values = (np.concatenate(part) for part in (rows, cols, data))
            alive = renumber[row] >= 0
            matrices[name] = _csc(renumber[row[alive]], col[alive], values[alive], (keep.size, len(self.terms)))
        ids = [self.ids[d] for d in keep.tolist()]
        paths = [self.paths[d] for d in keep.tolist()]
        exact = {name: values[keep] for name, values in self.exact.items()}
        return CompiledLexicon(ids, paths, dict(self.terms), matrices, exact, self.version, self.high_water)

    # ------------------------------------------------------------ scoring

    @property
    def size(self) -> int:
        return len(self.ids)

    def live_count(self) -> int:
        return self._statistics()[0]

    def _statistics(self) -> tuple[int, dict[str, float]]:
        """Live passages and each field's average exact length over them (cached until the next change)."""
        if self._stats is None:
            self._stats = self._over(self.live)
        return self._stats

    def _over(self, counted: np.ndarray) -> tuple[int, dict[str, float]]:
        """How many passages ``counted`` holds, and each field's average exact length over them."""
        count = int(counted.sum())
        return count, {name: float(self.exact[name][counted].sum() / max(count, 1)) or 1.0 for name in FIELDS}

    def postings(self, name: str, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Document numbers and term frequencies of ``term`` in field ``name`` (dead passages included)."""
        column = self.terms.get(term)
        if column is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        matrix = self.matrices[name]
        parts_docs, parts_tfs = [], []
        if column < matrix.shape[1]:
            start, end = matrix.indptr[column], matrix.indptr[column + 1]
            parts_docs.append(matrix.indices[start:end])
            parts_tfs.append(matrix.data[start:end])
        extra = self._delta.postings[name].get(term)
        if extra is not None:
            parts_docs.append(np.asarray(extra[0], dtype=np.int64))
            parts_tfs.append(np.asarray(extra[1]))
        if not parts_docs:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return _joined_arrays(parts_docs), _joined_arrays(parts_tfs)

    def _counted(self, hidden: frozenset[str]) -> tuple[np.ndarray, int, dict[str, float]]:
        """The live passages not ``hidden``, how many, and each field's average exact length over them:
        a caller's statistics, so that notes it may not see never move its scores (kept per hidden set
        until the next change; a scope view's hidden set is the same object question after question)."""
        if not hidden:
            count, averages = self._statistics()
            return self.live, count, averages
        if hidden not in self._scoped:
            if len(self._scoped) > 16:
                self._scoped.clear()
            counted = self.live.copy()
            counted[[d for pid in hidden for d in self._docnums_of(pid)]] = False
            self._scoped[hidden] = (counted, *self._over(counted))
        return self._scoped[hidden]

    def bm25(
        self,
        name: str,
        docnums: np.ndarray,
        tf: np.ndarray,
        k1: float,
        b: float,
        hidden: frozenset[str] = frozenset(),
        sizes: Sequence[int] | None = None,
    ) -> np.ndarray:
        """Whoosh's ``scoring.bm25`` on these postings; idf and average length over the live passages that
        are not ``hidden`` (all of them for a caller who may see everything).

        ``sizes``: the postings are several terms' one after another, this many each (each its own idf)."""
        counted, count, averages = self._counted(hidden)
        sizes = [docnums.size] if sizes is None else sizes
        if count == self.size:  # nothing dead or hidden: every posting counts
            frequencies = list(sizes)
        else:
            running = np.concatenate([[0], np.cumsum(counted[docnums])])
            ends = np.cumsum(sizes)
            frequencies = (running[ends] - running[ends - sizes]).tolist()
        live_count = max(count, 1)
        idf = [math.log(live_count / (frequency + 1)) + 1 for frequency in frequencies]  # as Whoosh: math.log
        key = (name, k1, b, hidden)
        norm = self._norms.get(key)
        if norm is None:  # each passage's length term, over the whole index once per change
            norm = self._norms[key] = k1 * ((1 - b) + b * self.lengths[name] / averages[name])
        return np.repeat(idf, sizes) * ((tf * (k1 + 1)) / (tf + norm[docnums]))

    def scores(
        self,
        terms: Sequence[str],
        k1: float,
        b: float,
        boosts: dict[str, float],
        excluded: Iterable[str] = (),
        hidden: frozenset[str] = frozenset(),
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """BM25F of every passage for ``terms`` (dead and ``excluded`` passages score 0), and which terms
        each passage holds: bit ``i % HOLD_BITS`` of mask ``i // HOLD_BITS`` for ``terms[i]``.

        ``hidden`` passages are scored (a caller's lane still learns what it may not show) but left out
        of the statistics, so the visible passages score as in an index without them.

        One ``bincount`` over every posting adds each passage's weights in the order a loop over
        fields then terms would (so the sums are the same floats), without a scatter per term."""
        weighted = {name: self._weighted(name, terms, k1, b, boosts[name], hidden) for name in FIELDS}
        pairs = [pair for name in FIELDS for pair in weighted[name]]
        scores = _summed([docnums for docnums, _ in pairs], [weights for _, weights in pairs], self.size)
        scores[~self.live] = 0.0
        scores[[d for pid in excluded for d in self._docnums_of(pid)]] = 0.0
        holds = [np.zeros(self.size, dtype=np.uint64) for _ in range(0, len(terms), HOLD_BITS)]
        for postings in weighted.values():  # a term's postings in one field are distinct: a sum is an OR
            for block, first in enumerate(range(0, len(terms), HOLD_BITS)):
                docs = [docnums for docnums, _ in postings[first : first + HOLD_BITS]]
                bits = np.repeat(2.0 ** np.arange(len(docs)), [d.size for d in docs])
                holds[block] |= _summed(docs, [bits], self.size).astype(np.uint64)
        return scores, holds

    def _weighted(
        self, name: str, terms: Sequence[str], k1: float, b: float, boost: float, hidden: frozenset[str]
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each term's postings in field ``name`` and their boosted BM25 weights. Kept until the next
        change (the same words come back question after question; a frozenset keeps its hash); the
        terms not kept are weighted together, one pass of array arithmetic for all of them."""
        keys = [(name, term, k1, b, boost, hidden) for term in terms]
        answer = {key: self._weights[key] for key in keys if key in self._weights}
        missing = [key for key in dict.fromkeys(keys) if key not in answer]
        if missing:
            found = [self.postings(name, key[1]) for key in missing]
            sizes = [docnums.size for docnums, _ in found]
            docnums, tf = (_joined_arrays([part[side] for part in found]) for side in (0, 1))
            weights = boost * self.bm25(name, docnums, tf, k1, b, hidden, sizes)
            pieces = np.split(weights, np.cumsum(sizes)[:-1])
            fresh = {key: (held, piece) for key, (held, _), piece in zip(missing, found, pieces, strict=True)}
            if self._weights_kept + weights.size > WEIGHTS_KEPT:
                self._weights, self._weights_kept = {}, 0
            self._weights.update(fresh)
            self._weights_kept += weights.size
            answer.update(fresh)
        return [answer[key] for key in keys]

    def _docnums_of(self, passage_id: str) -> list[int]:
        if self._by_id_size != len(self.ids):
            self._by_id = {pid: d for d, pid in enumerate(self.ids)}  # later rows win: the live one
            self._by_id_size = len(self.ids)
        docnum = self._by_id.get(passage_id)
        return [] if docnum is None else [docnum]

    def holding(self, term: str, fields: Sequence[str] = FIELDS) -> int:
        """How many live passages hold ``term`` in one of ``fields`` (kept until the next change: the
        same words come back question after question)."""
        key = (term, tuple(fields))
        if key not in self._holding:
            self._holding[key] = int((self._holders(term, fields) & self.live).sum())
        return self._holding[key]

    def _holders(self, term: str, fields: Sequence[str] = FIELDS) -> np.ndarray:
        """A mask of the passages (dead ones included) holding ``term`` in one of ``fields``."""
        mask = np.zeros(self.size, dtype=bool)
        for name in fields:
            mask[self.postings(name, term)[0]] = True
        return mask

    def held(self, terms: Sequence[str], passage_ids: Sequence[str]) -> list[set[str]] | None:
        """Which of ``terms`` each passage holds in its heading or body (``None``: one is not live here)."""
        rows = [self._docnums_of(pid) for pid in passage_ids]
        if not all(row and self.live[row[0]] for row in rows):
            return None
        docnums = np.asarray([row[0] for row in rows], dtype=np.int64)
        found: list[set[str]] = [set() for _ in passage_ids]
        for term in dict.fromkeys(terms):
            for index in np.flatnonzero(self._holders(term)[docnums]).tolist():
                found[index].add(term)
        return found

    def top(self, scores: np.ndarray, limit: int) -> list[int]:
        """The ``limit`` best passages with a positive score; equal scores (to 1e-9) by passage id."""
        matched = np.flatnonzero(scores > 0)
        if matched.size == 0 or limit <= 0:
            return []
        rounded = np.round(scores[matched], 9)
        if matched.size > limit:
            cutoff = np.partition(rounded, matched.size - limit)[matched.size - limit]
            chosen = rounded >= cutoff  # everything tied with the last place competes on id
            matched, rounded = matched[chosen], rounded[chosen]
        docnums = matched.tolist()
        ranked = sorted(zip((-rounded).tolist(), [self.ids[d] for d in docnums], docnums, strict=True))
        return [docnum for _, _, docnum in ranked[:limit]]

    # ------------------------------------------------------------ snapshots

    def save(self, folder: Path) -> None:
        """Write a compacted snapshot into ``folder`` (atomically: a reader sees the old file or the new)."""
        compact = self.compacted() if self._delta.size or not self.live.all() else self
        arrays: dict[str, Any] = {
            "meta": np.frombuffer(
                json.dumps(
                    {
                        "format": SNAPSHOT_FORMAT,
                        "version": compact.version,
                        "high_water": compact.high_water,
                        "ids": compact.ids,
                        "paths": compact.paths,
                        "terms": sorted(compact.terms, key=compact.terms.__getitem__),
                    }
                ).encode(),
                dtype=np.uint8,
            )
        }
        for name in FIELDS:
            matrix = compact.matrices[name]
            arrays.update(
                {
                    f"{name}_data": matrix.data,
                    f"{name}_indices": matrix.indices,
                    f"{name}_indptr": matrix.indptr,
                    f"{name}_exact": compact.exact[name],
                }
            )
        partial = folder / f".{SNAPSHOT_NAME}.partial"
        with open(partial, "wb") as handle:
            np.savez(handle, **arrays)
        os.replace(partial, folder / SNAPSHOT_NAME)

    @classmethod
    def load(cls, folder: Path) -> CompiledLexicon | None:
        """The snapshot in ``folder``, or ``None`` when there is none or it cannot be read."""
        path = folder / SNAPSHOT_NAME
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as stored:
                meta = json.loads(stored["meta"].tobytes().decode())
                if meta.get("format") != SNAPSHOT_FORMAT:
                    return None
                terms = {term: column for column, term in enumerate(meta["terms"])}
                shape = (len(meta["ids"]), len(terms))
                matrices = {
                    name: sparse.csc_matrix(
                        (stored[f"{name}_data"], stored[f"{name}_indices"], stored[f"{name}_indptr"]), shape=shape
                    )
                    for name in FIELDS
                }
                exact = {name: np.asarray(stored[f"{name}_exact"], dtype=float) for name in FIELDS}
        except (OSError, ValueError, KeyError, TypeError) as exc:  # damaged: rebuilt from the postings
            del exc
            return None
        return cls(meta["ids"], meta["paths"], terms, matrices, exact, meta["version"], meta["high_water"])


def _summed(docnums: list[np.ndarray], values: list[np.ndarray], size: int) -> np.ndarray:
    """Per passage, the sum of ``values`` at ``docnums`` (added in the order given)."""
    if not docnums:
        return np.zeros(size)
    return np.bincount(_joined_arrays(docnums), _joined_arrays(values), minlength=size)


def _joined_arrays(parts: list[np.ndarray]) -> np.ndarray:
    """``parts`` end to end (the one part itself when there is one: no copy)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _joined(parts: tuple[list[Any], list[Any], list[Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    row, col, data = (np.concatenate(part) if part else np.zeros(0) for part in parts)
    return row, col, data


def _csc(rows: Any, cols: Any, data: Any, shape: tuple[int, int]) -> sparse.csc_matrix:
    matrix = sparse.csc_matrix(
        (np.asarray(data, dtype=float), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=shape,
    )
    matrix.sort_indices()
    return matrix
