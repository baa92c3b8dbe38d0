"""The lexical projection: a Whoosh BM25F index derived from the record store.

Two fields are searched: ``heading`` (note title plus heading path) and ``body``.
A query is analysed with the same analyzer as the passages (lower-case, stop
words removed, Porter2 stems, so "deploy", "deployment" and "deploying" meet) and
becomes an OR of its terms over both fields; heading matches get ``HEADING_BOOST``.
Query text is never handed to Whoosh's query parser, so punctuation such as
``?``, ``:`` or quotes cannot be misread as syntax.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from whoosh import index as whoosh_index
from whoosh.analysis import Analyzer, StemmingAnalyzer
from whoosh.fields import ID, STORED, TEXT, Schema
from whoosh.lang.porter2 import stem as porter2_stem
from whoosh.query import Or, Term
from whoosh.scoring import BM25F

from ..corpus.notes import Passage
from ..errors import LaneUnavailableError, LexicalUnreadableError
from ..store.records import ProjectionState, RecordStore, StoredPassage, check_deadline, utc_now

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
        heading_len=STORED(),  # exact token counts: field statistics over live documents only
        body_len=STORED(),
    )


@dataclass(frozen=True)
class LexicalHit:
    """One passage matched by the lexical lane."""

    passage_id: str
    score: float
    matched_terms: tuple[str, ...]


class LexicalProjection:
    """The Whoosh index under ``store_dir/lexical/v<version>``, kept in step with the change log.

    The record store's ``projections`` row is the read pointer: it names the version
    that serves. A rebuild writes the next version beside it, checks it (document
    count, a probe search, high-water mark), then moves the pointer and only then
    removes the old version. ``records`` (when given) lets searches follow the
    pointer when another process publishes a new version.
    """

    def __init__(
        self,
        store_dir: Path,
        k1: float = K1,
        b: float = B,
        heading_boost: float = HEADING_BOOST,
        records: RecordStore | None = None,
    ) -> None:
        self.root = store_dir / NAME
        self.k1, self.b, self.heading_boost = k1, b, heading_boost
        self.records = records
        self.version: int | None = None  # the version this object has open (or last built)
        self._index: Any = None
        self._searcher: Any = None
        self._view: _ScoringView | None = None
        self._analyzer = make_analyzer()

    @property
    def folder(self) -> Path:
        """The folder of the version that serves (as far as this object knows)."""
        return self.version_folder(self._serving_version() or 0)

    def version_folder(self, version: int) -> Path:
        return self.root / f"v{version}"

    def _serving_version(self) -> int | None:
        if self.records is not None:
            state = self.records.projection(NAME)
            if state is not None and state.version != self.version:
                self.close()
                self.version = state.version
        return self.version

    # ------------------------------------------------------------ building

    def sync(self, records: RecordStore, deadline: float | None = None) -> ProjectionState:
        """Apply every change after this projection's high-water mark (rebuild a missing or unreadable one)."""
        self.rebuilt_because = None
        state = records.projection(NAME)
        if state is None:
            return self.rebuild(records, version=1, deadline=deadline)
        if state.version != self.version:
            self.close()
            self.version = state.version
        problem = self.problem()
        if problem is None and state.high_water > records.high_water():
            problem = f"its high-water mark {state.high_water} is past the change log's {records.high_water()}"
        if problem is not None:
            self.rebuilt_because = problem
            return self.rebuild(records, version=state.version + 1, deadline=deadline)
        self._drop_other_versions(keep=self.folder)  # e.g. half a build left by a killed refresh
        changes = records.changes_since(state.high_water)
        if not changes:
            return state
        changed_paths = sorted({path for _, path, _ in changes})
        writer = self._open().writer()
        try:
            for path in changed_paths:
                check_deadline(deadline, f"updating the lexical index for {path}")
                writer.delete_by_term("path", path)
                for passage in records.passages_of(path):
                    writer.add_document(**_fields(passage, self._analyzer))
        except BaseException:
            writer.cancel()
            raise
        writer.commit()  # Whoosh swaps in the new table of contents at the end: a kill before it leaves the old
        return self._publish(records, ProjectionState(NAME, state.version, changes[-1][0], utc_now()))

    def rebuild(self, records: RecordStore, version: int, deadline: float | None = None) -> ProjectionState:
        """Build ``version`` beside the serving one from the record store, check it, then switch to it."""
        self.close()
        folder = self.version_folder(version)
        if folder.exists():
            shutil.rmtree(folder)  # an unfinished build of this version (a killed refresh)
        folder.mkdir(parents=True)
        high_water = records.high_water()
        passages = records.passages()
        writer = whoosh_index.create_in(folder, make_schema()).writer()
        try:
            for stored in passages.values():
                check_deadline(deadline, "rebuilding the lexical index")
                writer.add_document(**_fields(stored.passage, self._analyzer))
        except BaseException:
            writer.cancel()
            raise
        writer.commit()
        _check_built(folder, passages)
        self.version = version
        state = self._publish(records, ProjectionState(NAME, version, high_water, utc_now()))
        self._drop_other_versions(keep=folder)
        return state

    rebuilt_because: str | None = None  # why the last sync rebuilt (None: it did not)

    def problem(self) -> str | None:
        """Why the serving version cannot be read (``None`` when it can): missing or damaged files."""
        folder = self.folder
        try:
            if not whoosh_index.exists_in(folder):
                return f"the lexical index {folder} is missing"
            searcher = self._get_searcher()
            if "body_len" not in searcher.schema:
                return f"the lexical index {folder} was built by an older version"
            _ScoringView(searcher)  # reads every segment's stored fields and lengths
        except Exception as exc:  # any failure to read it: damaged files
            self.close()
            return f"the lexical index {folder} cannot be read ({type(exc).__name__}: {exc})"
        return None

    def _publish(self, records: RecordStore, state: ProjectionState) -> ProjectionState:
        records.set_projection(state)  # the read pointer moves here, in one transaction
        self.close()  # reopened on the next search (Whoosh's refresh() can keep stale deletions)
        return state

    def _drop_other_versions(self, keep: Path) -> None:
        """Remove every other version (and files of the old unversioned layout); never the serving one."""
        for entry in self.root.iterdir():
            if entry != keep:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()

    # ------------------------------------------------------------ searching

    def search(self, text: str, limit: int) -> list[LexicalHit]:
        """Top ``limit`` passages for ``text`` by Whoosh's BM25F; ties broken by passage id.

        Scores are Whoosh's own BM25F formula, computed with numpy over the index's
        postings (Whoosh's collector walks them one by one in Python, ~20x slower
        here); :meth:`search_with_whoosh` is that reference and a test pins them equal.
        Corpus statistics count live documents only, so an index updated in place
        scores exactly like one rebuilt from scratch. ``LexicalUnreadableError`` when
        the serving index is missing or damaged (a projection never built finds nothing).
        """
        words = term_words(text, self._analyzer)
        if not words:
            return []
        for attempt in (1, 2):
            version = self._serving_version()
            if version is None:
                return []
            try:
                if not whoosh_index.exists_in(self.folder):
                    raise FileNotFoundError("no index in the folder")
                return self._scored(words, limit)
            except Exception as exc:  # damaged files, or a version another process just replaced
                self.close()
                if attempt == 2 or self._serving_version() == version:
                    raise LexicalUnreadableError(
                        f"the lexical index {self.folder} cannot be read ({type(exc).__name__}: {exc}); "
                        "a refresh rebuilds it from the record store"
                    ) from exc
        return []

    def _scored(self, words: dict[str, str], limit: int) -> list[LexicalHit]:
        view = self._get_view()
        scores = np.zeros(view.size)
        found: dict[str, np.ndarray] = {}
        for field, boost in (("heading", self.heading_boost), ("body", 1.0)):
            for term in words:
                docnums, weights = view.postings(field, term)
                if docnums.size:
                    scores[docnums] += boost * view.bm25(field, docnums, weights, self.k1, self.b)
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
        """Live passages in the serving index (0 when it is missing or unreadable)."""
        try:
            return int(self._get_view().live.sum()) if whoosh_index.exists_in(self.folder) else 0
        except Exception:  # unreadable: reported by search and by problem()
            self.close()
            return 0

    def passages_with(self, term: str) -> int:
        """How many live indexed passages hold ``term`` (an analyzed token) in their body."""
        try:
            if not whoosh_index.exists_in(self.folder):
                return 0
            view = self._get_view()
            return int(view.live[view.postings("body", term)[0]].sum())
        except Exception:  # unreadable: reported by search and by problem()
            self.close()
            return 0

    def _open(self) -> Any:
        if self._index is None:
            self._index = whoosh_index.open_dir(self.folder)
        return self._index

    def _get_searcher(self) -> Any:
        if self._searcher is None:
            self._searcher = self._open().searcher(weighting=BM25F(B=self.b, K1=self.k1))
        elif not self._searcher.up_to_date():  # another writer committed: reopen, do not refresh()
            self.close()
            self._searcher = self._open().searcher(weighting=BM25F(B=self.b, K1=self.k1))
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
        exact = {field: np.zeros(self.size) for field in ("heading", "body")}
        for docnum in reader.all_doc_ids():
            stored = reader.stored_fields(docnum)
            self.live[docnum] = True
            self.ids[docnum] = stored["id"]
            for field in exact:
                exact[field][docnum] = stored[f"{field}_len"]
        self.id_rank = np.argsort(np.argsort(np.array(self.ids, dtype=object)))
        # Per-document lengths as Whoosh scores them (its one-byte encoding); averages exact, over live documents.
        self.lengths = {
            field: np.array([reader.doc_field_length(d, field, 0) for d in range(self.size)], dtype=float)
            for field in ("heading", "body")
        }
        self.live_count = max(int(self.live.sum()), 1)
        self.average = {field: float(values.sum() / self.live_count) or 1.0 for field, values in exact.items()}
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

    def bm25(self, field: str, docnums: np.ndarray, tf: np.ndarray, k1: float, b: float) -> np.ndarray:
        """Whoosh's ``scoring.bm25`` for these postings, vectorised; idf over live documents."""
        frequency = int(self.live[docnums].sum())
        idf = math.log(self.live_count / (frequency + 1)) + 1
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


