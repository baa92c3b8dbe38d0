"""What one caller may see: note facts by path, hidden passages, links, and which warnings may be shown."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..corpus.facts import NoteFacts
from ..corpus.links import LinkGraph, LinkIndex, NoteRef
from ..corpus.notes import Passage
from ..projections.lexical import analyze, heading_text
from ..store.indexing import StandingWarnings
from ..store.records import RecordStore
from ..store.refresh import RefreshOutcome
from .answerability import Unseen
from .candidates import visible
from .validity import Observations


@dataclass(frozen=True)
class ScopeView:
    """What one set of caller scopes can see: note facts by path, hidden passages, links."""

    facts: dict[str, NoteFacts]
    hidden: frozenset[str]
    links: LinkGraph
    hidden_paths: frozenset[str] = frozenset()
    hidden_terms: Mapping[str, int] = field(default_factory=dict)  # term -> hidden passages holding it
    observations: Observations = field(default_factory=Observations)  # the shown observation notes' series
    scopes: frozenset[str] = frozenset()
    high_water: int = 0  # the change-log position it shows

    @property
    def unseen(self) -> Unseen:
        """What the hidden passages add to the index's statistics (judging takes it back out)."""
        return Unseen(len(self.hidden), self.hidden_terms)

    @property
    def all_paths(self) -> frozenset[str]:
        return frozenset(self.facts) | self.hidden_paths

    @classmethod
    def build(cls, records: RecordStore, scopes: frozenset[str]) -> ScopeView:
        return ScopeViews(scopes).view(records)


@dataclass
class _Concealed:
    """A hidden note's passages: their ids, and how many of them hold each term."""

    ids: frozenset[str]
    terms: Counter[str]


class ScopeViews:
    """The scope view of one set of caller scopes, kept at the change log's end: a change patches the
    view for the notes the log names since (their facts, hidden passages and names for the links)
    instead of reading every note again. The views it returns are never changed afterwards."""

    def __init__(self, scopes: frozenset[str]) -> None:
        self.scopes = scopes
        self._view: ScopeView | None = None  # None: build from every note
        self._index = LinkIndex()  # the shown notes, for resolving links
        self._concealed: dict[str, _Concealed] = {}  # by hidden path
        self._terms: Counter[str] = Counter()  # every hidden passage's terms

    def view(self, records: RecordStore) -> ScopeView:
        """The view at the change log's end."""
        newest = records.high_water()
        last, self._view = self._view, None  # until the view below is whole
        if last is not None and last.high_water == newest:
            self._view = last
        elif (
            last is not None
            and last.high_water < newest
            and (changed := records.changed_paths(last.high_water)) is not None
        ):
            self._view = self._patch(records, last, changed, newest)
        else:  # the first view, a log that went back, or many changes
            self._view = self._build(records, newest)
        return self._view

    def _build(self, records: RecordStore, newest: int) -> ScopeView:
        documents = records.documents()
        shown = {path: doc for path, doc in documents.items() if visible(doc.facts, self.scopes)}
        self._index = LinkIndex(NoteRef(doc.path, doc.module, doc.facts) for doc in shown.values())
        self._concealed, self._terms = {}, Counter()
        for path in [path for path in documents if path not in shown]:
            self._conceal(path, records.passages_of(path))
        facts = {path: doc.facts for path, doc in shown.items()}
        observations = Observations.of(facts, {path: doc.observed_at for path, doc in shown.items()})
        return self._view_of(facts, observations, newest)

    def _patch(self, records: RecordStore, last: ScopeView, changed: set[str], newest: int) -> ScopeView:
        documents = records.documents(changed)
        shown = {path: doc for path, doc in documents.items() if visible(doc.facts, self.scopes)}
        facts = dict(last.facts)
        for path in changed:
            if path not in shown:
                facts.pop(path, None)  # a note still shown keeps its place: it is replaced below
            self._index.drop(path)
            self._reveal(path)
        for path, doc in documents.items():
            if path in shown:
                facts[path] = doc.facts
                self._index.put(NoteRef(doc.path, doc.module, doc.facts))
            else:
                self._conceal(path, records.passages_of(path))
        if not shown.keys() <= last.facts.keys():
            facts = dict(sorted(facts.items()))  # by path, as a build reads them
        observed = {path: doc.observed_at for path, doc in shown.items()}
        observations = last.observations.patched(changed, {path: doc.facts for path, doc in shown.items()}, observed)
        return self._view_of(facts, observations, newest)

    def _view_of(self, facts: dict[str, NoteFacts], observations: Observations, newest: int) -> ScopeView:
        concealed = self._concealed.values()
        return ScopeView(
            facts,
            frozenset().union(*(hidden.ids for hidden in concealed)),
            self._index.links(),
            frozenset(self._concealed),
            dict(self._terms),
            observations,
            self.scopes,
            newest,
        )

    def _conceal(self, path: str, passages: list[Passage]) -> None:
        # What the hidden passages add to document frequencies, so judging uses only what the caller sees.
        terms = Counter(
            term for passage in passages for term in set(analyze(passage.text)) | set(analyze(heading_text(passage)))
        )
        self._concealed[path] = _Concealed(frozenset(passage.id for passage in passages), terms)
        self._terms.update(terms)

    def _reveal(self, path: str) -> None:
        hidden = self._concealed.pop(path, None)
        if hidden is not None:
            self._terms.subtract(hidden.terms)
            for term in hidden.terms:
                if not self._terms[term]:
                    del self._terms[term]


def packet_warnings(
    outcome: RefreshOutcome, view: ScopeView, standing: StandingWarnings, read: set[str]
) -> tuple[str, ...]:
    """The warnings this packet carries: the refresh's state, what is wrong in the folder, notes that
    cannot be read (their last good revision serves), and warnings about the notes it draws on.

    When some notes are outside the caller's scopes, a warning is shown only if it names
    a note the caller can see and none it cannot; the rest are counted, never quoted.
    """
    warnings = [outcome.error] if outcome.error else []
    if outcome.deferred:
        warnings.append(
            f"{outcome.deferred} change(s) are not written to the lexical and dense projections on disk yet "
            "(they are once the workspace is idle); the lanes answered from their in-memory forms"
        )
    folder = [(text, ()) for text in standing.folder]
    problems = [(text, (path,)) for path, texts in sorted(standing.problems.items()) for text in texts]
    about = [text for path in sorted(read & standing.notes.keys()) for text in standing.notes[path]]
    notes = [(text, tuple(path for path in view.all_paths if path in text)) for text in about]
    withheld = 0
    for text, paths in [*folder, *problems, *notes]:
        if not view.hidden_paths or (paths and all(path in view.facts for path in paths)):
            warnings.append(text)
        else:
            withheld += 1
    if withheld:
        warnings.append(f"{withheld} indexing warning(s) about notes outside your scopes are not shown")
    return tuple(warnings)
