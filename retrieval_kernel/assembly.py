"""Assembly: turn ranked candidates into evidence that fits the budget.

Candidates are taken in fused-rank order. Each one enters whole if the packet
still fits; otherwise it is cut back by whole lines from its end (its cited
range shrinks and it is marked ``truncated``); if not even its first line fits,
it is left out and counted under ``exclusions["budget"]``. The budget always
covers the whole serialized packet, so an answer can never exceed it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .errors import BudgetTooSmallError
from .freshness import fresh_for_days, freshness_label, source_age_days
from .notes import HEADING_LINE
from .packet import Evidence, LaneHit, Packet, evidence_dict, serialize
from .records import StoredPassage

ABSTAIN_NOTHING_FITS = "no_evidence_fits_budget"


@dataclass(frozen=True)
class RankedCandidate:
    """A passage proposed by the lanes, in fused order."""

    stored: StoredPassage
    score: float
    retrieved_by: tuple[LaneHit, ...]
    matched_terms: tuple[str, ...] = ()


def assemble(shell: Packet, candidates: Sequence[RankedCandidate], as_of: dt.date, top: int) -> Packet:
    """Fill ``shell`` (a packet without evidence) with up to ``top`` candidates that fit.

    Raises ``BudgetTooSmallError`` when even a packet without evidence exceeds the budget.
    """
    reason = ABSTAIN_NOTHING_FITS if candidates else shell.abstention_reason
    empty = _packet(shell, [], min(top, len(candidates)), reason)
    if empty.budget.used > shell.budget.limit:
        raise BudgetTooSmallError(
            f"a packet for this query needs at least {empty.budget.used:,} {shell.budget.unit} "
            f"even without evidence; the budget is {shell.budget.limit:,}",
            minimum=empty.budget.used,
        )
    room = _Room(shell, worst_left_out=len(candidates))
    admitted: list[Evidence] = []
    left_out = 0
    for candidate in candidates[:top]:
        item = _fit(room, _evidence(candidate, len(admitted) + 1, as_of))
        if item is None:
            left_out += 1
        else:
            admitted.append(item)
            room.take(item)
    return _packet(shell, admitted, left_out, None) if admitted else empty


class _Room:
    """What is left of the budget, by arithmetic instead of re-serializing the packet.

    The packet is measured once without evidence, with the largest ``budget.used``
    and left-out count it could show (so their digits can only shrink); each item
    then adds its own serialized size plus a comma. The final packet is measured
    exactly and can only be smaller than this estimate.
    """

    def __init__(self, shell: Packet, worst_left_out: int) -> None:
        self.budget = shell.budget
        frame = replace(
            shell,
            evidence=(),
            abstained=False,
            abstention_reason=None,
            exclusions={"budget": worst_left_out},
            budget=replace(shell.budget, used=shell.budget.limit),
        )
        self.used = frame.size()
        self.items = 0

    def cost(self, item: Evidence) -> int:
        return self.budget.measure(serialize(evidence_dict(item))) + (1 if self.items else 0)

    def fits(self, item: Evidence) -> bool:
        return self.used + self.cost(item) <= self.budget.limit

    def take(self, item: Evidence) -> None:
        self.used += self.cost(item)
        self.items += 1


def _packet(shell: Packet, admitted: list[Evidence], left_out: int, abstention: str | None) -> Packet:
    return replace(
        shell,
        evidence=tuple(admitted),
        abstained=not admitted,
        abstention_reason=None if admitted else abstention,
        exclusions={"budget": left_out},
    ).with_measured_budget()


def _fit(room: _Room, item: Evidence) -> Evidence | None:
    """``item`` whole, or cut to the most leading lines that fit, or ``None``."""
    fits = room.fits
    if fits(item):
        return item
    lines = item.excerpt.split("\n")
    shortest = _shortest_useful(lines)
    if shortest >= len(lines) or not fits(_cut(item, lines, shortest)):
        return None
    low, high = shortest, len(lines) - 1  # invariant: `low` lines fit, `high + 1` do not
    while low < high:
        middle = (low + high + 1) // 2
        if fits(_cut(item, lines, middle)):
            low = middle
        else:
            high = middle - 1
    return _cut(item, lines, low)


def _shortest_useful(lines: list[str]) -> int:
    """Fewest leading lines that include one line of content (not blank, not a heading)."""
    for index, line in enumerate(lines):
        if line.strip() and not HEADING_LINE.match(line):
            return index + 1
    return len(lines)


def _cut(item: Evidence, lines: list[str], keep: int) -> Evidence:
    while keep > 1 and not lines[keep - 1].strip():
        keep -= 1
    return replace(item, excerpt="\n".join(lines[:keep]), line_end=item.line_start + keep - 1, truncated=True)


def _evidence(candidate: RankedCandidate, rank: int, as_of: dt.date) -> Evidence:
    stored = candidate.stored
    passage = stored.passage
    age = source_age_days(stored.observed_at, as_of)
    window = fresh_for_days(stored.metadata)
    return Evidence(
        ref=f"e{rank}",
        id=passage.id,
        path=passage.path,
        line_start=passage.line_start,
        line_end=passage.line_end,
        excerpt=passage.text,
        module=passage.module,
        heading=passage.heading,
        observed_at=stored.observed_at,
        source_age_days=age,
        freshness=freshness_label(age, window),
        fresh_for_days=window,
        indexed_at=stored.indexed_at,
        live_verified=False,
        authority=_text_or_none(stored.metadata.get("authority")),
        status=_text_or_none(stored.metadata.get("status")),
        retrieved_by=candidate.retrieved_by,
        rank=rank,
        score=candidate.score,
        reason=_reason(candidate),
        truncated=False,
    )


def _reason(candidate: RankedCandidate) -> str:
    lanes = ", ".join(f"{hit.lane} #{hit.rank}" for hit in candidate.retrieved_by)
    if not candidate.matched_terms:
        return f"ranked by {lanes}"
    return f"ranked by {lanes}; matched terms: {', '.join(candidate.matched_terms)}"


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)
