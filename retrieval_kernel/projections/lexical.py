"""The lexical projection: a Whoosh BM25F index derived from the record store.

Two fields are searched: ``heading`` (note title plus heading path) and ``body``.
A query is analysed with the same analyzer as the passages (lower-case, stop
words removed, Porter2 stems, so "deploy", "deployment" and "deploying" meet) and
becomes an OR of its terms over both fields; heading matches get ``HEADING_BOOST``.
Query text is never handed to Whoosh's query parser, so punctuation such as
``?``, ``:`` or quotes cannot be misread as syntax.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import Stemmer
from whoosh import index as whoosh_index
from whoosh.analysis import STOP_WORDS, Analyzer, StemmingAnalyzer
from whoosh.fields import ID, STORED, TEXT, Schema
from whoosh.query import Or, Term
from whoosh.scoring import BM25F

from ..corpus.notes import Passage
from ..errors import LaneUnavailableError, LexicalUnreadableError
from ..store.progress import SILENT
from ..store.records import ProjectionState, RecordStore, check_deadline, utc_now
from .compiled import HOLD_BITS, AnalysedPassage, CompiledLexicon
from .segment import write_index

NAME = "lexical"
# Chosen by grid search on SciFact *train* queries only (scripts/tune_lexical.py, log beside it):
# k1 1.2, b 0.5, heading boost 0.5 gave train nDCG@10 0.694 (Whoosh's defaults, b 0.75 with
# boost 2.0, gave 0.620). Boost 0 scored 0.698, but the heading field is what carries a
# section's parent titles, so it keeps a small weight.
K1 = 1.2
B = 0.5
HEADING_BOOST = 0.5
REPLAY_SNAPSHOT_AT = 200  # passages replayed from the change log past which a new snapshot is written
WORD_PATTERN = r"\w+(\.?\w+)*"  # Whoosh's default also keeps "*", so "**bold**" would hide "bold"
MIN_WORD = 2  # StemmingAnalyzer's default: shorter words are not indexed
TERM_CACHE_LIMIT = 500_000  # words remembered by index_counts before it starts afresh


_STEMMERS = threading.local()  # a PyStemmer stemmer is not to be shared between threads


def stem(word: str) -> str:
    """The Porter2 stem of a lower-cased ``word``.

    Snowball 2.2's English stemmer (PyStemmer 2.2, in C): the stems of Whoosh's pure-Python
    ``porter2`` (a test pins them equal on a real vocabulary) at a sixth of the time; Snowball 3
    changed some stems ("organic", "skis"), so the pin keeps the version.
    """
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = Stemmer.Stemmer("english")
    return stemmer.stemWord(word)


def make_analyzer() -> Analyzer:
    """Lower-case word tokens, English stop words dropped, Porter2 stems."""
    return StemmingAnalyzer(expression=WORD_PATTERN, stemfn=stem, minsize=MIN_WORD)


class _TermCache(dict[str, str | None]):
    """Words mapped to their index terms (``None``: a stop word or too short), each found once."""

    def __init__(self, term_of: Callable[[str], str | None]) -> None:
        super().__init__()
        self.term_of = term_of

    def __missing__(self, word: str) -> str | None:
        term = self.term_of(word)
        if len(self) >= TERM_CACHE_LIMIT:
            self.clear()
        self[word] = term
        return term


def _term_of_lower(lower: str) -> str | None:
    """The analyzer's stop filter and stemmer on a lower-cased word."""
    return stem(lower) if len(lower) >= MIN_WORD and lower not in STOP_WORDS else None


_WORDS = re.compile(WORD_PATTERN.replace("(", "(?:"))  # the same matches; findall then returns whole matches
_LOWER_TERMS = _TermCache(_term_of_lower)  # "Cell" and "cell" are stemmed once
_INDEX_TERMS = _TermCache(lambda word: _LOWER_TERMS[word.lower()])


def index_counts(text: str) -> Counter[str]:
    """How often each index term occurs in ``text``: the analyzer's tokens, counted without building them.

    The analyzer's own steps (match, lower-case, drop stop words and short words, stem) on each
    distinct word once; a test pins it to the analyzer on real and odd text.
    """
    counts: Counter[Any] = Counter(map(_INDEX_TERMS.__getitem__, _WORDS.findall(text)))
    del counts[None]
    return counts


