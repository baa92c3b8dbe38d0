"""Live checks: ask a system of record whether a note's assertions still hold.

A system of record answers with one JSON document of current values::

    {"name": "orders-api", "checked_at": "2026-11-30T09:00:00Z",
     "values": {"order_4471.purchased_days_ago": 20}}

Each note assertion it knows is ``verified`` (same value), ``contradicted`` (the
record holds another value: the record wins) or, when the source cannot answer in
time or answers malformed JSON, ``unavailable`` (nothing is claimed as live).
A :class:`LiveRound` reads every source at most once per query, so a slow source
costs one time limit per packet, not one per item. The sources themselves (a JSON
file, a command, an HTTP endpoint) are in :mod:`.live_sources`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Protocol

from ..errors import LiveSourceError

VERIFIED, CONTRADICTED, UNAVAILABLE = "verified", "contradicted", "unavailable"
NOT_CHECKED = "not_checked"  # no source knows the note's assertions (or the note asserts nothing)
ANSWERED = "answered"  # a source's status when it answered (its values were read)


@dataclass(frozen=True)
class LiveResult:
    """What one live check found for one note's assertions.

    ``status`` is derived when not given: verified, else contradicted when the record's
    differing values are in ``found``, else unavailable (the check could not run).
    """

    check: str
    verified: bool
    detail: str
    status: str = ""
    found: Mapping[str, Any] = field(default_factory=dict)  # the record's value of each contradicted key
    checked_at: str | None = None
    location: str | None = None
    known: Mapping[str, Any] = field(default_factory=dict)  # the record's value of every key it knows

    def __post_init__(self) -> None:
        if not self.status:
            derived = VERIFIED if self.verified else CONTRADICTED if self.found else UNAVAILABLE
            object.__setattr__(self, "status", derived)


class LiveCheck(Protocol):
    """Anything that can check asserted values against a live source."""

    name: str

    def check(self, asserts: Mapping[str, Any]) -> LiveResult | None:
        """A verdict on the assertions it knows, or ``None`` when it knows none of them."""


@dataclass(frozen=True)
class Snapshot:
    """The current values one system of record answered with."""

    source: str
    location: str
    values: Mapping[str, Any]
    checked_at: str | None = None

    @classmethod
    def parse(cls, data: Any, source: str, location: str) -> Snapshot:
        """A snapshot of decoded JSON ``data``; ``LiveSourceError`` when it lacks a ``values`` object."""
        values = data.get("values") if isinstance(data, dict) else None
        if not isinstance(values, dict):
            raise LiveSourceError(
                f"system of record {location} needs a 'values' object of proposition -> value, not {_shape(data)}"
            )
        checked_at = data.get("checked_at")
        return cls(source, location, values, str(checked_at) if checked_at is not None else None)

    def compare(self, asserts: Mapping[str, Any]) -> LiveResult | None:
        """The verdict on ``asserts``, or ``None`` when the record knows none of them."""
        known = sorted(key for key in asserts if key in self.values)
        if not known:
            return None
        record = {key: self.values[key] for key in known}
        wrong = {key: value for key, value in record.items() if not same_value(value, asserts[key])}
        when = f" (checked {self.checked_at})" if self.checked_at else ""
        if wrong:
            found = "; ".join(
                f"{key}: note says {asserts[key]!r}, {self.source} says {value!r}" for key, value in wrong.items()
            )
            detail = f"contradicted by {self.source}{when}: {found}"
            return LiveResult(self.source, False, detail, CONTRADICTED, wrong, self.checked_at, self.location, record)
        detail = f"verified live against {self.source}{when}: {', '.join(known)}"
        return LiveResult(self.source, True, detail, VERIFIED, {}, self.checked_at, self.location, record)


def _shape(data: Any) -> str:
    if isinstance(data, dict):
        return f"an object with keys {sorted(map(str, data))[:8]}"
    return f"a JSON {type(data).__name__}"


def same_value(a: Any, b: Any) -> bool:
    """Numbers compare by value (``14`` equals ``14.0``); anything else as trimmed, case-folded text."""
    try:
        return Decimal(str(a).strip()) == Decimal(str(b).strip())
    except InvalidOperation:
        return str(a).strip().casefold() == str(b).strip().casefold()


@dataclass(frozen=True)
class SourceReport:
    """How one source fared in a query: answered (with when) or unavailable (with why)."""

    name: str
    location: str
    status: str  # answered | unavailable
    checked_at: str | None = None
    detail: str | None = None


class LiveRound:
    """One query's live checks. A source with ``fetch()`` (every source in :mod:`.live_sources`) is read
    at most once, and only when a note asks; any other :class:`LiveCheck` is asked per note. A check that
    fails reports that (``unavailable``), never raises."""

    def __init__(self, checks: Sequence[LiveCheck]) -> None:
        self.checks = tuple(checks)
        self._read: dict[int, Snapshot | LiveResult] = {}  # by position: a snapshot, or why there is none

    def results(self, asserts: Mapping[str, Any]) -> list[LiveResult]:
        """Every check's verdict on ``asserts`` (checks that know none of them are left out)."""
        results = []
        for position, check in enumerate(self.checks):
            result = self._verdict(position, check, asserts)
            if result is not None:
                results.append(result)
        return results

    def reports(self) -> list[SourceReport]:
        """The sources read this round, in configured order."""
        reports = []
        for _, read in sorted(self._read.items()):
            if isinstance(read, Snapshot):
                reports.append(SourceReport(read.source, read.location, ANSWERED, read.checked_at))
            else:
                why = read.detail.removeprefix(f"live check {read.check} failed: ")
                reports.append(SourceReport(read.check, read.location or read.check, UNAVAILABLE, None, why))
        return reports

    def _verdict(self, position: int, check: LiveCheck, asserts: Mapping[str, Any]) -> LiveResult | None:
        fetch = getattr(check, "fetch", None)
        if fetch is None:
            try:
                return check.check(asserts)
            except Exception as exc:  # a broken live source must not break the packet
                return _failed(check, exc)
        if position not in self._read:
            try:
                self._read[position] = fetch()
            except Exception as exc:
                self._read[position] = _failed(check, exc)
        read = self._read[position]
        return read.compare(asserts) if isinstance(read, Snapshot) else read


def _failed(check: LiveCheck, exc: Exception) -> LiveResult:
    location = getattr(check, "location", None)
    return LiveResult(check.name, False, f"live check {check.name} failed: {exc}", UNAVAILABLE, location=location)


def run_checks(checks: Sequence[LiveCheck], asserts: Mapping[str, Any]) -> list[LiveResult]:
    """Every check's verdict on ``asserts``; a check that fails to run reports that, never raises."""
    return LiveRound(checks).results(asserts)


def live_status(results: Sequence[LiveResult]) -> str:
    """One item's live status from its checks: contradicted beats unavailable beats verified."""
    statuses = {result.status for result in results}
    for status in (CONTRADICTED, UNAVAILABLE, VERIFIED):
        if status in statuses:
            return status
    return NOT_CHECKED
