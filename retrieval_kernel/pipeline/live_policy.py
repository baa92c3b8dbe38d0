"""What live checks do to the policy's selection: the system of record wins.

- A note a live source **contradicts** loses its role: it becomes ``contradicted``
  (shown after every other admitted item, never governing evidence), a ``live``
  conflict records the record's value over the note's, and the record's values lead
  the packet (``record_values``).
- A source that cannot answer in time, or answers malformed JSON, verifies nothing:
  its items stay unverified (``live_status: unavailable``) and the packet says so in
  ``live_sources`` and a warning; the notes' answer goes out as it is.
- A note that must be read live (front matter ``live_key`` or ``kind: state``) whose
  facts are past ``fresh_for`` (or of unknown age) and that no source answered for is
  named in ``verify_live_before_acting``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..output.packet import LiveSourceState, RecordValue
from ..store.records import StoredPassage
from .candidates import CONTRADICTED, Admission, ConflictDraft, Side
from .live import CONTRADICTED as LIVE_CONTRADICTED
from .live import UNAVAILABLE, VERIFIED, LiveCheck, LiveResult, LiveRound, live_status, same_value

RECORD_AUTHORITY = "system of record"
RECORD_STATUS = "live"
STATE_KIND = "state"
RECORD_PREFIX = "live:"  # a record's side in a conflict: ``live:<source name>``


@dataclass(frozen=True)
class LiveOutcome:
    """The selection's admitted items after live checks, and what the checks found."""

    admitted: tuple[Admission, ...]
    results: Mapping[str, tuple[LiveResult, ...]]  # by passage id
    conflicts: tuple[ConflictDraft, ...]
    record_values: tuple[RecordValue, ...]
    sources: tuple[LiveSourceState, ...]
    warnings: tuple[str, ...]

    def of(self, passage_id: str) -> tuple[LiveResult, ...]:
        return self.results.get(passage_id, ())


NO_LIVE = LiveOutcome((), {}, (), (), (), ())


def apply_live(admitted: Sequence[Admission], checks: Sequence[LiveCheck]) -> LiveOutcome:
    """Check every admitted note that asserts something; contradicted ones move last and never govern."""
    if not checks:
        return replace(NO_LIVE, admitted=tuple(admitted))
    live = LiveRound(checks)
    results = {
        a.candidate.id: tuple(live.results(a.candidate.facts.asserts)) for a in admitted if a.candidate.facts.asserts
    }
    lost = [a for a in admitted if live_status(results.get(a.candidate.id, ())) == LIVE_CONTRADICTED]
    ordered = [a for a in admitted if a not in lost] + [_demoted(a) for a in lost]
    sources = tuple(LiveSourceState(r.name, r.location, r.status, r.checked_at, r.detail) for r in live.reports())
    return LiveOutcome(
        admitted=tuple(ordered),
        results=results,
        conflicts=_conflicts(lost, results),
        record_values=_record_values(admitted, results),
        sources=sources,
        warnings=tuple(_unavailable_warning(s) for s in sources if s.status == UNAVAILABLE),
    )


def overrule(note_conflicts: Sequence[ConflictDraft], live_conflicts: Sequence[ConflictDraft]) -> list[ConflictDraft]:
    """All conflicts after live checks. A conflict among notes on a proposition a record settled, whose
    winner the record contradicts, folds into that record's ``live`` conflict (the first source's, when
    several contradict): the record wins over every note side holding another value, so a contradicted
    note never stays a winner anywhere."""
    folded = list(live_conflicts)
    first: dict[str, int] = {}
    for index, live_conflict in enumerate(folded):
        first.setdefault(live_conflict.proposition, index)
    kept: list[ConflictDraft] = []
    for conflict in note_conflicts:
        position = first.get(conflict.proposition)
        if position is None or not set(conflict.winners) & set(folded[position].losers):
            kept.append(conflict)
            continue
        live = folded[position]
        record = live.sides[-1]
        shown = {side.passage_id for side in live.sides}
        notes = [*live.sides[:-1], *(side for side in conflict.sides if side.passage_id not in shown)]
        losers = tuple(side.passage_id for side in notes if not same_value(side.value, record.value))
        folded[position] = replace(live, sides=(*notes, record), losers=losers)
    return [*folded, *kept]


