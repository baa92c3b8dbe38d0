"""The rule selector: hard rules first, then the smallest sufficient set of records by score.

See the package docstring (:mod:`retrieval_kernel.applicability`) for the steps.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from .calibration import Thresholds
from .capsules import CandidateRecord, Capsule
from .conditions import (
    ANALYZER,
    CONDITION_ORDER,
    CONTRADICTING,
    MATCHED,
    UNIVERSAL,
    ConditionCheck,
    check_conditions,
    context_of,
    folder_of,
    parse_conditions,
    task_conditions,
)
from .forks import ConditionFork, find_fork
from .needs import Need, open_questions, question_parts, ranked_for, uncovered_needs
from .scoring import MISSING_COSINE, Scored, score_candidates, weighted_coverage
from .selection import (
    BELOW_THRESHOLD,
    BEYOND_LIMIT,
    CONTRADICTING_CONDITION,
    DIAGNOSTIC_NO_CLAIMS,
    DISPUTED,
    DUPLICATE_RULE,
    NOT_NEEDED,
    OTHER_CONTEXT,
    SUPERSEDED,
    UNKNOWN_CONDITION,
    ApplicabilitySelection,
    RejectedCandidate,
    SelectedRecord,
    build_selection,
    reject,
)


def eligible_candidates(
    candidates: Sequence[CandidateRecord], task: Mapping[str, frozenset[str]], intent: str
) -> tuple[
    list[tuple[CandidateRecord, ConditionCheck]],
    list[tuple[CandidateRecord, ConditionCheck, str]],
    list[RejectedCandidate],
]:
    """Split candidates by the hard rules: eligible, history (kept aside for audit), rejected."""
    eligible, history, rejected = [], [], []
    for candidate in candidates:
        check = check_conditions(candidate.capsule, task)
        reason = hard_rejection(candidate.capsule, check)
        if reason is None:
            eligible.append((candidate, check))
        elif reason[0] in (SUPERSEDED, DISPUTED) and intent == "audit":
            history.append((candidate, check, reason[0]))
        else:
            rejected.append(reject(candidate, *reason))
    return eligible, history, rejected


class RuleSelector:
    """The deterministic selector (see the package docstring for the steps).

    ``thresholds`` default to the calibrated values in ``selector_calibration.json``.
    """

    name = "rule"

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds.load()

    def select(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        conditions: Mapping[str, Any] | Sequence[str] | None = None,
        intent: str = "orient",
    ) -> ApplicabilitySelection:
        started = time.perf_counter()
        stated = parse_conditions(conditions)
        task, matches = task_conditions(query, candidates, stated)
        eligible, history, rejected = eligible_candidates(candidates, task, intent)
        records, more, fork, open_questions = self._choose(query, candidates, eligible, task)
        rejected += more
        if history:
            kept, refused = self._history(query, candidates, history)
            records += kept
            rejected += refused
        selection = build_selection(
            query, intent, self.name, task, matches, records, rejected, len(candidates), started
        )
        return replace(selection, thresholds=self.thresholds.to_dict(), fork=fork, open_questions=open_questions)

    def _choose(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        eligible: Sequence[tuple[CandidateRecord, ConditionCheck]],
        task: Mapping[str, frozenset[str]],
    ) -> tuple[list[SelectedRecord], list[RejectedCandidate], ConditionFork | None, tuple[str, ...]]:
        """The records kept, the rest, a deciding condition left unknown, and the parts nothing answers."""
        scored, terms, weights = score_candidates(query, candidates, eligible, self.thresholds)
        scored, rejected = in_context(scored, context_of(candidates), self.thresholds.min_other_context)
        parts = question_parts(query)
        kept, more = pick(scored, terms, weights, self.thresholds, parts)
        rejected += more
        chosen = [item for item, _ in kept]
        fork = find_fork(chosen, scored, task, self.thresholds.min_keep)
        unanswered = open_questions(query, chosen, scored, weights, self.thresholds)
        records = [_selected(item, new, query) for item, new in kept]
        lead = (
            dense_leader(by_score(scored), self.thresholds)
            if kept and kept[0][0].score < self.thresholds.min_first
            else None
        )
        if records and lead is not None:  # kept below min_first: pick let the dense lane's leader in
            flag = (
                f"dense_lead: scores {kept[0][0].score:.2f}, below {self.thresholds.min_first:.2f}, and is kept "
                f"because the dense lane singles it out (cosine {lead[0]:.2f}, {lead[1]:.2f} above the next record)"
            )
            records[0] = replace(records[0], flags=(*records[0].flags, flag))
        if fork is not None:  # the caller states the condition; until then no side is returned
            records = [record for record in records if record.record not in fork.records]
        return records, rejected, fork, unanswered

    def _history(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        history: Sequence[tuple[CandidateRecord, ConditionCheck, str]],
    ) -> tuple[list[SelectedRecord], list[RejectedCandidate]]:
        """Under audit: superseded and disputed records scoring at least ``min_keep``, flagged as such."""
        scored, terms, _ = score_candidates(query, candidates, [(c, check) for c, check, _ in history], self.thresholds)
        kept, rejected = [], []
        for item, (candidate, _, reason) in zip(scored, history, strict=True):
            if item.score >= self.thresholds.min_keep:
                selected = _selected(item, [t for t in terms if t in item.capsule_terms], query)
                flag = f"{reason}: shown because the intent is audit"
                if candidate.capsule.superseded_by:
                    flag += f" (superseded by {', '.join(candidate.capsule.superseded_by)})"
                why = f"{reason} advice, for audit. {selected.why}"
                kept.append(replace(selected, flags=(*selected.flags, flag), why=why))
            else:
                rejected.append(reject(candidate, reason, f"{reason}; its score {item.score:.2f} is also low"))
        return kept, rejected


def pick(
    scored: Sequence[Scored],
    terms: Sequence[str],
    weights: Mapping[str, float],
    limits: Thresholds,
    needs: Sequence[Need] | None = None,
) -> tuple[list[tuple[Scored, list[str]]], list[RejectedCandidate]]:
    """Keep the smallest sufficient set of scored records: ``[(record, query terms it newly covers)]`` and the rest.

    Visited by score (ties: matched conditions, universal, unknown; then fused rank):
    a second record of a ``rule`` is a duplicate; nothing is kept when the best score
    is below ``min_first``, unless that record is the dense lane's clear leader
    (:func:`dense_leader`: a far-phrased question), which is then kept alone. A further
    record must be the best answer to a part of the question (``needs``, see
    :mod:`.needs`) that no kept record answers, with part score ``min_part`` and
    applicability ``min_keep``; without ``needs`` it must newly cover ``min_gain`` of the
    query's weighted words.
    """
    ordered = by_score(scored)
    best = ordered[0].score if ordered else 0.0
    if best < limits.min_first:
        if dense_leader(ordered, limits) is None:
            detail = f"the best score, {best:.2f}, is below {limits.min_first:.2f}: none applies"
            return [], [reject(s.candidate, BELOW_THRESHOLD, f"score {s.score:.2f}; {detail}") for s in ordered]
        chosen = ordered[:1]  # far phrasing: the words differ, and the dense lane singles this record out
    elif needs is None:
        chosen = _by_gain(ordered, terms, weights, limits)
    else:
        chosen = _by_needs(ordered, weights, limits, needs)
    kept_ids = {item.candidate.record for item in chosen}
    rejected = [
        _why_not(item, chosen, weights, limits, needs) for item in ordered if item.candidate.record not in kept_ids
    ]
    covered: set[str] = set()
    kept: list[tuple[Scored, list[str]]] = []
    for item in chosen:
        new = [t for t in terms if t not in covered and (t in item.capsule_terms or t in item.body_terms)]
        covered.update(new)
        kept.append((item, new))
    # Records whose conditions match come before universal ones, then those with unknown conditions.
    kept.sort(key=lambda pair: (CONDITION_ORDER[pair[0].check.state], -pair[0].score))
    return kept, rejected


def by_score(scored: Sequence[Scored]) -> list[Scored]:
    """Records by applicability score (ties: matched conditions, universal, unknown; then fused rank)."""
    return sorted(scored, key=lambda s: (-round(s.score, 9), CONDITION_ORDER[s.check.state], s.candidate.rank))


def dense_leader(ordered: Sequence[Scored], limits: Thresholds) -> tuple[float, float] | None:
    """``(cosine, lead)`` when the best-scoring record is also the dense lane's clear leader among ``ordered``:
    cosine at least ``lead_cosine`` and at least ``lead_margin`` above every other record's; else ``None``."""
    if not ordered:
        return None
    cosine = ordered[0].features[0]
    runner = max((item.features[0] for item in ordered[1:]), default=MISSING_COSINE)
    if cosine >= limits.lead_cosine and cosine - runner >= limits.lead_margin:
        return cosine, cosine - runner
    return None


