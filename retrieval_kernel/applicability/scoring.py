"""Relevance: the query's content terms and parts, each eligible record's features and applicability score.

The score is ``sigmoid(bias + weights . features)`` over
:data:`~retrieval_kernel.applicability.calibration.FEATURES`, with query words
weighted by BM25 idf over the candidate pool.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..projections.lexical import analyze
from .calibration import Thresholds
from .capsules import CandidateRecord
from .conditions import MATCHED, UNKNOWN, ConditionCheck

if TYPE_CHECKING:
    from ..pipeline.workspace import Workspace

MISSING_COSINE = 0.3  # below the dense lane's floor (0.32): what a record the dense lane did not propose counts as

# Words of a question that say nothing about its subject (the analyzer already drops
# English stop words); they never count as query words a record must cover.
QUERY_FILLER = frozenset(
    analyze(
        "how what which why when where who whom whose should would could shall must might do does did done "
        "need needs needed want wants use uses using used make makes right best way ways correct correctly "
        "properly proper good go going get gets got know tell recommend recommended advice approach handle "
        "handling deal dealing our ours my mine me i us we they them their there here anything something "
        "thing things any some also just now currently really actually please help okay ok"
    )
)


def query_terms(query: str) -> list[str]:
    """The query's content terms: analysed, without :data:`QUERY_FILLER`."""
    return list(_query_terms(query))


@functools.lru_cache(maxsize=1024)
def _query_terms(query: str) -> tuple[str, ...]:
    return tuple(term for term in analyze(query) if term not in QUERY_FILLER)


_CLAUSE_BREAK = re.compile(
    r"[.?!;:]+(?:\s+|$)|,?\s+(?:and also|also|separately|apart from|as well as|plus)\b,?|,\s+and\s+"
    r"|\s+and\s+(?=(?:how|what|why|which|when|where|who|should|do|does|is|are|can)\b)",
    re.IGNORECASE,
)


def clause_texts(query: str) -> list[str]:
    """The query's parts (its distinct needs, roughly), as text.

    Parts break at sentence ends, ``;`` and ``:``, ", and", "and" before a question
    word ("and how ..."), and the words "also", "separately", "apart from", "as well
    as", "plus". A part without content terms is dropped.
    """
    return list(_clause_texts(query))


@functools.lru_cache(maxsize=1024)
def _clause_texts(query: str) -> tuple[str, ...]:
    parts = tuple(part.strip() for part in _CLAUSE_BREAK.split(query) if part and query_terms(part))
    return parts or (query,)


def clauses(query: str) -> list[list[str]]:
    """The query's parts as content terms (see :func:`clause_texts`)."""
    return [query_terms(part) for part in clause_texts(query)]


def attach_clause_cosines(
    workspace: Workspace, query: str, candidates: Sequence[CandidateRecord], hidden: frozenset[str] = frozenset()
) -> list[CandidateRecord]:
    """Each candidate's dense cosine with each part of a multi-part query (one dense search per part).

    A candidate the dense lane does not propose for a part counts :data:`MISSING_COSINE`.
    Single-part queries and workspaces without a dense lane are returned unchanged.
    """
    parts = clause_texts(query)
    if len(parts) < 2 or "dense" not in workspace.lanes:
        return list(candidates)
    per_part: list[dict[str, float]] = []
    for part in parts:
        run = workspace.run_lanes(part, ["dense"], hidden=hidden)["dense"]
        per_part.append(dict(run.ranking))
    attached = []
    for candidate in candidates:
        ids = [p.id for p in candidate.passages]
        cosines = tuple(max((found[i] for i in ids if i in found), default=MISSING_COSINE) for found in per_part)
        attached.append(replace(candidate, clause_cosines=cosines))
    return attached


@dataclass(frozen=True)
class Scored:
    candidate: CandidateRecord
    check: ConditionCheck
    capsule_terms: frozenset[str]
    body_terms: frozenset[str]
    features: tuple[float, ...]
    score: float


def _sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, value))))


