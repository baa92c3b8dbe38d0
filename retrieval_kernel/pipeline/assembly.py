"""Assembly: turn the policy's selection into evidence that fits the budget.

Admitted items are taken in the policy's order (then, under audit, historical
ones). Each enters whole if the packet still fits; otherwise it is cut back by
whole lines from its end (its cited range shrinks and it is marked
``truncated``); if not even its first line fits, it is left out and counted
under ``exclusions["budget"]``. Evidence is numbered ``e1``, ``e2``... in packet
order and conflicts cite those refs (or the passage id of a side kept out). The
budget always covers the whole serialized packet, so an answer never exceeds it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import replace

from ..corpus.notes import HEADING_LINE
from ..errors import BudgetTooSmallError
from ..output.packet import (
    MAX_LISTED_EXCLUSIONS,
    Conflict,
    ConflictSide,
    Evidence,
    Excluded,
    LiveRead,
    Packet,
    evidence_dict,
    excluded_dict,
    serialize,
)
from .abstention import ABSTAIN_BELOW_THRESHOLD
from .candidates import BUDGET, HISTORICAL, SCOPE, Admission, ConflictDraft, Selection
from .freshness import fresh_for_days, freshness_label, source_age_days
from .live import live_status
from .live_policy import NO_LIVE, LiveOutcome, live_keys, overrule, verify_live_reason

ABSTAIN_NOTHING_FITS = "no_evidence_fits_budget"
ABSTAIN_UNRESOLVED_CONFLICT = "unresolved_conflict"


def with_live(selection: Selection, live: LiveOutcome) -> Selection:
    """The selection as live checks left it: contradicted items last, ``live`` conflicts first (see
    :func:`~.live_policy.overrule`)."""
    return replace(selection, admitted=live.admitted, conflicts=tuple(overrule(selection.conflicts, live.conflicts)))


def assemble(shell: Packet, selection: Selection, as_of: dt.date, live: LiveOutcome = NO_LIVE) -> Packet:
    """Fill ``shell`` (a packet without evidence) with the selection's items that fit.

    ``live`` is what live checks found for the selection (see :func:`with_live`).
    Raises ``BudgetTooSmallError`` when even a packet without evidence exceeds the budget.
    """
    items = [*selection.admitted, *selection.history]
    counts = {SCOPE: 0, BUDGET: 0, **shell.exclusions, **selection.counts}
    shell = replace(
        shell,
        exclusions=dict(sorted(counts.items())),
        conflicts=_conflicts(selection.conflicts, {}),
        record_values=live.record_values,
        live_sources=live.sources,
        warnings=(*shell.warnings, *live.warnings),
    )
    listed = _excluded(selection)[:MAX_LISTED_EXCLUSIONS]
    reason = _empty_reason(shell, selection)
    empty = _packet(shell, [], len(items), reason, selection)
    if empty.budget.used > shell.budget.limit:
        raise BudgetTooSmallError(
            f"a packet for this query needs at least {empty.budget.used:,} {shell.budget.unit} "
            f"even without evidence; the budget is {shell.budget.limit:,}",
            minimum=empty.budget.used,
        )
    room = _Room(shell, worst_left_out=len(items))
    admitted: list[Evidence] = []
    for admission in items:
        item = _fit(room, _evidence(admission, len(admitted) + 1, as_of, live))
        if item is not None:
            admitted.append(item)
            room.take(item)
    while admitted:  # conflicts now cite refs; in the rare case that grew the packet, give back the last item
        packet = _packet(shell, admitted, len(items) - len(admitted), reason, selection)
        if packet.budget.used <= shell.budget.limit:
            return _name_exclusions(packet, listed)
        admitted.pop()
    return _name_exclusions(empty, listed)


def _name_exclusions(packet: Packet, listed: Sequence[Excluded]) -> Packet:
    """Name excluded items after the evidence, as many as the budget still allows.

    Naming them never displaces evidence; ``exclusions`` keeps the complete counts.
    """
    room = packet.budget.limit - packet.budget.used
    chosen: list[Excluded] = []
    for item in listed:
        cost = packet.budget.measure(serialize(excluded_dict(item))) + 1  # and a comma
        if cost > room:
            break
        chosen.append(item)
        room -= cost
    while chosen:  # budget.used's own digits may grow; give back the last name if they do
        named = replace(packet, excluded=tuple(chosen)).with_measured_budget()
        if named.budget.used <= packet.budget.limit:
            return named
        chosen.pop()
    return packet


def _empty_reason(shell: Packet, selection: Selection) -> str | None:
    """Why a packet without evidence abstains: nothing fits, out of reach, the shell's reason, or (when every
    candidate was judged too weak to answer and nothing is shown) below the threshold."""
    if selection.admitted:
        return ABSTAIN_NOTHING_FITS
    reason = selection.out_of_reach or shell.abstention_reason
    if reason is None and not selection.history:
        return ABSTAIN_BELOW_THRESHOLD  # an empty packet that claimed to answer would not be honest
    return reason


def _excluded(selection: Selection) -> list[Excluded]:
    return [
        Excluded(
            id=e.candidate.id,
            path=e.candidate.path,
            line_start=e.candidate.stored.passage.line_start,
            line_end=e.candidate.stored.passage.line_end,
            reason=e.code,
            detail=e.detail,
            cell_id=e.candidate.stored.passage.cell_id,
            cell_index=e.candidate.stored.passage.cell_index,
        )
        for e in selection.excluded
    ]


def _conflicts(drafts: Sequence[ConflictDraft], refs: dict[str, str]) -> tuple[Conflict, ...]:
    """Conflict objects citing evidence refs where the side is in the packet, else passage ids."""

    def name(passage_id: str) -> str:
        return refs.get(passage_id, passage_id)

    conflicts = []
    for number, draft in enumerate(drafts, 1):
        winners, losers = ", ".join(map(name, draft.winners)), ", ".join(map(name, draft.losers))
        if draft.kind in ("superseded", "partly_superseded"):
            resolution = f"{draft.kind}({losers}, by={winners})"
        elif draft.kind == "authority":
            resolution = f"authority({winners} over {losers})"
        elif draft.kind == "live":
            resolution = f"live({winners} over {losers})"
        else:
            resolution = "unresolved"
        sides = tuple(
            ConflictSide(refs.get(s.passage_id), s.passage_id, s.value, s.authority, s.status) for s in draft.sides
        )
        winner = draft.winners[0] if draft.winners else None
        conflicts.append(Conflict(f"c{number}", draft.proposition, sides, resolution, winner, draft.required_behavior))
    return tuple(conflicts)


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
            exclusions={**shell.exclusions, BUDGET: worst_left_out},
            budget=replace(shell.budget, used=shell.budget.limit),
        )
        self.used = frame.size()
        self.items = 0
        self._measured: tuple[Evidence | None, int] = (None, 0)  # the last item measured (fits, then take)

    def cost(self, item: Evidence) -> int:
        if self._measured[0] is not item:
            self._measured = (item, self.budget.measure(serialize(evidence_dict(item))))
        return self._measured[1] + (1 if self.items else 0)

    def fits(self, item: Evidence) -> bool:
        return self.used + self.cost(item) <= self.budget.limit

    def take(self, item: Evidence) -> None:
        self.used += self.cost(item)
        self.items += 1


def _packet(shell: Packet, admitted: list[Evidence], left_out: int, reason: str | None, selection: Selection) -> Packet:
    current = [item for item in admitted if item.role != HISTORICAL]
    if selection.blocked and current:
        abstention: str | None = ABSTAIN_UNRESOLVED_CONFLICT
    else:
        abstention = None if current else reason
    refs = {item.id: item.ref for item in admitted}
    keys = {a.candidate.id: live_keys(a.candidate.stored) or () for a in selection.admitted}
    reads = tuple(
        LiveRead(item.ref, item.id, keys.get(item.id, ()), item.verify_live) for item in current if item.verify_live
    )
    return replace(
        shell,
        evidence=tuple(admitted),
        verify_live_before_acting=reads,
        abstained=abstention is not None,
        abstention_reason=abstention,
        exclusions={**shell.exclusions, BUDGET: left_out},
        conflicts=_conflicts(selection.conflicts, refs),
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


def _evidence(admission: Admission, rank: int, as_of: dt.date, live: LiveOutcome) -> Evidence:
    candidate = admission.candidate
    stored = candidate.stored
    passage = stored.passage
    facts = stored.facts
    age = source_age_days(stored.observed_at, as_of)
    window = fresh_for_days(stored.metadata)
    results = live.of(passage.id) if admission.role != HISTORICAL else ()
    reason = "; ".join([admission.reason, *(result.detail for result in results)])
    status = live_status(results)
    freshness = freshness_label(age, window)
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
        freshness=freshness,
        fresh_for_days=window,
        indexed_at=stored.indexed_at,
        live_verified=bool(results) and all(result.verified for result in results),
        authority=facts.authority,
        status=admission.status,
        retrieved_by=candidate.retrieved_by,
        rank=rank,
        score=candidate.score,
        reason=reason,
        truncated=False,
        role=admission.role,
        asserts=dict(facts.asserts),
        duplicates=admission.duplicates,
        scope=facts.scope,
        live_status=status,
        verify_live=None if admission.role == HISTORICAL else verify_live_reason(stored, freshness, window, status),
        source_sha256=stored.source_sha256,
        source_revision=stored.revision,
        note_revision=facts.revision,
        partly_superseded_by=admission.partly_superseded_by,
        cell_id=passage.cell_id,
        cell_index=passage.cell_index,
    )