def _by_gain(
    ordered: Sequence[Scored], terms: Sequence[str], weights: Mapping[str, float], limits: Thresholds
) -> list[Scored]:
    """Further records by score, each newly covering ``min_gain`` of the query's weighted words."""
    total = sum(weights.values()) or 1.0
    kept: list[Scored] = []
    covered: set[str] = set()
    for item in ordered:
        if len(kept) >= limits.max_records or _duplicate(item, kept):
            continue
        if kept and item.score < max(limits.min_keep, limits.min_ratio * kept[0].score):
            continue
        new = [t for t in terms if t not in covered and (t in item.capsule_terms or t in item.body_terms)]
        gain = weighted_coverage(new, weights, item.capsule_terms, item.body_terms, limits.body_weight) / total
        if kept and gain < limits.min_gain:
            continue
        covered.update(new)
        kept.append(item)
    return kept


def _by_needs(
    ordered: Sequence[Scored], weights: Mapping[str, float], limits: Thresholds, needs: Sequence[Need]
) -> list[Scored]:
    """The best record, then for each part no kept record answers, the record that answers it best.

    That record needs part score ``min_part``, and either applicability ``min_keep`` or a
    lead of ``part_lead`` over the next record on that part (it alone answers it).
    """
    kept = [ordered[0]]
    weights = dict(weights)
    while len(kept) < limits.max_records:
        pool = [s for s in ordered if s not in kept and not _duplicate(s, kept)]
        floor = max(limits.min_keep, limits.min_ratio * kept[0].score)
        found = []
        for need in uncovered_needs(needs, kept, ordered, weights, limits.body_weight, limits.cover_margin):
            ranked = ranked_for(need, pool, weights, limits.body_weight)
            if not ranked or ranked[0][0] < limits.min_part:
                continue
            (top, item), runner = ranked[0], (ranked[1][0] if len(ranked) > 1 else 0.0)
            if item.score >= floor or top - runner >= limits.part_lead:
                found.append(item)
        if not found:
            break
        kept.append(max(found, key=lambda s: s.score))
    return kept


