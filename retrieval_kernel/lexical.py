"""The lexical projection: a Whoosh BM25F index derived from the record store.

Two fields are searched: ``heading`` (note title plus heading path) and ``body``.
A query is analysed with the same analyzer as the passages (lower-case, stop
words removed, Porter2 stems, so "deploy", "deployment" and "deploying" meet) and
becomes an OR of its terms over both fields; heading matches get ``HEADING_BOOST``.
Query text is never handed to Whoosh's query parser, so punctuation such as
``?``, ``:`` or quotes cannot be misread as syntax.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from whoosh import index as whoosh_index
from whoosh.analysis import Analyzer, StemmingAnalyzer
from whoosh.fields import ID, TEXT, Schema
from whoosh.lang.porter2 import stem as porter2_stem
from whoosh.query import Or, Term
from whoosh.scoring import BM25F

from .notes import Passage
from .records import ProjectionState, RecordStore, utc_now

NAME = "lexical"
# Chosen by grid search on SciFact *train* queries only (scripts/tune_lexical.py, log beside it):
# k1 1.2, b 0.5, heading boost 0.5 gave train nDCG@10 0.694 (Whoosh's defaults, b 0.75 with
# boost 2.0, gave 0.620). Boost 0 scored 0.698, but the heading field is what carries a
# section's parent titles, so it keeps a small weight.
K1 = 1.2
B = 0.5
HEADING_BOOST = 0.5
WORD_PATTERN = r"\w+(\.?\w+)*"  # Whoosh's default also keeps "*", so "**bold**" would hide "bold"


def make_analyzer() -> Analyzer:
    """Lower-case word tokens, English stop words dropped, Porter2 stems."""
    return StemmingAnalyzer(expression=WORD_PATTERN, stemfn=porter2_stem)


def analyze(text: str, analyzer: Analyzer | None = None) -> list[str]:
    """The distinct index terms of ``text``, in order of first appearance."""
    return list(term_words(text, analyzer))


def term_words(text: str, analyzer: Analyzer | None = None) -> dict[str, str]:
    """Each distinct index term of ``text`` mapped to the first word it came from."""
    analyzer = analyzer or make_analyzer()
    words: dict[str, str] = {}
    for token in analyzer(text, chars=True):
        words.setdefault(token.text, text[token.startchar : token.endchar].lower())
    return words


def make_schema() -> Schema:
    analyzer = make_analyzer()
    return Schema(
        id=ID(stored=True, unique=True),
        path=ID(),
        heading=TEXT(analyzer=analyzer),
        body=TEXT(analyzer=analyzer),
    )


@dataclass(frozen=True)
class LexicalHit:
    """One passage matched by the lexical lane."""

    passage_id: str
    score: float
    matched_terms: tuple[str, ...]


class LexicalProjection:
    """The Whoosh index under ``store_dir/lexical``, kept in step with the change log."""

    def __init__(self, store_dir: Path, k1: float = K1, b: float = B, heading_boost: float = HEADING_BOOST) -> None:
        self.folder = store_dir / NAME
        self.k1, self.b, self.heading_boost = k1, b, heading_boost
        self._index: Any = None
        self._searcher: Any = None
        self._view: _ScoringView | None = None
        self._analyzer = make_analyzer()

    # ------------------------------------------------------------ building

    def sync(self, records: RecordStore) -> ProjectionState:
        """Apply every change after this projection's high-water mark."""
        state = records.projection(NAME)
        if state is None or not whoosh_index.exists_in(self.folder):
            return self.rebuild(records, version=(state.version + 1) if state else 1)
        changes = records.changes_since(state.high_water)
        if not changes:
            return state
        changed_paths = sorted({path for _, path, _ in changes})
        writer = self._open().writer()
        for path in changed_paths:
            writer.delete_by_term("path", path)
            for passage in records.passages_of(path):
                writer.add_document(**_fields(passage))
        writer.commit()
        return self._publish(records, ProjectionState(NAME, state.version, changes[-1][0], utc_now()))

    def rebuild(self, records: RecordStore, version: int) -> ProjectionState:
        """Build the whole index from the record store."""
        self.close()
        if self.folder.exists():
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True)
        high_water = records.high_water()
        writer = whoosh_index.create_in(self.folder, make_schema()).writer()
        for stored in records.passages().values():
            writer.add_document(**_fields(stored.passage))
        writer.commit()
        return self._publish(records, ProjectionState(NAME, version, high_water, utc_now()))

    def _publish(self, records: RecordStore, state: ProjectionState) -> ProjectionState:
        records.set_projection(state)
        if self._searcher is not None:
            self._searcher = self._searcher.refresh()
        return state

    # ------------------------------------------------------------ searching

    def search(self, text: str, limit: int) -> list[LexicalHit]:
        """Top ``limit`` passages for ``text`` by Whoosh's BM25F; ties broken by passage id.

        Scores are Whoosh's own BM25F formula, computed with numpy over the index's
        postings (Whoosh's collector walks them one by one in Python, ~20x slower
        here); :meth:`search_with_whoosh` is that reference and a test pins them equal.
        """
        words = term_words(text, self._analyzer)
        if not words or not whoosh_index.exists_in(self.folder):
            return []
        view = self._get_view()
        scores = np.zeros(view.size)
        found: dict[str, np.ndarray] = {}
        for field, boost in (("heading", self.heading_boost), ("body", 1.0)):
            for term in words:
                docnums, weights = view.postings(field, term)
                if docnums.size:
                    scores[docnums] += boost * view.bm25(field, term, docnums, weights, self.k1, self.b)
                    found[term] = np.union1d(found.get(term, docnums), docnums)
        scores[~view.live] = 0.0
        matched = np.flatnonzero(scores > 0)
        rounded = np.round(scores[matched], 9)
        best = matched[np.lexsort((view.id_rank[matched], -rounded))][:limit]
        return [
            LexicalHit(
                view.ids[d], float(scores[d]), tuple(words[t] for t in words if t in found and _has(found[t], d))
            )
            for d in best
        ]

    def search_with_whoosh(self, text: str, limit: int) -> list[LexicalHit]:
        """The same ranking through Whoosh's own query and collector (the slow reference)."""
        words = term_words(text, self._analyzer)
        if not words or not whoosh_index.exists_in(self.folder):
            return []
        heading = [Term("heading", t, boost=self.heading_boost) for t in words]
        query = Or(heading + [Term("body", t) for t in words])
        results = self._get_searcher().search(query, limit=None, terms=True)
        hits = [LexicalHit(hit["id"], float(hit.score), _matched_words(hit, words)) for hit in results]
        return sorted(hits, key=_hit_order)[:limit]

    def _get_view(self) -> _ScoringView:
        searcher = self._get_searcher()
        if self._view is None or self._view.searcher is not searcher:
            self._view = _ScoringView(searcher)
        return self._view

    def document_count(self) -> int:
        return int(self._get_searcher().doc_count()) if whoosh_index.exists_in(self.folder) else 0

    def passages_with(self, term: str) -> int:
        """How many indexed passages hold ``term`` (an analyzed token) in their body."""
        if not whoosh_index.exists_in(self.folder):
            return 0
        return int(self._get_searcher().doc_frequency("body", term))

    def _open(self) -> Any:
        if self._index is None:
            self._index = whoosh_index.open_dir(self.folder)
        return self._index

    def _get_searcher(self) -> Any:
        if self._searcher is None:
            self._searcher = self._open().searcher(weighting=BM25F(B=self.b, K1=self.k1))
        elif not self._searcher.up_to_date():
            self._searcher = self._searcher.refresh()
        return self._searcher

    @property
    def score_basis(self) -> str:
        return f"BM25F (Whoosh; k1={self.k1}, b={self.b}; heading boost {self.heading_boost}; Porter2 stems)"

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
        self._searcher = None
        self._view = None
        self._index = None