def _fields(passage: Passage, analyzer: Analyzer) -> dict[str, Any]:
    heading = " / ".join(passage.heading_path)
    return {
        "id": passage.id,
        "path": passage.path,
        "heading": heading,
        "body": passage.text,
        "heading_len": _token_count(heading, analyzer),
        "body_len": _token_count(passage.text, analyzer),
    }


def _token_count(text: str, analyzer: Analyzer) -> int:
    """The field length Whoosh records for ``text`` (its indexed tokens)."""
    return sum(1 for _ in analyzer(text, mode="index"))


def _check_built(folder: Path, passages: dict[str, StoredPassage]) -> None:
    """A new version must hold every passage and find the first one by one of its words."""
    index = whoosh_index.open_dir(folder)
    with index.searcher() as searcher:
        count = int(searcher.doc_count())
        if count != len(passages):
            raise LaneUnavailableError(
                f"the new lexical index holds {count} passages, the record store {len(passages)}"
            )
        probe = next((sp.passage for sp in passages.values() if analyze(sp.passage.text)), None)
        if probe is not None:
            found = searcher.search(Term("body", analyze(probe.text)[0]), limit=None)
            if probe.id not in {hit["id"] for hit in found}:
                raise LaneUnavailableError(f"the new lexical index does not find {probe.id} by its own words")