def _duplicate(item: Scored, kept: Sequence[Scored]) -> Scored | None:
    rule = item.candidate.capsule.rule
    return next((k for k in kept if rule and k.candidate.capsule.rule == rule), None)


def _why_not(
    item: Scored,
    kept: Sequence[Scored],
    weights: Mapping[str, float],
    limits: Thresholds,
    needs: Sequence[Need] | None,
) -> RejectedCandidate:
    """Why a scored record was left out: a duplicate rule, too low a score, a limit, or nothing left to answer."""
    candidate = item.candidate
    same = _duplicate(item, kept)
    if same is not None:
        return reject(
            candidate,
            DUPLICATE_RULE,
            f"teaches rule {candidate.capsule.rule!r}, already given by {same.candidate.record}",
        )
    floor = max(limits.min_keep, limits.min_ratio * kept[0].score)
    if item.score < floor:
        return reject(candidate, BELOW_THRESHOLD, f"score {item.score:.2f} is below {floor:.2f}")
    if len(kept) >= limits.max_records:
        return reject(candidate, BEYOND_LIMIT, f"already {limits.max_records} records")
    by = ", ".join(k.candidate.record for k in kept)
    what = "the query's words" if needs is None else "every part of the question"
    return reject(candidate, NOT_NEEDED, f"score {item.score:.2f}; {by} already answer {what}")


