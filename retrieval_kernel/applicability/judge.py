"""A judge with a budget and a fallback: a user-supplied judge (e.g. an LLM call), else the rule selector."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import InputError
from .capsules import CandidateRecord
from .conditions import UNKNOWN, check_conditions, parse_conditions, task_conditions
from .rule import RuleSelector, hard_rejection
from .selection import (
    DISPUTED,
    DUPLICATE_RULE,
    NOT_SELECTED_BY_JUDGE,
    SUPERSEDED,
    UNKNOWN_CONDITION,
    ApplicabilitySelection,
    RejectedCandidate,
    SelectedRecord,
    Selector,
    build_selection,
    reject,
)

Judge = Callable[[str, list[dict[str, Any]], dict[str, list[str]]], Any]


class JudgeSelector:
    """An external judge (e.g. an LLM call) with a time budget; the rule selector when it is late or fails.

    ``judge(query, capsules, conditions)`` gets the candidates' capsules (as dicts, with
    their record id, rank and text) and the task's conditions, and returns the record
    ids that apply: a list, or a mapping ``{record: why}``. Unknown ids are ignored.
    With ``enforce_rules`` (default) the hard rules still hold after the judge:
    diagnostic notes, contradicting conditions, superseded and disputed advice
    (unless the intent is audit) and a second record of one rule are rejected.
    A judge still running after ``budget_s`` seconds is abandoned (its thread is a
    daemon) and the fallback's selection is returned with ``fallback`` saying why.
    """

    def __init__(
        self,
        judge: Judge,
        budget_s: float = 1.95,
        fallback: Selector | None = None,
        enforce_rules: bool = True,
        name: str = "judge",
    ) -> None:
        if budget_s <= 0:
            raise InputError(f"the judge's time budget must be positive, not {budget_s}")
        self.judge = judge
        self.budget_s = budget_s
        self.fallback = fallback or RuleSelector()
        self.enforce_rules = enforce_rules
        self.name = name

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
        payload = [{**c.capsule.to_dict(), "rank": c.rank, "text": c.text} for c in candidates]
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def call() -> None:
            try:
                outcome["value"] = self.judge(query, payload, {k: sorted(v) for k, v in task.items()})
            except BaseException as exc:  # reported to the caller's thread as a fallback reason
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=call, name=f"rk-judge-{self.name}", daemon=True).start()
        reason = None
        if not done.wait(self.budget_s):
            reason = f"the judge took longer than its {self.budget_s:g} s budget"
        elif "error" in outcome:
            error = outcome["error"]
            reason = f"the judge failed: {type(error).__name__}: {error}"
        else:
            try:
                chosen = _judge_choice(outcome.get("value"))
            except (TypeError, ValueError) as exc:
                reason = f"the judge returned an unusable answer: {exc}"
        if reason is not None:
            selection = self.fallback.select(query, candidates, conditions, intent)
            elapsed = (time.perf_counter() - started) * 1000
            return replace(
                selection, selector=f"{self.name}->{selection.selector}", fallback=reason, selection_ms=elapsed
            )
        records, rejected = self._apply(query, candidates, task, chosen, intent)
        return build_selection(query, intent, self.name, task, matches, records, rejected, len(candidates), started)

    def _apply(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        task: Mapping[str, frozenset[str]],
        chosen: dict[str, str],
        intent: str,
    ) -> tuple[list[SelectedRecord], list[RejectedCandidate]]:
        by_id = {c.record: c for c in candidates}
        records: list[SelectedRecord] = []
        rejected: list[RejectedCandidate] = []
        rules: dict[str, str] = {}
        for candidate in candidates:
            if candidate.record not in chosen:
                rejected.append(reject(candidate, NOT_SELECTED_BY_JUDGE, "the judge did not choose it"))
        for record, why in chosen.items():
            if record not in by_id:
                continue
            candidate = by_id[record]
            check = check_conditions(candidate.capsule, task)
            if self.enforce_rules:
                reason = hard_rejection(candidate.capsule, check)
                if reason and not (reason[0] in (SUPERSEDED, DISPUTED) and intent == "audit"):
                    rejected.append(reject(candidate, *reason))
                    continue
                rule = candidate.capsule.rule
                if rule and rule in rules:
                    rejected.append(
                        reject(candidate, DUPLICATE_RULE, f"teaches rule {rule!r}, already given by {rules[rule]}")
                    )
                    continue
                if rule:
                    rules[rule] = record
            flags = [f"{UNKNOWN_CONDITION}: {', '.join(check.unknown)} not stated"] if check.state == UNKNOWN else []
            records.append(
                SelectedRecord(
                    record=record,
                    path=candidate.capsule.path,
                    title=candidate.capsule.title,
                    why=why or "chosen by the judge",
                    needs=(),
                    conditions=check.state,
                    flags=tuple(flags),
                    rank=candidate.rank,
                    passages=candidate.passages,
                    capsule=candidate.capsule,
                )
            )
        return records, rejected


def _judge_choice(value: Any) -> dict[str, str]:
    """A judge's answer as ``{record: why}`` (order kept)."""
    if isinstance(value, Mapping):
        return {str(key): "" if why is None else str(why) for key, why in value.items()}
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"expected a list of record ids or a mapping of id to reason, got {type(value).__name__}")
    return {str(item): "" for item in value}
