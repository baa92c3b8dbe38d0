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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.analysis import Analyzer, StemmingAnalyzer
from whoosh.fields import ID, TEXT, Schema
from whoosh.lang.porter2 import stem as porter2_stem
from whoosh.query import Or, Term
from whoosh.scoring import BM25F

from .records import ProjectionState, RecordStore, utc_now

NAME = "lexical"
K1 = 1.2
B = 0.75
HEADING_BOOST = 2.0
WORD_PATTERN = r"\w+(\.?\w+)*"  # Whoosh's default also keeps "*", so "**bold**" would hide "bold"
SCORE_BASIS = f"BM25F (Whoosh; k1={K1}, b={B}; heading boost {HEADING_BOOST}; Porter2 stems)"


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

    def __init__(self, store_dir: Path) -> None:
        self.folder = store_dir / NAME
        self._index: Any = None
        self._searcher: Any = None
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
                writer.add_document(**_fields(passage.id, passage.path, passage.heading_path, passage.text))
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
            p = stored.passage
            writer.add_document(**_fields(p.id, p.path, p.heading_path, p.text))
        writer.commit()
        return self._publish(records, ProjectionState(NAME, version, high_water, utc_now()))

    def _publish(self, records: RecordStore, state: ProjectionState) -> ProjectionState:
        records.set_projection(state)
        if self._searcher is not None:
            self._searcher = self._searcher.refresh()
        return state

    # ------------------------------------------------------------ searching

    def search(self, text: str, limit: int) -> list[LexicalHit]:
        """Top ``limit`` passages for ``text``; ties broken by passage id."""
        words = term_words(text, self._analyzer)
        if not words or not whoosh_index.exists_in(self.folder):
            return []
        query = Or([Term("heading", t, boost=HEADING_BOOST) for t in words] + [Term("body", t) for t in words])
        hits = self._complete_ties(query, words, limit)
        return sorted(hits, key=_hit_order)[:limit]

    def _complete_ties(self, query: Any, words: dict[str, str], limit: int) -> list[LexicalHit]:
        """Fetch past ``limit`` until the score at the cut is not shared with unseen hits.

        Whoosh cuts at ``limit`` in its own document order; ties must be cut by passage id.
        """
        searcher = self._get_searcher()
        fetch = limit + 1
        while True:
            results = searcher.search(query, limit=fetch, terms=True)
            hits = [LexicalHit(hit["id"], float(hit.score), _matched_words(hit, words)) for hit in results]
            if len(hits) < fetch or _hit_order(hits[limit - 1])[0] != _hit_order(hits[-1])[0]:
                return hits
            fetch *= 2

    def document_count(self) -> int:
        return int(self._get_searcher().doc_count()) if whoosh_index.exists_in(self.folder) else 0

    def _open(self) -> Any:
        if self._index is None:
            self._index = whoosh_index.open_dir(self.folder)
        return self._index

    def _get_searcher(self) -> Any:
        if self._searcher is None:
            self._searcher = self._open().searcher(weighting=BM25F(B=B, K1=K1))
        elif not self._searcher.up_to_date():
            self._searcher = self._searcher.refresh()
        return self._searcher

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
        self._searcher = None
        self._index = None


def _hit_order(hit: LexicalHit) -> tuple[float, str]:
    return (-round(hit.score, 9), hit.passage_id)


def _matched_words(hit: Any, words: dict[str, str]) -> tuple[str, ...]:
    """The query words (as typed, lower-cased) whose terms this hit contains, in query order."""
    stems = {term.decode() if isinstance(term, bytes) else str(term) for _, term in hit.matched_terms()}
    return tuple(word for stem, word in words.items() if stem in stems)


def _fields(passage_id: str, path: str, heading_path: Sequence[str], text: str) -> dict[str, str]:
    return {"id": passage_id, "path": path, "heading": " / ".join(heading_path), "body": text}
