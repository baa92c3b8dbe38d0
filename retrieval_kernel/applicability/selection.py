"""The selection: what a selector returns (records that apply, rejected candidates and why) and its protocol.

Rejection reason codes are the values of :data:`REASONS`; :data:`UNKNOWN_CONDITION`
flags a kept record and is never a rejection by itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .capsules import CandidateRecord, Capsule, PassageRef
from .conditions import ConditionMatch
from .forks import NEEDS_CONDITION, ConditionFork

# Rejection reason codes.
CONTRADICTING_CONDITION = "contradicting_condition"
DISPUTED = "disputed"
SUPERSEDED = "superseded"
DUPLICATE_RULE = "duplicate_rule"
DIAGNOSTIC_NO_CLAIMS = "diagnostic_no_claims"
BELOW_THRESHOLD = "below_threshold"
NOT_NEEDED = "not_needed"
BEYOND_LIMIT = "beyond_limit"
OTHER_CONTEXT = "other_context"
NOT_SELECTED_BY_JUDGE = "not_selected_by_judge"
REASONS = (
    CONTRADICTING_CONDITION,
    DISPUTED,
    SUPERSEDED,
    DUPLICATE_RULE,
    DIAGNOSTIC_NO_CLAIMS,
    BELOW_THRESHOLD,
    NOT_NEEDED,
    BEYOND_LIMIT,
    OTHER_CONTEXT,
    NOT_SELECTED_BY_JUDGE,
)
UNKNOWN_CONDITION = "unknown_condition"  # a flag on a kept record, never a rejection by itself

# Outcomes of a selection.
SELECTED, EMPTY = "selected", "empty"
OUTCOMES = (SELECTED, EMPTY, NEEDS_CONDITION)


@dataclass(frozen=True)
class SelectedRecord:
    """A record that applies: why, which need (query words) it covers, and its flags."""

    record: str
    path: str
    title: str
    why: str
    needs: tuple[str, ...]
    conditions: str  # matched | universal | unknown
    flags: tuple[str, ...] = ()
    relevance: float = 0.0
    rank: int = 0
    passages: tuple[PassageRef, ...] = ()
    capsule: Capsule | None = None

    @property
    def chars(self) -> int:
        return sum(len(p.text) for p in self.passages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "path": self.path,
            "title": self.title,
            "why": self.why,
            "needs": list(self.needs),
            "conditions": self.conditions,
            "flags": list(self.flags),
            "relevance": round(self.relevance, 4),
            "rank": self.rank,
            "passages": [{"id": p.id, "line_start": p.line_start, "line_end": p.line_end} for p in self.passages],
            "capsule": self.capsule.to_dict() if self.capsule else None,
        }


@dataclass(frozen=True)
class RejectedCandidate:
    """A candidate that was not returned, with its reason code and detail."""

    record: str
    path: str
    reason: str
    detail: str
    rank: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "path": self.path,
            "reason": self.reason,
            "detail": self.detail,
            "rank": self.rank,
        }


@dataclass(frozen=True)
class ApplicabilitySelection:
    """0..N records that apply to a query, and every rejected candidate with its reason."""

    query: str
    intent: str
    selector: str
    conditions: Mapping[str, tuple[str, ...]]
    condition_matches: tuple[ConditionMatch, ...]
    records: tuple[SelectedRecord, ...]
    rejected: tuple[RejectedCandidate, ...]
    candidates: int
    fallback: str | None = None
    selection_ms: float = 0.0
    retrieval_ms: float | None = None
    lanes: tuple[dict[str, Any], ...] = ()
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    fork: ConditionFork | None = None
    open_questions: tuple[str, ...] = ()  # parts of the question no eligible record answers

    @property
    def empty(self) -> bool:
        return not self.records

    @property
    def outcome(self) -> str:
        """``needs_condition`` when a deciding condition is unknown, else ``selected`` or ``empty``."""
        if self.fork is not None:
            return NEEDS_CONDITION
        return EMPTY if self.empty else SELECTED

    @property
    def ids(self) -> list[str]:
        return [record.record for record in self.records]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "intent": self.intent,
            "selector": self.selector,
            "fallback": self.fallback,
            "outcome": self.outcome,
            "needs_condition": self.fork.to_dict() if self.fork else None,
            "open_questions": list(self.open_questions),
            "conditions": {key: list(values) for key, values in self.conditions.items()},
            "condition_matches": [m.to_dict() for m in self.condition_matches],
            "empty": self.empty,
            "records": [r.to_dict() for r in self.records],
            "rejected": [r.to_dict() for r in self.rejected],
            "candidates": self.candidates,
            "selection_ms": round(self.selection_ms, 3),
            "retrieval_ms": None if self.retrieval_ms is None else round(self.retrieval_ms, 3),
            "lanes": list(self.lanes),
            "thresholds": dict(self.thresholds),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=False)

    def __str__(self) -> str:
        from ..output.selection_render import render_text

        return render_text(self)

    def _repr_markdown_(self) -> str:
        from ..output.selection_render import render_markdown

        return render_markdown(self)

    def _repr_html_(self) -> str:
        from ..output.selection_render import render_html

        return render_html(self)

    def __repr__(self) -> str:
        return f"<ApplicabilitySelection {len(self.records)} record(s), {len(self.rejected)} rejected: {self.ids}>"


class Selector(Protocol):
    """Chooses 0..N applicable records from retrieved candidates."""

    name: str

    def select(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        conditions: Mapping[str, Any] | Sequence[str] | None = None,
        intent: str = "orient",
    ) -> ApplicabilitySelection: ...


def reject(candidate: CandidateRecord, reason: str, detail: str) -> RejectedCandidate:
    """``candidate`` rejected with ``reason`` (a code of :data:`REASONS`) and ``detail``."""
    return RejectedCandidate(candidate.record, candidate.capsule.path, reason, detail, candidate.rank)


def build_selection(
    query: str,
    intent: str,
    selector: str,
    task: Mapping[str, frozenset[str]],
    matches: Sequence[ConditionMatch],
    records: Sequence[SelectedRecord],
    rejected: Sequence[RejectedCandidate],
    candidates: int,
    started: float,
) -> ApplicabilitySelection:
    """A selector's result: conditions in key order, rejections by rank, time since ``started``."""
    return ApplicabilitySelection(
        query=query,
        intent=intent,
        selector=selector,
        conditions={key: tuple(sorted(values)) for key, values in sorted(task.items())},
        condition_matches=tuple(matches),
        records=tuple(records),
        rejected=tuple(sorted(rejected, key=lambda r: r.rank)),
        candidates=candidates,
        selection_ms=(time.perf_counter() - started) * 1000,
    )
