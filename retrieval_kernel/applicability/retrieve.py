"""End to end from a workspace: retrieve broadly, group by note, then select the records that apply."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .capsules import CandidateRecord, group_candidates
from .conditions import parse_conditions
from .rule import RuleSelector
from .scoring import attach_clause_cosines
from .selection import ApplicabilitySelection, Selector

if TYPE_CHECKING:
    from ..pipeline.workspace import Workspace


def retrieve_candidates(
    workspace: Workspace,
    query: str,
    lanes: Sequence[str] | None = None,
    scopes: Sequence[str] | str | None = None,
    refresh: bool = True,
    pool: int | None = None,
) -> tuple[list[CandidateRecord], list[dict[str, Any]]]:
    """Retrieve broadly: every lane, fused by rank, the first ``pool`` passages grouped by note.

    Returns the candidate records and each lane's report (name, status, candidates, reason).
    Notes outside the caller's ``scopes`` are dropped inside the lanes, as for packets.
    """
    from ..pipeline.candidates import visible
    from ..pipeline.requests import CANDIDATE_POOL, checked_lanes, checked_query, checked_scopes

    text = checked_query(query)
    chosen = checked_lanes(lanes) if lanes is not None else workspace.lanes
    if refresh:
        workspace.refresh()
    visible_to = checked_scopes(scopes)
    documents = workspace.records.documents()
    hidden = frozenset(
        p.id
        for path, doc in documents.items()
        if not visible(doc.facts, visible_to)
        for p in workspace.records.passages_of(path)
    )
    runs = workspace.run_lanes(text, chosen, hidden=hidden, unseen=hidden)
    ranked = workspace.rank(runs, text)
    candidates = group_candidates(ranked, pool or CANDIDATE_POOL)
    if "dense" in chosen:
        candidates = attach_clause_cosines(workspace, text, candidates, hidden)
    reports = [
        {
            "name": run.report.name,
            "status": run.report.status,
            "candidates": run.report.candidates,
            "reason": run.report.reason,
        }
        for run in runs.values()
    ]
    return candidates, reports


def select_applicable(
    workspace: Workspace,
    query: str,
    conditions: Mapping[str, Any] | Sequence[str] | None = None,
    intent: str = "orient",
    selector: Selector | None = None,
    lanes: Sequence[str] | None = None,
    scopes: Sequence[str] | str | None = None,
    refresh: bool = True,
) -> ApplicabilitySelection:
    """Retrieve broadly from ``workspace`` and keep the smallest set of records that applies."""
    from ..pipeline.requests import checked_intent

    intent = checked_intent(intent)
    parse_conditions(conditions)  # a malformed condition fails before any retrieval
    started = time.perf_counter()
    candidates, reports = retrieve_candidates(workspace, query, lanes, scopes, refresh)
    retrieved = (time.perf_counter() - started) * 1000
    selection = (selector or RuleSelector()).select(query.strip(), candidates, conditions, intent)
    return replace(selection, retrieval_ms=retrieved, lanes=tuple(reports))
