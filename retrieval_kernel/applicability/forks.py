"""``needs_condition``: when the task leaves unknown a condition that decides between records.

A kept record whose ``applies_when`` names a key the task does not state is one side
of a fork when another eligible record, scoring at least ``min_keep``, applies for a
different value of that key. The selection then says so (the condition and the
records on each side) so the caller can ask, rather than returning one side with a
flag: the records on a side leave ``records`` (those that apply whatever the value
stay) and are named, with their paths, in the fork.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .scoring import Scored

NEEDS_CONDITION = "needs_condition"


@dataclass(frozen=True)
class ConditionFork:
    """A deciding condition the task does not state, and the records for each of its values."""

    key: str
    sides: Mapping[str, tuple[str, ...]]  # value -> records that apply under it
    paths: Mapping[str, str] = field(default_factory=dict)  # record -> its note's path

    @property
    def records(self) -> frozenset[str]:
        """Every record on some side of the fork."""
        return frozenset(record for records in self.sides.values() for record in records)

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
            paths: dict[str, str] = {}
            for other in scored:
                values = other.candidate.capsule.applies_when.get(key)
                if not values or (other.score < min_score and other not in kept):
                    continue
                paths[other.candidate.record] = other.candidate.capsule.path
                for value in values:
                    sides.setdefault(value, []).append(other.candidate.record)
            if len(sides) >= 2 and len({frozenset(r) for r in sides.values()}) >= 2:
                chosen = {value: tuple(records) for value, records in sorted(sides.items())}
                return ConditionFork(key, chosen, paths)
    return None