class _ScoringView:
    """Per-searcher arrays for vectorised BM25F: ids, field lengths, live documents."""

    def __init__(self, searcher: Any) -> None:
        self.searcher = searcher
        reader = searcher.reader()
        self.size = int(reader.doc_count_all())
        self.ids = [""] * self.size
        self.live = np.zeros(self.size, dtype=bool)
        for docnum in reader.all_doc_ids():
            self.live[docnum] = True
            self.ids[docnum] = reader.stored_fields(docnum)["id"]
        self.id_rank = np.argsort(np.argsort(np.array(self.ids, dtype=object)))
        self.lengths = {
            field: np.array([reader.doc_field_length(d, field, 0) for d in range(self.size)], dtype=float)
            for field in ("heading", "body")
        }
        self.average = {field: float(searcher.avg_field_length(field) or 1.0) for field in ("heading", "body")}
        self._leaves = [(leaf.reader(), offset) for leaf, offset in searcher.leaf_searchers()]

    def postings(self, field: str, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Global document numbers and term frequencies of ``term`` in ``field``."""
        docnums: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for reader, offset in self._leaves:
            if (field, term) in reader:
                ids, tfs = _read_postings(reader.postings(field, term))
                docnums.append(ids + offset)
                weights.append(tfs)
        if not docnums:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(docnums), np.concatenate(weights)

    def bm25(self, field: str, term: str, docnums: np.ndarray, tf: np.ndarray, k1: float, b: float) -> np.ndarray:
        """Whoosh's ``scoring.bm25`` for these postings, vectorised."""
        idf = self.searcher.idf(field, term)
        length = self.lengths[field][docnums]
        return idf * ((tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * length / self.average[field])))


def _read_postings(matcher: Any) -> tuple[np.ndarray, np.ndarray]:
    """Document numbers and weights of a leaf matcher, a block at a time when the codec allows.

    Whoosh's public ``items_as`` yields one posting per Python call; its whoosh3 leaf
    matcher keeps each block's ids and weights as arrays, which we take whole.
    """
    if all(hasattr(matcher, name) for name in ("_read_ids", "_read_weights", "_next_block", "_ids", "_weights")):
        ids: list[Any] = []
        tfs: list[Any] = []
        while matcher.is_active():
            if matcher._ids is None:
                matcher._read_ids()
            if matcher._weights is None:
                matcher._read_weights()
            ids.extend(matcher._ids[matcher._i :])
            tfs.extend(matcher._weights[matcher._i :])
            matcher._next_block()
        return np.asarray(ids, dtype=np.int64), np.asarray(tfs, dtype=float)
    pairs = list(matcher.items_as("weight"))
    return np.asarray([d for d, _ in pairs], dtype=np.int64), np.asarray([w for _, w in pairs], dtype=float)


def _has(sorted_docnums: np.ndarray, docnum: int) -> bool:
    index = int(np.searchsorted(sorted_docnums, docnum))
    return index < sorted_docnums.size and int(sorted_docnums[index]) == docnum


def _hit_order(hit: LexicalHit) -> tuple[float, str]:
    return (-round(hit.score, 9), hit.passage_id)


def _matched_words(hit: Any, words: dict[str, str]) -> tuple[str, ...]:
    """The query words (as typed, lower-cased) whose terms this hit contains, in query order."""
    stems = {term.decode() if isinstance(term, bytes) else str(term) for _, term in hit.matched_terms()}
    return tuple(word for stem, word in words.items() if stem in stems)


def _fields(passage: Passage) -> dict[str, str]:
    return {"id": passage.id, "path": passage.path, "heading": " / ".join(passage.heading_path), "body": passage.text}
