"""What one caller may see: note facts by path, hidden passages, links, and which warnings may be shown."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..corpus.facts import NoteFacts
from ..corpus.links import LinkGraph, NoteRef, build_links
from ..projections.lexical import analyze
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

    @property
    def unseen(self) -> Unseen:
        """What the hidden passages add to the index's statistics (judging takes it back out)."""
        return Unseen(len(self.hidden), self.hidden_terms)

    @property
    def all_paths(self) -> frozenset[str]:
        return frozenset(self.facts) | self.hidden_paths

    @classmethod
    def build(cls, records: RecordStore, scopes: frozenset[str]) -> ScopeView:
        documents = records.documents()
        shown = {path: doc for path, doc in documents.items() if visible(doc.facts, scopes)}
        concealed = [p for path in documents if path not in shown for p in records.passages_of(path)]
        links = build_links(NoteRef(doc.path, doc.module, doc.facts) for doc in shown.values())
        hidden_paths = frozenset(documents) - frozenset(shown)
        # What the hidden passages add to document frequencies, so judging uses only what the caller sees.
        terms = Counter(term for p in concealed for term in set(analyze(p.text)))
        return cls(
            {path: doc.facts for path, doc in shown.items()},
            frozenset(p.id for p in concealed),
            links,
            hidden_paths,
            dict(terms),
            Observations.of(
                {path: doc.facts for path, doc in shown.items()}, {path: doc.observed_at for path, doc in shown.items()}
            ),
        )


def packet_warnings(
    outcome: RefreshOutcome, view: ScopeView, standing: StandingWarnings, read: set[str]
) -> tuple[str, ...]:
    """The warnings this packet carries: the refresh's state, what is wrong in the folder, notes that
    cannot be read (their last good revision serves), and warnings about the notes it draws on.

    When some notes are outside the caller's scopes, a warning is shown only if it names
    a note the caller can see and none it cannot; the rest are counted, never quoted.
    """
    warnings = [outcome.error] if outcome.error else []
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