def in_context(
    scored: Sequence[Scored], context: str | None, min_score: float
) -> tuple[list[Scored], list[RejectedCandidate]]:
    """Records in the question's context (the folder of its leading candidates, :func:`context_of`),
    and those outside it unless they score ``min_score``: another family's advice rarely applies."""
    inside: list[Scored] = []
    rejected: list[RejectedCandidate] = []
    for item in scored:
        folder = folder_of(item.candidate.capsule.path)
        if context is None or folder == context or item.score >= min_score:
            inside.append(item)
        else:
            detail = f"in {folder or 'the top folder'}, outside the question's context ({context or 'the top folder'})"
            rejected.append(reject(item.candidate, OTHER_CONTEXT, detail))
    return inside, rejected


def hard_rejection(capsule: Capsule, check: ConditionCheck) -> tuple[str, str] | None:
    """The rule that excludes a record whatever the query: ``(reason, detail)`` or ``None``."""
    if capsule.is_diagnostic:
        if capsule.derived and capsule.kind != "diagnostic":
            return DIAGNOSTIC_NO_CLAIMS, "no claims in its front matter, and no sentence of it states a rule or value"
        return DIAGNOSTIC_NO_CLAIMS, "a symptom write-up with no claim or fix"
    if check.state == CONTRADICTING:
        return CONTRADICTING_CONDITION, "; ".join(check.contradicting)
    if capsule.status == "superseded":
        successor = f" by {', '.join(capsule.superseded_by)}" if capsule.superseded_by else ""
        return SUPERSEDED, f"superseded{successor}"
    if capsule.status == "disputed":
        against = f": {capsule.contradicts[0]}" if capsule.contradicts else ""
        return DISPUTED, f"its advice is disputed{against}"
    return None


def _selected(item: Scored, new_terms: Sequence[str], query: str) -> SelectedRecord:
    candidate, check = item.candidate, item.check
    flags: list[str] = []
    if check.state == MATCHED:
        conditions = f"its conditions match the task ({', '.join(check.matched)})"
    elif check.state == UNIVERSAL:
        conditions = "it holds under any conditions"
    else:
        conditions = f"its conditions are not stated by the task ({', '.join(check.unknown)})"
        flags.append(f"{UNKNOWN_CONDITION}: {', '.join(check.unknown)} not stated; check it applies")
    if candidate.capsule.critical:
        flags.append("critical")
    if candidate.capsule.derived:
        flags.append("derived_claims: read from the note's text (it has no claims capsule)")
    words = _need_words(query, new_terms)
    why = f"Covers {', '.join(words) or 'the query'}; {conditions}; status {candidate.capsule.status or 'unknown'}."
    return SelectedRecord(
        record=candidate.record,
        path=candidate.capsule.path,
        title=candidate.capsule.title,
        why=why,
        needs=tuple(words),
        conditions=check.state,
        flags=tuple(flags),
        relevance=item.score,
        rank=candidate.rank,
        passages=candidate.passages,
        capsule=candidate.capsule,
    )


def _need_words(query: str, terms: Sequence[str]) -> list[str]:
    """The query's own words behind ``terms`` (stems), in query order."""
    wanted = set(terms)
    words: dict[str, str] = {}
    for token in ANALYZER(query, chars=True):
        if token.text in wanted:
            words.setdefault(token.text, query[token.startchar : token.endchar])
    return list(words.values())