def analyze(text: str, analyzer: Analyzer | None = None) -> list[str]:
    """The distinct index terms of ``text``, in order of first appearance."""
    return list(term_words(text, analyzer))


@lru_cache(maxsize=16384)  # passages and their sentences come back query after query: analyse each once
def term_set(text: str) -> frozenset[str]:
    """The distinct index terms of ``text`` (the shared analyzer), as a set."""
    return frozenset(analyze(text))


def term_words(text: str, analyzer: Analyzer | None = None) -> dict[str, str]:
    """Each distinct index term of ``text`` mapped to the first word it came from (lower-cased).

    Without an ``analyzer``, the shared analyzer's steps as ``index_counts`` takes them, each distinct
    word analysed once (a test pins both ways equal); with one, its own tokens.
    """
    words: dict[str, str] = {}
    if analyzer is None:
        for word in _WORDS.findall(text):
            term = _INDEX_TERMS[word]
            if term is not None and term not in words:
                words[term] = word.lower()
        return words
    for token in analyzer(text, chars=True):
        words.setdefault(token.text, text[token.startchar : token.endchar].lower())
    return words


def make_schema() -> Schema:
    """Term frequencies without positions (``phrase=False``): the lane asks single terms, never phrases."""
    analyzer = make_analyzer()
    return Schema(
        id=ID(stored=True, unique=True),
        path=ID(),
        heading=TEXT(analyzer=analyzer, phrase=False),
        body=TEXT(analyzer=analyzer, phrase=False),
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
        self._compiled: CompiledLexicon | None = None  # the scoring form (kept across reopening the searcher)
        self._compiled_from: Any = None  # without a record store: the searcher it was read from
        self.progress = SILENT  # a bar while many passages are indexed (set by the workspace)

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
        problem = self.problem(deep=False)
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
        in_step = self._compiled_in_step(state)
        analysed: list[AnalysedPassage] = []
        writer = self._open().writer()
        try:
            for path in changed_paths:
                check_deadline(deadline, f"updating the lexical index for {path}")
                writer.delete_by_term("path", path)
                for passage in records.passages_of(path):
                    analysed.append(_analysed(passage))
                    writer.add_document(**_document(passage, analysed[-1]))
        except BaseException:
            writer.cancel()
            raise
        writer.commit()  # Whoosh swaps in the new table of contents at the end: a kill before it leaves the old
        published = self._publish(records, ProjectionState(NAME, state.version, changes[-1][0], utc_now()))
        if in_step and self._compiled is not None:
            self._update_compiled(changed_paths, analysed, published.high_water)
        return published

    def rebuild(self, records: RecordStore, version: int, deadline: float | None = None) -> ProjectionState:
        """Build ``version`` beside the serving one from the record store, check it, then switch to it."""
        self.close()
        folder = self.version_folder(version)
        if folder.exists():
            shutil.rmtree(folder)  # an unfinished build of this version (a killed refresh)
        folder.mkdir(parents=True)
        high_water = records.high_water()
        passages = records.all_passages()
        analysed: list[AnalysedPassage] = []
        with self.progress.track("lexical index", len(passages), "passage") as step:
            for passage in passages:
                check_deadline(deadline, "rebuilding the lexical index")
                analysed.append(_analysed(passage))
                step(1)
        compiled = CompiledLexicon.from_passages(analysed, version, high_water)
        lengths = {f"{name}_len": compiled.exact[name].astype(int).tolist() for name in compiled.matrices}
        write_index(folder, make_schema(), compiled, lengths)  # the analysis above, written as Whoosh would
        _check_built(folder, passages)
        compiled.save(folder)
        self.version = version
        state = self._publish(records, ProjectionState(NAME, version, high_water, utc_now()))
        self._compiled = compiled
        self._drop_other_versions(keep=folder)
        return state

    rebuilt_because: str | None = None  # why the last sync rebuilt (None: it did not)

    def problem(self, deep: bool = True) -> str | None:
        """Why the serving version cannot be read (``None`` when it can): missing or damaged files.

        ``deep`` also reads every segment's stored fields (what ``status`` reports); a refresh
        checks only that the index opens (its table of contents and segment files), which is
        what a missing or garbled file breaks, without a read proportional to the corpus.
        """
        folder = self.folder
        try:
            if not whoosh_index.exists_in(folder):
                return f"the lexical index {folder} is missing"
            searcher = self._get_searcher()
            if "body_len" not in searcher.schema:
                return f"the lexical index {folder} was built by an older version"
            if deep:
                _read_every_segment(searcher)
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

    def search(self, text: str, limit: int, hidden: frozenset[str] = frozenset()) -> list[LexicalHit]:
        """Top ``limit`` passages for ``text`` by Whoosh's BM25F; ties broken by passage id.

        ``hidden``: passages outside the caller's scopes. They are still scored (the caller's lane
        sets them aside), but the corpus statistics leave them out, so notes a caller may not see never
        reorder the ones it may.

        Scores are Whoosh's own BM25F formula, computed with numpy over the compiled form
        of the index (:mod:`.compiled`; Whoosh's collector walks postings one by one in
        Python); :meth:`search_with_whoosh` is that reference and tests pin them equal.
        Corpus statistics count live documents only, so an index updated in place
        scores exactly like one rebuilt from scratch. ``LexicalUnreadableError`` when
        the serving index is missing or damaged (a projection never built finds nothing).
        """
        words = term_words(text)
        if not words:
            return []
        for attempt in (1, 2):
            version = self._serving_version()
            if version is None:
                return []
            try:
                return self._scored(words, limit, hidden)
            except Exception as exc:  # damaged files, or a version another process just replaced
                self.close()
                if attempt == 2 or self._serving_version() == version:
                    raise LexicalUnreadableError(
                        f"the lexical index {self.folder} cannot be read ({type(exc).__name__}: {exc}); "
                        "a refresh rebuilds it from the record store"
                    ) from exc
        return []

    def _scored(self, words: dict[str, str], limit: int, hidden: frozenset[str] = frozenset()) -> list[LexicalHit]:
        compiled = self._compiled_form()
        terms = list(words)
        boosts = {"heading": self.heading_boost, "body": 1.0}
        scores, holds = compiled.scores(terms, self.k1, self.b, boosts, hidden=hidden)
        chosen = compiled.top(scores, limit)
        held = _held([words[term] for term in terms], holds, chosen)
        return [
            LexicalHit(compiled.ids[d], score, words_held)
            for d, score, words_held in zip(chosen, scores[chosen].tolist(), held, strict=True)
        ]

    # ------------------------------------------------------------ the compiled scoring form

    def _compiled_in_step(self, state: ProjectionState) -> bool:
        compiled = self._compiled
        return compiled is not None and (compiled.version, compiled.high_water) == (state.version, state.high_water)

    def _compiled_serves(self, state: ProjectionState) -> bool:
        """Whether the in-memory form answers for ``state``: in step with it, or ahead of it (brought
        forward from the change log by :meth:`advance`, its Whoosh commit still to come)."""
        compiled = self._compiled
        if compiled is None or compiled.version != state.version or compiled.high_water < state.high_water:
            return False
        return compiled.high_water == state.high_water or (
            self.records is not None and compiled.high_water <= self.records.high_water()
        )

    def advance(self) -> int:
        """Bring the in-memory scoring form up to the record store's change log, leaving Whoosh behind.

        Searches answer from the notes' current text at once; the durable Whoosh commit is
        :meth:`sync`'s, later (until then the pointer, and so every other process, stays behind).
        Returns the change-log position the form holds.
        """
        assert self.records is not None
        compiled = self._compiled_form()
        newest = self.records.high_water()
        if compiled.high_water < newest:
            self._replay(newest)
        return self._compiled.high_water if self._compiled is not None else compiled.high_water

    def answering_high_water(self) -> int | None:
        """The change-log position searches answer at: the in-memory form's when it serves, else the pointer's."""
        state = self.records.projection(NAME) if self.records is not None else None
        if state is None:
            return None
        return self._compiled.high_water if self._compiled_serves(state) and self._compiled else state.high_water

    def _update_compiled(self, paths: list[str], analysed: list[AnalysedPassage], high_water: int) -> None:
        """Apply a refresh to the in-memory form; snapshot it when the refresh folded its delta in (never
        while it is ahead of the serving pointer: a snapshot must not claim changes Whoosh lacks)."""
        compiled = self._compiled
        assert compiled is not None
        if compiled.replace_notes(paths, analysed, high_water) and not self._ahead(high_water):
            compiled.save(self.folder)

    def _ahead(self, high_water: int) -> bool:
        state = self.records.projection(NAME) if self.records is not None else None
        return state is not None and high_water > state.high_water

    def _compiled_form(self) -> CompiledLexicon:
        """The scoring form of the serving version at the pointer's high-water mark.

        In step with the pointer it answers from memory, touching no file. Otherwise it is
        loaded from the version's snapshot (once the Whoosh index behind it opens and holds
        as many passages) and brought forward by replaying the change log, or read from the
        postings when neither can be trusted.
        """
        state = self.records.projection(NAME) if self.records is not None else None
        if state is not None and self._compiled_serves(state):
            assert self._compiled is not None
            return self._compiled
        if not whoosh_index.exists_in(self.folder):
            raise FileNotFoundError("no index in the folder")
        searcher = self._get_searcher()
        if state is None:  # no pointer to follow: read it again whenever the searcher was reopened
            if self._compiled is None or self._compiled_from is not searcher:
                self._compiled, self._compiled_from = CompiledLexicon.from_whoosh(searcher, self.version), searcher
            return self._compiled
        compiled = self._compiled if self._compiled is not None and self._compiled.version == state.version else None
        compiled = compiled or CompiledLexicon.load(self.folder)
        if compiled is not None and not self._replayable(compiled, state, searcher):
            compiled = None
        if compiled is None:
            compiled = CompiledLexicon.from_whoosh(searcher, state.version, state.high_water)
            compiled.save(self.folder)
        self._compiled = compiled
        newest = max(state.high_water, self.records.high_water() if self.records is not None else 0)
        if compiled.high_water < newest:  # the passages it reads are the newest: so is the mark
            self._replay(newest)
        return self._compiled

    def _replayable(self, compiled: CompiledLexicon, state: ProjectionState, searcher: Any) -> bool:
        """Whether ``compiled`` is this version's and the record store can bring it forward exactly (to its
        newest change, which the passages it holds are); in step already, it must count the passages
        Whoosh holds."""
        in_step = compiled.high_water == state.high_water
        return (
            compiled.version == state.version
            and compiled.high_water <= state.high_water
            and (not in_step or compiled.live_count() == int(searcher.doc_count()))
        )

    def _replay(self, high_water: int) -> None:
        """Apply the change log after the compiled form's mark, as :meth:`sync` applied it to Whoosh."""
        assert self.records is not None and self._compiled is not None
        changes = self.records.changes_since(self._compiled.high_water)
        paths = sorted({path for _, path, _ in changes})
        analysed = [_analysed(p) for path in paths for p in self.records.passages_of(path)]
        self._update_compiled(paths, analysed, high_water)
        if len(analysed) > REPLAY_SNAPSHOT_AT and not self._ahead(high_water):  # spare the next process
            self._compiled.save(self.folder)

    def forget_statistics(self) -> None:
        """Drop the statistics and term weights the scoring form keeps between questions, as a change does
        (for measuring the first question after one)."""
        if self._compiled is not None:
            self._compiled.forget_statistics()

    def search_with_whoosh(self, text: str, limit: int) -> list[LexicalHit]:
        """The same ranking through Whoosh's own query and collector (the slow reference)."""
        words = term_words(text)
        if not words or not whoosh_index.exists_in(self.folder):
            return []
        heading = [Term("heading", t, boost=self.heading_boost) for t in words]
        query = Or(heading + [Term("body", t) for t in words])
        results = self._get_searcher().search(query, limit=None, terms=True)
        hits = [LexicalHit(hit["id"], float(hit.score), _matched_words(hit, words)) for hit in results]
        return sorted(hits, key=_hit_order)[:limit]

    def document_count(self) -> int:
        """Live passages in the serving index (0 when it is missing or unreadable)."""
        try:
            return self._compiled_form().live_count() if self._serving_version() is not None else 0
        except Exception:  # unreadable: reported by search and by problem()
            self.close()
            return 0

    def passages_with(self, term: str, heading: bool = False) -> int:
        """How many live indexed passages hold ``term`` (an analyzed token) in their body (or heading)."""
        return self.passages_with_each([term], heading)[term]

    def passages_with_each(self, terms: Iterable[str], heading: bool = False) -> dict[str, int]:
        """:meth:`passages_with` for each of ``terms``, from one look at the serving version."""
        terms = list(terms)
        fields = ("heading", "body") if heading else ("body",)
        try:
            if self._serving_version() is None:
                return dict.fromkeys(terms, 0)
            compiled = self._compiled_form()
            return {term: compiled.holding(term, fields) for term in terms}
        except Exception:  # unreadable: reported by search and by problem()
            self.close()
            return dict.fromkeys(terms, 0)

    def held_terms(self, terms: Sequence[str], passage_ids: Sequence[str]) -> list[set[str]] | None:
        """Which of ``terms`` each passage holds in its heading or body, read from the compiled form.

        The same terms analysing the passage's heading path and text gives, without analysing
        them again; ``None`` when the form is not at the record store's high-water mark (its
        passages may differ from the store's) or cannot be read, so the caller analyses instead.
        """
        if self.records is None:
            return None
        try:
            if self._serving_version() is None:
                return None
            compiled = self._compiled_form()
            if compiled.high_water != self.records.high_water():
                return None
            return compiled.held(terms, passage_ids)
        except Exception:  # unreadable: reported by search and by problem()
            self.close()
            return None

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
        self._index = None


def _read_every_segment(searcher: Any) -> None:
    """Read every segment's stored fields and field lengths (what a damaged file fails on)."""
    reader = searcher.reader()
    for docnum in reader.all_doc_ids():
        reader.stored_fields(docnum)
        for field in ("heading", "body"):
            reader.doc_field_length(docnum, field, 0)


def read_postings(matcher: Any) -> tuple[np.ndarray, np.ndarray]:
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


def _held(typed: list[str], holds: list[np.ndarray], chosen: list[int]) -> list[tuple[str, ...]]:
    """For each chosen passage, the query words (as typed, in query order) whose terms it holds, read
    from the bit masks ``CompiledLexicon.scores`` returns (bit ``i % HOLD_BITS`` of mask ``i // HOLD_BITS``).
    Passages holding the same terms share one answer."""
    held: list[int] = [0] * len(chosen)  # one Python int per passage: every block's bits side by side
    for block, bits in enumerate(holds):
        held = [whole | part << (block * HOLD_BITS) for whole, part in zip(held, bits[chosen].tolist(), strict=True)]
    answers: dict[int, tuple[str, ...]] = {}
    for whole in held:
        if whole not in answers:
            answers[whole] = tuple(word for index, word in enumerate(typed) if whole >> index & 1)
    return [answers[whole] for whole in held]


def _hit_order(hit: LexicalHit) -> tuple[float, str]:
    return (-round(hit.score, 9), hit.passage_id)


def _matched_words(hit: Any, words: dict[str, str]) -> tuple[str, ...]:
    """The query words (as typed, lower-cased) whose terms this hit contains, in query order."""
    stems = {term.decode() if isinstance(term, bytes) else str(term) for _, term in hit.matched_terms()}
    return tuple(word for stem, word in words.items() if stem in stems)


def heading_text(passage: Passage) -> str:
    """What the heading field indexes for ``passage``: its heading path."""
    return " / ".join(passage.heading_path)


def _analysed(passage: Passage) -> AnalysedPassage:
    """The term counts of ``passage``'s heading path and text (the tokens Whoosh indexes and counts as lengths)."""
    counts = {"heading": index_counts(heading_text(passage)), "body": index_counts(passage.text)}
    return AnalysedPassage(passage.id, passage.path, counts)


def _document(passage: Passage, counted: AnalysedPassage) -> dict[str, Any]:
    """The Whoosh document of ``passage`` (exact token counts stored beside the text)."""
    heading, body = counted.counts["heading"], counted.counts["body"]
    return {
        "id": passage.id,
        "path": passage.path,
        "heading": heading_text(passage),
        "body": passage.text,
        "heading_len": sum(heading.values()),  # exact token counts: field statistics over live documents
        "body_len": sum(body.values()),
    }


def _check_built(folder: Path, passages: list[Passage]) -> None:
    """A new version must hold every passage and find the first one by one of its words."""
    index = whoosh_index.open_dir(folder)
    with index.searcher() as searcher:
        count = int(searcher.doc_count())
        if count != len(passages):
            raise LaneUnavailableError(
                f"the new lexical index holds {count} passages, the record store {len(passages)}"
            )
        probe = next((passage for passage in passages if analyze(passage.text)), None)
        if probe is not None:
            found = searcher.search(Term("body", analyze(probe.text)[0]), limit=None)
            if probe.id not in {hit["id"] for hit in found}:
                raise LaneUnavailableError(f"the new lexical index does not find {probe.id} by its own words")
