"""Note facts: what a note says about itself, read from front matter or ADR conventions.

Front matter fields (all optional)::

    id: refund-policy-b            # identity (see notes.py)
    aliases: [refund policy]
    observed: 2026-11-28           # source time
    valid_from: 2026-11-28         # validity window of its facts, inclusive ISO dates
    valid_to: 2027-06-30
    revision: B
    authority: authoritative       # authoritative > reference > informal
    scope: [tenant-a]              # who may see it (missing: everyone)
    status: current                # current | superseded | disputed | draft | deprecated | rejected
    supersedes: [refund-policy-a@A]
    superseded_by: [refund-policy-c]
    asserts: {refund_window_days: 14}
    fresh_for: 30d
    kind: policy                   # free label; ``failure`` marks counter-evidence

Notes without front matter are read as Architecture Decision Records: a
``## Status`` section (or ``Status:`` line) gives the status and its links
("Superseded by [ADR-0012](0012-x.md)", "⌛️ Superseded [0019](...)", "Supersedes ...",
"Accepted", "❌ Rejected", "> Accepted"), and a ``Date:`` line gives the source
time (``2024-10-31``, ``08/01/24`` and ``8/1/2024`` read day first). Missing facts
stay unknown: a file's mtime is never taken for a source time.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

AUTHORITY_LEVELS: dict[str, int] = {"authoritative": 3, "reference": 2, "informal": 1}
STATUSES = ("current", "superseded", "disputed", "draft", "deprecated", "rejected")
FAILURE_KINDS = frozenset({"failure", "incident", "postmortem", "counter-evidence"})

# How written statuses map onto STATUSES (first matching word wins; ambiguous text stays unknown).
_STATUS_WORDS: dict[str, str] = {
    "accepted": "current",
    "approved": "current",
    "adopted": "current",
    "agreed": "current",
    "active": "current",
    "current": "current",
    "implemented": "current",
    "amended": "current",
    "superseded": "superseded",
    "replaced": "superseded",
    "disputed": "disputed",
    "contested": "disputed",
    "proposed": "draft",
    "draft": "draft",
    "pending": "draft",
    "open": "draft",
    "deprecated": "deprecated",
    "obsolete": "deprecated",
    "retired": "deprecated",
    "rejected": "rejected",
    "declined": "rejected",
    "withdrawn": "rejected",
}
_STATUS_HEADING = re.compile(r"^ {0,3}#{1,6}\s+status\b\s*:?\s*(?P<inline>.*?)\s*#*\s*$", re.IGNORECASE)
_STATUS_LINE = re.compile(r"^\s*[*_]*status[*_]*\s*:[*_]*\s*(?P<value>\S.*)$", re.IGNORECASE)
_DATE_LINE = re.compile(r"^\s*[*_]*date[*_]*\s*:[*_]*\s*(?P<value>\S.*)$", re.IGNORECASE)
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")  # also the date part of a datetime
_DAY_FIRST = re.compile(r"(?<!\d)(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})(?!\d)")
_LINK = re.compile(r"\[(?P<label>[^\]]*)\]\((?P<target>[^)\s]+)\)")
_RECORD_NUMBER = re.compile(r"\b(?P<prefix>[A-Za-z]{1,5}-?)?(?P<number>\d{1,5})\b")  # ADR025, ADR-12, DR8, 0019
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class NoteFacts:
    """The normalized facts of one note. ``None`` and empty mean unknown or not stated."""

    aliases: tuple[str, ...] = ()
    valid_from: str | None = None
    valid_to: str | None = None
    revision: str | None = None
    authority: str | None = None
    scope: tuple[str, ...] = ()
    status: str | None = None
    status_text: str | None = None
    status_source: str | None = None
    supersedes: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()
    asserts: Mapping[str, Any] = field(default_factory=dict)
    fresh_for: str | None = None
    kind: str | None = None
    date_line: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoteFacts:
        known = {key: data[key] for key in cls.__dataclass_fields__ if key in data}
        for key in ("aliases", "scope", "supersedes", "superseded_by"):
            if key in known:
                known[key] = tuple(known[key])
        return cls(**known)

    @property
    def authority_level(self) -> int:
        """3 authoritative, 2 reference, 1 informal, 0 unknown."""
        return AUTHORITY_LEVELS.get(self.authority or "", 0)

    @property
    def is_counter_evidence(self) -> bool:
        return (self.kind or "").lower() in FAILURE_KINDS


def read_facts(
    rel_path: str, metadata: Mapping[str, Any], lines: Sequence[str], body_start: int
) -> tuple[NoteFacts, str | None, list[str]]:
    """``(facts, observed date from a Date: line or None, warnings)`` of one note."""
    warnings: list[str] = []
    status, status_text, status_source, links = _status(metadata, lines, body_start, warnings)
    supersedes = _references(metadata.get("supersedes"), "supersedes", warnings)
    superseded_by = _references(metadata.get("superseded_by"), "superseded_by", warnings)
    if status_source != "front matter" and links:
        if status == "superseded":
            superseded_by = tuple(dict.fromkeys([*superseded_by, *links]))
        elif "supersedes" in (status_text or "").lower():
            supersedes = tuple(dict.fromkeys([*supersedes, *links]))
    date_line, observed = _date_line(lines, body_start, warnings)
    facts = NoteFacts(
        aliases=_strings(metadata.get("aliases"), "aliases", warnings),
        valid_from=_date_field(metadata, "valid_from", warnings),
        valid_to=_date_field(metadata, "valid_to", warnings),
        revision=_scalar_text(metadata.get("revision")),
        authority=_authority(metadata.get("authority"), warnings),
        scope=_strings(metadata.get("scope"), "scope", warnings),
        status=status,
        status_text=status_text,
        status_source=status_source,
        supersedes=supersedes,
        superseded_by=superseded_by,
        asserts=_asserts(metadata.get("asserts"), warnings),
        fresh_for=_scalar_text(metadata.get("fresh_for")),
        kind=_scalar_text(metadata.get("kind")),
        date_line=date_line,
    )
    if facts.valid_from and facts.valid_to and facts.valid_from > facts.valid_to:
        warnings.append(f"valid_from {facts.valid_from} is after valid_to {facts.valid_to}: the note is never valid")
    return facts, observed, [f"{rel_path}: {warning}" for warning in warnings]


# ---------------------------------------------------------------- front matter fields


def _scalar_text(value: object) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None


def _strings(value: object, name: str, warnings: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if isinstance(value, dict) or any(isinstance(item, (dict, list)) for item in items):
        warnings.append(f"{name} must be a string or a list of strings; ignored")
        return ()
    return tuple(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))


def _references(value: object, name: str, warnings: list[str]) -> tuple[str, ...]:
    return _strings(value, name, warnings)


def _date_field(metadata: Mapping[str, Any], name: str, warnings: list[str]) -> str | None:
    value = metadata.get(name)
    if value is None:
        return None
    parsed = parse_date(str(value))
    if parsed is None:
        warnings.append(f"{name} {value!r} is not a date such as 2026-11-30; ignored")
        return None
    return parsed.isoformat()


def _authority(value: object, warnings: list[str]) -> str | None:
    text = _scalar_text(value)
    if text is None:
        if value is not None:
            warnings.append(f"authority must be one word such as authoritative, not {value!r}; treated as unknown")
        return None
    if text.lower() not in AUTHORITY_LEVELS:
        known = ", ".join(AUTHORITY_LEVELS)
        warnings.append(f"authority {text!r} is not one of {known}; treated as unknown")
        return None
    return text.lower()


def _asserts(value: object, warnings: list[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        warnings.append("asserts must map a proposition to a value (e.g. refund_window_days: 14); ignored")
        return {}
    return {str(key).strip(): item for key, item in sorted(value.items()) if str(key).strip()}


# ---------------------------------------------------------------- ADR conventions


def _status(
    metadata: Mapping[str, Any], lines: Sequence[str], body_start: int, warnings: list[str]
) -> tuple[str | None, str | None, str | None, tuple[str, ...]]:
    """``(status, as written, where it was read, links in the status text)``."""
    declared = _scalar_text(metadata.get("status"))
    if declared is None and metadata.get("status") is not None:
        warnings.append(f"status must be one word such as current, not {metadata['status']!r}; treated as unknown")
        return None, None, "front matter", ()
    if declared is not None:
        status = normalize_status(declared)
        if status is None:
            warnings.append(f"status {declared!r} is not one of {', '.join(STATUSES)}; treated as unknown")
        return status, declared, "front matter", ()
    found = _status_text(lines, body_start)
    if found is None:
        return None, None, None, ()
    text, source = found
    return normalize_status(text), text, source, _status_links(text)


def _status_text(lines: Sequence[str], body_start: int) -> tuple[str, str] | None:
    """The first non-empty line of a ``Status`` section, or the value of a ``Status:`` line."""
    for index in range(body_start, len(lines)):
        heading = _STATUS_HEADING.match(lines[index])
        if heading:
            if heading["inline"]:
                return _clean(heading["inline"]), "status heading"
            for line in lines[index + 1 :]:
                if line.lstrip().startswith("#"):
                    return None
                if _clean(line):
                    return _clean(line), "status section"
            return None
        status_line = _STATUS_LINE.match(lines[index])
        if status_line:
            return _clean(status_line["value"]), "status line"
    return None


def _clean(text: str) -> str:
    """Strip quote markers, emphasis and code marks around a status."""
    return text.strip().lstrip(">").strip().replace("`", "").strip("*_ ").strip()


def normalize_status(text: str) -> str | None:
    """Map a written status onto :data:`STATUSES`; ``None`` when unknown or ambiguous.

    Only the first words outside link labels count ("Superseded by [Open API spec](x.md)"
    is superseded). Two different statuses (template text such as "Accepted or
    Rejected") or a negation ("Not accepted") stay unknown.
    """
    words = _WORD.findall(_LINK.sub(" ", text).lower())[:3]
    if words[:1] == ["supersedes"]:  # "Supersedes ADR-3" describes a current decision
        return "current"
    found = {_STATUS_WORDS[word] for word in words if word in _STATUS_WORDS}
    return found.pop() if len(found) == 1 and words[:1] != ["not"] else None


def _status_links(text: str) -> tuple[str, ...]:
    """Link targets in a status, else record numbers such as ``ADR025`` or ``DR-8``."""
    targets = [match["target"] for match in _LINK.finditer(text) if not match["target"].startswith(("http:", "https:"))]
    if targets:
        return tuple(dict.fromkeys(targets))
    if _LINK.search(text):
        return ()  # only external links (e.g. to an issue tracker): no successor note
    undated = _DAY_FIRST.sub(" ", _ISO_DATE.sub(" ", text))  # "Superseded by ADR019 on 2022-06-14"
    numbers = [f"{m['prefix'] or ''}{m['number']}" for m in _RECORD_NUMBER.finditer(undated)]
    return tuple(dict.fromkeys(numbers))


def _date_line(lines: Sequence[str], body_start: int, warnings: list[str]) -> tuple[str | None, str | None]:
    """The first ``Date:`` line of the note and the date it names (ISO), if readable."""
    for line in lines[body_start:]:
        match = _DATE_LINE.match(line)
        if match is None:
            continue
        parsed = parse_date(match["value"])
        if parsed is None:
            warnings.append(f"date line {line.strip()!r} holds no readable date; source time is unknown")
        return line.strip(), parsed.isoformat() if parsed else None
    return None, None


def parse_date(text: str) -> dt.date | None:
    """An ISO date (anywhere in ``text``) or a day-first ``DD/MM/YY[YY]`` date; else ``None``."""
    iso = _ISO_DATE.search(text)
    try:
        if iso:
            return dt.date(int(iso[1]), int(iso[2]), int(iso[3]))
        day_first = _DAY_FIRST.search(text)
        if day_first:
            year = int(day_first[3]) + (2000 if len(day_first[3]) == 2 else 0)
            return dt.date(year, int(day_first[2]), int(day_first[1]))
    except ValueError:
        return None
    return None