def score_candidates(
    query: str,
    pool: Sequence[CandidateRecord],
    eligible: Sequence[tuple[CandidateRecord, ConditionCheck]],
    params: Thresholds,
) -> tuple[list[Scored], list[str], dict[str, float]]:
    """Features and applicability score of each eligible record; also the query terms and their weights.

    Word weights are BM25 idf over the whole candidate pool, so words every
    candidate shares count little and words no candidate holds count most.
    """
    terms = query_terms(query)
    weights = _weights(terms, pool)
    total = sum(weights.values()) or 1.0
    parts = [(part, sum(weights[t] for t in part) or 1.0) for part in clauses(query)]
    cosines = [c.lanes["dense"][1] for c in pool if "dense" in c.lanes]
    best_cosine = max(cosines, default=MISSING_COSINE)
    lexical = [c.lanes["lexical"][1] for c in pool if "lexical" in c.lanes]
    best_lexical = max(lexical, default=0.0) or 1.0
    rows: list[tuple[CandidateRecord, ConditionCheck, list[float], list[float]]] = []
    for candidate, check in eligible:
        capsule_terms, body_terms = candidate.capsule_terms, candidate.body_terms
        cosine = candidate.lanes["dense"][1] if "dense" in candidate.lanes else MISSING_COSINE
        lex = candidate.lanes["lexical"][1] if "lexical" in candidate.lanes else 0.0
        per_part = [
            weighted_coverage(part, weights, capsule_terms, body_terms, params.body_weight) / mass
            for part, mass in parts
        ]
        features = [
            cosine,
            best_cosine - cosine,
            lex / best_lexical,
            weighted_coverage(terms, weights, capsule_terms, frozenset(), 0.0) / total,
            weighted_coverage(terms, weights, capsule_terms, body_terms, params.body_weight) / total,
            max(per_part, default=0.0),
            0.0,  # clause_best, set below
            max(candidate.clause_cosines, default=cosine),
            0.0,  # clause_cosine_best, set below
            1.0 if check.state == MATCHED else 0.0,
            1.0 if check.state == UNKNOWN else 0.0,
            1.0 / candidate.rank,
        ]
        rows.append((candidate, check, features, per_part))
    for index in range(len(parts)):
        best = max((row[3][index] for row in rows), default=0.0)
        for row in rows:
            if best > 0 and row[3][index] == best:
                row[2][6] = 1.0
    width = max((len(row[0].clause_cosines) for row in rows), default=0)
    for index in range(max(width, 1)):
        closest = [_part_cosine(row[0], index) for row in rows]
        best = max(closest, default=MISSING_COSINE)
        for row, value in zip(rows, closest, strict=True):
            if best > MISSING_COSINE and value == best:
                row[2][8] = 1.0
    scored = []
    for candidate, check, features, _ in rows:
        value = params.bias + sum(w * x for w, x in zip(params.weights, features, strict=True))
        scored.append(
            Scored(candidate, check, candidate.capsule_terms, candidate.body_terms, tuple(features), _sigmoid(value))
        )
    return scored, terms, weights


def _part_cosine(candidate: CandidateRecord, index: int) -> float:
    if candidate.clause_cosines:
        return candidate.clause_cosines[index] if index < len(candidate.clause_cosines) else MISSING_COSINE
    return candidate.lanes["dense"][1] if "dense" in candidate.lanes else MISSING_COSINE


def _weights(terms: Sequence[str], candidates: Sequence[CandidateRecord]) -> dict[str, float]:
    """Each query term's weight: BM25's idf over the candidate pool (rare there = distinctive)."""
    pool = [c.capsule_terms | c.body_terms for c in candidates]
    size = len(pool)
    return {t: math.log(1 + (size - df + 0.5) / (df + 0.5)) for t in terms for df in [sum(t in s for s in pool)]}


def weighted_coverage(
    terms: Iterable[str],
    weights: Mapping[str, float],
    capsule: frozenset[str],
    body: frozenset[str],
    body_weight: float,
) -> float:
    return sum(weights[t] if t in capsule else weights[t] * body_weight if t in body else 0.0 for t in terms)