def _demoted(admission: Admission) -> Admission:
    reason = f"contradicted by the system of record, whose value governs; never governing evidence ({admission.reason})"
    return replace(admission, role=CONTRADICTED, reason=reason)


def _unavailable_warning(source: LiveSourceState) -> str:
    return (
        f"live check {source.name} unavailable: {source.detail}; nothing here is live-verified against it "
        "(the notes' answer is given as the notes have it)"
    )


def _conflicts(lost: Sequence[Admission], results: Mapping[str, tuple[LiveResult, ...]]) -> tuple[ConflictDraft, ...]:
    """One ``live`` conflict per (proposition, source): each note it contradicts (shown by its passage that
    states the value, else its first) loses to the record."""
    found: dict[tuple[str, str], tuple[LiveResult, dict[str, list[Admission]]]] = {}
    for admission in lost:
        for result in results[admission.candidate.id]:
            for key in result.found:
                notes = found.setdefault((key, result.check), (result, {}))[1]
                notes.setdefault(admission.candidate.path, []).append(admission)
    drafts = []
    for (key, source), (result, notes) in found.items():
        record = Side(
            f"{RECORD_PREFIX}{source}", result.location or source, result.found[key], RECORD_AUTHORITY, RECORD_STATUS
        )
        shown = [_stating(passages, key) for passages in notes.values()]
        sides = [
            Side(
                a.candidate.id,
                a.candidate.path,
                a.candidate.facts.asserts[key],
                a.candidate.facts.authority,
                CONTRADICTED,
            )
            for a in shown
        ]
        losers = tuple(a.candidate.id for a in shown)
        drafts.append(ConflictDraft(key, (*sides, record), "live", (record.passage_id,), losers))
    return tuple(drafts)


def _stating(passages: Sequence[Admission], key: str) -> Admission:
    """The first passage whose text holds the note's value for ``key``, else the first."""
    value = str(passages[0].candidate.facts.asserts[key]).strip().casefold()
    return next((a for a in passages if value and value in a.candidate.stored.passage.text.casefold()), passages[0])


def _record_values(
    admitted: Sequence[Admission], results: Mapping[str, tuple[LiveResult, ...]]
) -> tuple[RecordValue, ...]:
    """Each (source, proposition) a source answered for, with the notes it contradicts or confirms;
    contradicted values first."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for admission in admitted:
        pid = admission.candidate.id
        for result in results.get(pid, ()):
            for key, value in result.known.items():
                entry = found.setdefault(
                    (result.check, key), {"value": value, "at": result.checked_at, "against": [], "with": []}
                )
                entry["against" if key in result.found else "with"].append(pid)
    values = [
        RecordValue(key, entry["value"], source, entry["at"], tuple(entry["against"]), tuple(entry["with"]))
        for (source, key), entry in found.items()
    ]
    return tuple(sorted(values, key=lambda v: (not v.contradicts, v.source, v.proposition)))


# ---------------------------------------------------------------- must-read-live notes


def live_keys(stored: StoredPassage) -> tuple[str, ...] | None:
    """The facts a note says must be read live (``live_key``: one key or a list; ``kind: state``: all it
    asserts); ``None`` when the note makes no such demand."""
    declared = stored.metadata.get("live_key")
    if isinstance(declared, str) and declared.strip():
        return (declared.strip(),)
    if isinstance(declared, list) and declared:
        return tuple(str(key).strip() for key in declared if str(key).strip())
    if (stored.facts.kind or "").strip().lower() == STATE_KIND:
        return tuple(sorted(stored.facts.asserts))
    return None


def verify_live_reason(stored: StoredPassage, freshness: str, fresh_for: int, status: str) -> str | None:
    """Why this item's facts need a live read before acting, or ``None`` (not demanded, fresh, or read)."""
    keys = live_keys(stored)
    if keys is None or freshness == "fresh" or status in (VERIFIED, LIVE_CONTRADICTED):
        return None
    age = "of unknown age" if freshness == "unknown" else f"past its fresh_for of {fresh_for} d"
    what = ", ".join(keys) if keys else "its facts"
    read = "the live check was unavailable" if status == UNAVAILABLE else "no live check answered for it"
    return f"must be read live ({what}): the note is {age} and {read}"
