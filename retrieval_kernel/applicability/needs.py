"""The question's needs: which of its parts ask for something, and which record answers each part.

A query is split into parts by :func:`~retrieval_kernel.applicability.scoring.clause_texts`.
A part is a *need* when it asks (it starts with a question word or ends in ``?``) or
when it is brought in as a further matter ("separately ...", "also ...", "; ..."); the
other parts are context (they say where the question is, not what it asks). A
question of N needs gets at most N records, each the best for a need no kept record
answers yet (:func:`uncovered_needs`); a need no eligible record answers is an open
question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..pipeline.answerability import content_terms
from ..projections.lexical import analyze
from .calibration import Thresholds
from .conditions import MATCHED
from .scoring import MISSING_COSINE, QUERY_FILLER, Scored, clause_texts, query_terms, weighted_coverage

_ASKS = re.compile(
    r"^(?:how|what|what's|which|why|when|where|who|whom|whose|whether|should|shall|must|do|does|did|is|are|"
    r"can|could|would|will|any|anything)\b",
    re.IGNORECASE,
)
_FURTHER = re.compile(r"(?:separately|also|apart from|as well as|plus)\s*,?\s*$", re.IGNORECASE)
_BOTH = re.compile(r"\b(?:both|each of (?:them|these|those)|the two)\b", re.IGNORECASE)

MIN_SUBJECT_TERMS = 2  # a part naming fewer subject words is not a need of its own
# The lexical share of a part's weighted words counts this much beside the part's dense cosine.
LEXICAL_WEIGHT = 1.0
# Conditions decide: a record whose conditions match the task's answers a part this much better.
MATCHED_BONUS = 0.2


@dataclass(frozen=True)
class Need:
    """One part of the query that asks for something: its text, its index among the parts, its terms."""

    text: str
    index: int
    terms: tuple[str, ...]


def need_parts(query: str) -> list[Need]:
    """The parts of ``query`` that ask for something (at least one: the whole query when none asks)."""
    parts = clause_texts(query)
    needs = [
        Need(part, index, tuple(query_terms(part)))
        for index, part in enumerate(parts)
        if _asks(query, part) or (index > 0 and _further(query, part))
    ]
    if len(needs) == 1 and len(parts) > 1 and _BOTH.search(needs[0].text):
        needs = [
            Need(part, index, tuple(query_terms(part))) for index, part in enumerate(parts) if part != needs[0].text
        ]
    return needs or [Need(query, 0, tuple(query_terms(query)))]


def question_parts(query: str) -> list[Need]:
    """The parts of ``query`` (see :func:`clause_texts`) that name a subject, as possible needs.

    A part a kept record does not answer is answered by the record best for it, when the
    evidence is strong enough. A part with fewer than :data:`MIN_SUBJECT_TERMS` subject
    words ("what should we change") cannot single out a record and is not a need of its own.
    """
    parts = [Need(part, index, tuple(subject_terms(part))) for index, part in enumerate(clause_texts(query))]
    return [need for need in parts if len(need.terms) >= MIN_SUBJECT_TERMS]


def _asks(query: str, part: str) -> bool:
    if _ASKS.match(part):
        return True
    end = query.find(part) + len(part)
    return query[end : end + 1] == "?"


def _further(query: str, part: str) -> bool:
    start = query.find(part)
    before = query[max(0, start - 20) : start].rstrip()
    return bool(_FURTHER.search(before)) or before.endswith(";")


def part_score(item: Scored, need: Need, weights: dict[str, float], body_weight: float) -> float:
    """How well a record answers one need: its dense cosine with the part (above the floor) plus its word share."""
    candidate = item.candidate
    if candidate.clause_cosines and need.index < len(candidate.clause_cosines):
        cosine = candidate.clause_cosines[need.index]
    else:
        cosine = candidate.lanes["dense"][1] if "dense" in candidate.lanes else MISSING_COSINE
    mass = sum(weights.get(t, 0.0) for t in need.terms) or 1.0
    share = weighted_coverage(
        [t for t in need.terms if t in weights], weights, item.capsule_terms, item.body_terms, body_weight
    )
    branch = MATCHED_BONUS if item.check.state == MATCHED else 0.0
    return max(cosine, MISSING_COSINE) + LEXICAL_WEIGHT * share / mass + branch


def uncovered_needs(
    needs: Sequence[Need],
    kept: Sequence[Scored],
    pool: Sequence[Scored],
    weights: dict[str, float],
    body_weight: float,
    margin: float,
) -> list[Need]:
    """The needs no kept record answers within ``margin`` of the best eligible record."""
    open_needs = []
    for need in needs:
        best = max((part_score(s, need, weights, body_weight) for s in pool), default=0.0)
        mine = max((part_score(s, need, weights, body_weight) for s in kept), default=0.0)
        if mine < best - margin:
            open_needs.append(need)
    return open_needs


def ranked_for(
    need: Need, pool: Sequence[Scored], weights: dict[str, float], body_weight: float
) -> list[tuple[float, Scored]]:
    """``(part score, record)`` for ``need``, best first (ties: higher applicability score)."""
    scored = [(round(part_score(s, need, weights, body_weight), 6), s) for s in pool]
    return sorted(scored, key=lambda pair: (-pair[0], -pair[1].score))


def open_questions(
    query: str, kept: Sequence[Scored], scored: Sequence[Scored], weights: dict[str, float], limits: Thresholds
) -> tuple[str, ...]:
    """The asking parts of ``query`` (see :func:`need_parts`) no kept record answers.

    A part is open when no kept record reaches part score ``min_part`` on it and most of
    its subject words (:func:`subject_terms`) appear in no kept record: a part asking
    only "what should we change" is answered by whatever answers the rest.
    """
    parts = need_parts(query)
    if not kept:
        return tuple(need.text for need in parts if subject_terms(need.text))
    known = frozenset().union(*(item.capsule_terms | item.body_terms for item in kept))
    unanswered = []
    for need in parts:
        if max(part_score(item, need, weights, limits.body_weight) for item in kept) >= limits.min_part:
            continue
        subject = subject_terms(need.text)
        if len(subject) >= MIN_SUBJECT_TERMS and sum(term not in known for term in subject) * 2 > len(subject):
            unanswered.append(need.text)
    return tuple(unanswered)


def subject_terms(text: str) -> list[str]:
    """The words of ``text`` that say what it is about: content terms without generic asking verbs."""
    return [term for term in content_terms(text) if term not in GENERIC_VERBS and term not in QUERY_FILLER]


# Verbs that ask for a change without naming it ("what should we add / change / set up").
GENERIC_VERBS = frozenset(
    analyze("add change set setup fix structure structured start put place happen happens catch usual practice wrong")
)
