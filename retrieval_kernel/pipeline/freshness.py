"""Source time, as opposed to index time: ages and staleness as of a fixed clock.

A passage's facts are as old as the note's ``observed`` date says. Indexing it
again never makes it younger; a note without ``observed`` has an unknown age.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from ..corpus.notes import parse_when
from ..errors import DateError

DEFAULT_FRESH_FOR_DAYS = 7
_DURATION = re.compile(r"^\s*(\d+)\s*([dw]?)\s*$")


def parse_as_of(value: str | dt.date | None, today: dt.date | None = None) -> dt.date:
    """The evaluation clock as a date: ISO text, a date, or ``None`` for today (UTC)."""
    if value is None:
        return today or dt.datetime.now(dt.UTC).date()
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    try:
        parsed = parse_when(value)
    except ValueError as exc:
        raise DateError(f"as-of {value!r} is not an ISO date such as 2026-10-15") from exc
    return parsed.date() if isinstance(parsed, dt.datetime) else parsed


def fresh_for_days(metadata: dict[str, Any]) -> int:
    """How many days a note's facts stay fresh: front matter ``fresh_for`` (``7``, ``7d``, ``2w``)."""
    value = metadata.get("fresh_for")
    match = _DURATION.match(str(value)) if value is not None else None
    if match is None:
        return DEFAULT_FRESH_FOR_DAYS
    return int(match.group(1)) * (7 if match.group(2) == "w" else 1)


def source_age_days(observed_at: str | None, as_of: dt.date) -> int | None:
    """Whole days from observation to ``as_of``; ``None`` when the source time is unknown."""
    if observed_at is None:
        return None
    observed = parse_when(observed_at)
    observed_date = observed.date() if isinstance(observed, dt.datetime) else observed
    return (as_of - observed_date).days


def freshness_label(age_days: int | None, fresh_for: int) -> str:
    """``"unknown"``, ``"fresh"`` or ``"stale"`` for a source of that age."""
    if age_days is None:
        return "unknown"
    return "stale" if age_days > fresh_for else "fresh"
