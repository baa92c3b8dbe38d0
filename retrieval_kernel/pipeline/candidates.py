"""What the policy works on: candidates, the caller's request, admissions, exclusions and conflicts,
with the role, reason and resolution codes every later stage reads."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..corpus.facts import NoteFacts
from ..corpus.status import PARTLY_SUPERSEDED
from ..store.records import StoredPassage
from .freshness import source_age_days

INTENTS = ("orient", "verify", "plan", "audit")
DEFAULT_INTENT = "orient"
ALL_SCOPES = "*"
SUPERSESSION = "supersession"  # the proposition of a conflict made by a link, not by asserts
FILTERED_BY_VALIDITY, FILTERED_BY_SCOPE = "filtered_by_validity", "filtered_by_scope"

# Roles of admitted evidence, and the order each intent shows them in.
CURRENT, EXPLANATION, COUNTER, HISTORICAL = "current", "explanation", "counter", "historical"
CONTRADICTED = "contradicted"  # a live system of record holds another value: shown after the rest, never governs
ROLE_ORDER: dict[str, tuple[str, ...]] = {
    "orient": (CURRENT, EXPLANATION, COUNTER),
    "verify": (CURRENT, COUNTER, EXPLANATION),
    "plan": (CURRENT, COUNTER, EXPLANATION),
    "audit": (CURRENT, EXPLANATION, COUNTER),
}

# Exclusion reason codes (scope is only ever counted, never listed).
SCOPE = "scope"
NOT_YET_VALID = "not_yet_valid"
NOT_YET_OBSERVED = "not_yet_observed"  # no validity window, observed after the clock: not on file then
EXPIRED = "expired"
SUPERSEDED = "superseded"
DRAFT, DEPRECATED, REJECTED = "draft", "deprecated", "rejected"
WITHDRAWN, MOVED = "withdrawn", "moved"
DUPLICATE = "duplicate"
WEAK = "weak_match"  # found by a lane, but judged not to answer the question
BEYOND_TOP = "beyond_top"
BUDGET = "budget"
VALIDITY_CODES = (NOT_YET_VALID, EXPIRED, SUPERSEDED, DRAFT, DEPRECATED, REJECTED, WITHDRAWN, MOVED)

USE_WINNER = "use_winner"
ABSTAIN_OR_ESCALATE = "abstain_or_escalate"


@dataclass(frozen=True)
class Request:
    """The caller's terms: who is asking, as of when, and for what."""

    as_of: dt.date
    scopes: frozenset[str] = frozenset()
    intent: str = DEFAULT_INTENT
    audit: bool = False

    @property
    def shows_history(self) -> bool:
        return self.audit or self.intent == "audit"


@dataclass(frozen=True)
class Candidate:
    """A passage proposed by the lanes, in fused order, with the note facts policy reads."""

    stored: StoredPassage
    score: float
    retrieved_by: tuple[Any, ...]
    matched_terms: tuple[str, ...] = ()
    pulled_in_for: str | None = None  # set when added as the successor of a superseded candidate
    set_aside: bool = False  # never admissible as current: kept out of the lanes' pool, listed after it

    @property
    def id(self) -> str:
        return self.stored.passage.id

    @property
    def path(self) -> str:
        return self.stored.passage.path

    @property
    def facts(self) -> NoteFacts:
        return self.stored.facts


def observed_after(candidate: Candidate, as_of: dt.date) -> bool:
    """Whether ``candidate``'s note, with no validity window, was observed after the clock: it was not on
    file then (asked "as of 4 March", the return written on 8 March does not answer). A note with a
    ``valid_from`` is governed by its window, however late it was written."""
    if candidate.facts.valid_from is not None:
        return False
    age = source_age_days(candidate.stored.observed_at, as_of)
    return age is not None and age < 0


@dataclass(frozen=True)
class Admission:
    """A candidate allowed into the packet, its role and why."""

    candidate: Candidate
    role: str
    reason: str
    duplicates: tuple[str, ...] = ()
    status: str | None = None  # as of the clock: a declared "superseded" whose successor is not valid yet is current
    partly_superseded_by: tuple[str, ...] = ()  # paths of valid notes that amend this one (they govern the changes)


@dataclass(frozen=True)
class Exclusion:
    """An in-scope candidate kept out of the packet as current evidence, and why."""

    candidate: Candidate
    code: str
    detail: str


@dataclass(frozen=True)
class Side:
    """One note's position in a conflict."""

    passage_id: str
    path: str
    value: Any
    authority: str | None
    status: str | None


@dataclass(frozen=True)
class ConflictDraft:
    """A conflict before evidence refs are known (assembly numbers the evidence)."""

    proposition: str
    sides: tuple[Side, ...]
    kind: str  # "superseded" | "partly_superseded" | "authority" | "unresolved" | "live" (a record over a note)
    winners: tuple[str, ...] = ()
    losers: tuple[str, ...] = ()
    blocking: bool = False  # unresolved and about the leading evidence: the packet must abstain

    @property
    def required_behavior(self) -> str:
        return ABSTAIN_OR_ESCALATE if self.kind == "unresolved" else USE_WINNER


@dataclass(frozen=True)
class Selection:
    """What the policy decided for one query."""

    admitted: tuple[Admission, ...]
    history: tuple[Admission, ...]
    excluded: tuple[Exclusion, ...]
    conflicts: tuple[ConflictDraft, ...]
    counts: Mapping[str, int] = field(default_factory=dict)
    out_of_reach: str | None = None  # nothing admitted: the answer is excluded as of the clock, or outside the scopes

    @property
    def blocked(self) -> bool:
        """Whether an unresolved conflict on the leading evidence requires abstaining."""
        return any(conflict.blocking for conflict in self.conflicts)


def visible(facts: NoteFacts, scopes: frozenset[str]) -> bool:
    """Whether a caller with ``scopes`` may see a note (a note without scope is public)."""
    return not facts.scope or ALL_SCOPES in scopes or not scopes.isdisjoint(facts.scope)


def effective_status(facts: NoteFacts, amended: bool = False) -> str | None:
    """The status of an admitted note as of the clock (it passed step 2, so it is not superseded now);
    ``partly_superseded`` when a valid note amends it."""
    if amended:
        return PARTLY_SUPERSEDED
    return "current" if facts.status == SUPERSEDED else facts.status
