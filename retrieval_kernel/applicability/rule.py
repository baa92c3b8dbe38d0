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
    parse_conditions,
    task_conditions,
)
from .scoring import Scored, score_candidates, weighted_coverage
from .selection import (
    BELOW_THRESHOLD,
    BEYOND_LIMIT,
    CONTRADICTING_CONDITION,
    DIAGNOSTIC_NO_CLAIMS,
    DISPUTED,
    DUPLICATE_RULE,
    NOT_NEEDED,
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
        records, more = self._choose(query, candidates, eligible)
        rejected += more
        if history:
            kept, refused = self._history(query, candidates, history)
            records += kept
            rejected += refused
        selection = build_selection(
            query, intent, self.name, task, matches, records, rejected, len(candidates), started
        )
        return replace(selection, thresholds=self.thresholds.to_dict())

    def _choose(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        eligible: Sequence[tuple[CandidateRecord, ConditionCheck]],
    ) -> tuple[list[SelectedRecord], list[RejectedCandidate]]:
        scored, terms, weights = score_candidates(query, candidates, eligible, self.thresholds)
        kept, rejected = pick(scored, terms, weights, self.thresholds)
        return [_selected(item, new, query) for item, new in kept], rejected

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
    scored: Sequence[Scored], terms: Sequence[str], weights: Mapping[str, float], limits: Thresholds
) -> tuple[list[tuple[Scored, list[str]]], list[RejectedCandidate]]:
    """Keep the smallest sufficient set of scored records: ``[(record, query terms it newly covers)]`` and the rest.

    Visited by score (ties: matched conditions, universal, unknown; then fused rank):
    a second record of a ``rule`` is a duplicate; nothing is kept when the best score
    is below ``min_first``; a further record needs ``min_keep`` and ``min_gain``.
    """
    total = sum(weights.values()) or 1.0
    ordered = sorted(scored, key=lambda s: (-round(s.score, 9), CONDITION_ORDER[s.check.state], s.candidate.rank))
    best = ordered[0].score if ordered else 0.0
    kept: list[tuple[Scored, list[str]]] = []
    rejected: list[RejectedCandidate] = []
    covered: set[str] = set()
    rules: dict[str, str] = {}
    for item in ordered:
        candidate = item.candidate
        rule = candidate.capsule.rule
        if rule and rule in rules:
            rejected.append(reject(candidate, DUPLICATE_RULE, f"teaches rule {rule!r}, already given by {rules[rule]}"))
            continue
        if best < limits.min_first:
            detail = f"score {item.score:.2f}; the best, {best:.2f}, is below {limits.min_first:.2f}: none applies"
            rejected.append(reject(candidate, BELOW_THRESHOLD, detail))
            continue
        floor = max(limits.min_keep, limits.min_ratio * best)
        if kept and item.score < floor:
            rejected.append(reject(candidate, BELOW_THRESHOLD, f"score {item.score:.2f} is below {floor:.2f}"))
            continue
        new = [t for t in terms if t not in covered and (t in item.capsule_terms or t in item.body_terms)]
        gain = weighted_coverage(new, weights, item.capsule_terms, item.body_terms, limits.body_weight) / total
        if kept and gain < limits.min_gain:
            detail = f"adds {gain:.2f} new query coverage (< {limits.min_gain:.2f}); kept records cover it"
            rejected.append(reject(candidate, NOT_NEEDED, detail))
            continue
        if len(kept) >= limits.max_records:
            rejected.append(reject(candidate, BEYOND_LIMIT, f"already {limits.max_records} records"))
            continue
        covered.update(new)
        if rule:
            rules[rule] = candidate.record
        kept.append((item, new))
    # Records whose conditions match come before universal ones, then those with unknown conditions.
    kept.sort(key=lambda pair: (CONDITION_ORDER[pair[0].check.state], -pair[0].score))
    return kept, rejected


def hard_rejection(capsule: Capsule, check: ConditionCheck) -> tuple[str, str] | None:
    """The rule that excludes a record whatever the query: ``(reason, detail)`` or ``None``."""
    if capsule.is_diagnostic:
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
