"""``needs_condition``: when the task leaves unknown a condition that decides between records.

A kept record whose ``applies_when`` names a key the task does not state is one side
of a fork when another eligible record, scoring at least ``min_keep``, applies for a
different value of that key. The selection then says so (the condition and the
records on each side) so the caller can ask, rather than returning one side with a
flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .scoring import Scored

NEEDS_CONDITION = "needs_condition"


@dataclass(frozen=True)
class ConditionFork:
    """A deciding condition the task does not state, and the records for each of its values."""

    key: str
    sides: Mapping[str, tuple[str, ...]]  # value -> records that apply under it

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "sides": {value: list(records) for value, records in self.sides.items()}}

    def describe(self) -> str:
        sides = "; ".join(f"{self.key}={value}: {', '.join(records)}" for value, records in self.sides.items())
        return f"the task does not say which {self.key} applies ({sides})"


def find_fork(
    kept: Sequence[Scored], scored: Sequence[Scored], task: Mapping[str, frozenset[str]], min_score: float
) -> ConditionFork | None:
    """The first condition the task leaves open on which a kept (or closely scoring) record depends and
    another record scoring ``min_score`` decides otherwise."""
    close = [s for s in scored if s.score >= min_score and s not in kept]
    for item in [*kept, *close]:
        for key in item.check.unknown:
            if key in task:
                continue
            sides: dict[str, list[str]] = {}
            for other in scored:
                values = other.candidate.capsule.applies_when.get(key)
                if not values or (other.score < min_score and other not in kept):
                    continue
                for value in values:
                    sides.setdefault(value, []).append(other.candidate.record)
            if len(sides) >= 2 and len({frozenset(r) for r in sides.values()}) >= 2:
                return ConditionFork(key, {value: tuple(records) for value, records in sorted(sides.items())})
    return None
