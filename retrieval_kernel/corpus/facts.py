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
    status: current                # as written; normalised by the table in status.py
    supersedes: [refund-policy-a@A]  # also replaces, obsoletes
    superseded_by: [refund-policy-c] # also Superseded-By, SupersededBy, replaced_by, obsoleted_by
    amends: [refund-policy-0]      # partly supersedes (also updates); amended_by / updated_by the reverse
    requires: [12, 0007-x.md]      # notes this one builds on (EIP/PEP ``Requires``)
    created: 29-Oct-2019           # source time when no ``observed`` or ``Date:`` line gives one
    asserts: {refund_window_days: 14}
    fresh_for: 30d
    kind: policy                   # free label; ``failure`` marks counter-evidence

Notes without front matter are read as Architecture Decision Records: a
``## Status`` section (or ``Status:`` line) gives the status and its links
("Superseded by [ADR-0012](0012-x.md)", "⌛️ Superseded [0019](...)", "Supersedes ...",
"Accepted", "❌ Rejected", "> Accepted"), and a ``Date:`` line gives the source
time (``2024-10-31``, ``08/01/24`` and ``8/1/2024`` read day first). Missing facts
stay unknown: a file's mtime is never taken for a source time.

Keys are read case-insensitively in their common spellings (:data:`KEY_SPELLINGS`), from
YAML front matter or a PEP-style header block; a reference is a number (``141``, resolved
within the series), a list, a comma-separated string, a path or a Markdown link.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass, field, fields
from typing import Any

from .status import PARTLY_SUPERSEDED, STATUSES, SUPERSEDED, normalize_status

AUTHORITY_LEVELS: dict[str, int] = {"authoritative": 3, "reference": 2, "informal": 1}
FAILURE_KINDS = frozenset({"failure", "incident", "postmortem", "counter-evidence"})

# Front-matter and header keys as written in the wild → the fact they give. Keys compare with case,
# ``-``, ``_`` and spaces ignored (``Superseded-By``, ``superseded_by``, ``SupersededBy`` are one key).
KEY_SPELLINGS: dict[str, str] = {
    "supersedes": "supersedes",
    "replaces": "supersedes",
    "obsoletes": "supersedes",
    "supersededby": "superseded_by",
    "replacedby": "superseded_by",
    "obsoletedby": "superseded_by",
    "updates": "amends",
    "amends": "amends",
    "partlysupersedes": "amends",
    "partiallysupersedes": "amends",
    "updatedby": "amended_by",
    "amendedby": "amended_by",
    "partlysupersededby": "amended_by",
    "partiallysupersededby": "amended_by",
    "requires": "requires",
    "dependson": "requires",
    "created": "created",
    "date": "created",
}
_STATUS_HEADING = re.compile(r"^ {0,3}#{1,6}\s+status\b\s*:?\s*(?P<inline>.*?)\s*#*\s*$", re.IGNORECASE)
_STATUS_LINE = re.compile(r"^\s*[*_]*status[*_]*\s*:[*_]*\s*(?P<value>\S.*)$", re.IGNORECASE)
_DATE_LINE = re.compile(r"^\s*[*_]*date[*_]*\s*:[*_]*\s*(?P<value>\S.*)$", re.IGNORECASE)
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")  # also the date part of a datetime
_YEAR_FIRST = re.compile(r"(?<!\d)(\d{4})/(\d{1,2})/(\d{1,2})(?!\d)")  # 2019/10/29
_DAY_FIRST = re.compile(r"(?<!\d)(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})(?!\d)")
_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
_DAY_MONTH_NAME = re.compile(r"(?<!\d)(\d{1,2})[-\s]([A-Za-z]{3,9})\.?[-\s,]+(\d{4})(?!\d)")  # 29-Oct-2019
_MONTH_NAME_DAY = re.compile(r"\b([A-Za-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})(?!\d)")  # Oct 29, 2019
_LINK = re.compile(r"\[(?P<label>[^\]]*)\]\((?P<target>[^)\s]+)\)")
_RECORD_NUMBER = re.compile(r"\b(?P<prefix>[A-Za-z]{1,5}-?)?(?P<number>\d{1,5})\b")  # ADR025, ADR-12, DR8, 0019
_SEPARATORS = re.compile(r"[,;]")


REFERENCE_FIELDS = ("supersedes", "superseded_by", "amends", "amended_by", "requires")


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
    amends: tuple[str, ...] = ()  # notes this one partly supersedes (they stay current, it governs where they differ)
    amended_by: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    asserts: Mapping[str, Any] = field(default_factory=dict)
    fresh_for: str | None = None
    kind: str | None = None
    date_line: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field, tuples as lists and ``asserts`` as a copy (what ``dataclasses.asdict`` gave, without
        its deep copy of every value: a note is stored with this, so it is paid once per note)."""
        data = {name: getattr(self, name) for name in _FACT_FIELDS}
        data["asserts"] = deepcopy(dict(self.asserts))
        return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoteFacts:
        known = {key: data[key] for key in cls.__dataclass_fields__ if key in data}
        for key in (*REFERENCE_FIELDS, "aliases", "scope"):
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


_FACT_FIELDS = tuple(f.name for f in fields(NoteFacts))


def read_facts(
    rel_path: str,
    metadata: Mapping[str, Any],
    lines: Sequence[str],
    body_start: int,
    metadata_source: str = "front matter",
) -> tuple[NoteFacts, str | None, list[str]]:
    """``(facts, observed date from a Date: line or a created/date key, or None, warnings)`` of one note."""
    warnings: list[str] = []
    keyed = spelled_keys(metadata)
    status, status_text, status_source, links = _status(metadata, lines, body_start, warnings, metadata_source)
    refs = {name: _references(keyed.get(name), name, warnings) for name in REFERENCE_FIELDS}
    if links:
        relation = _status_relation(status, status_text or "")
        if relation is not None:
            refs[relation] = tuple(dict.fromkeys([*refs[relation], *links]))
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
        asserts=_asserts(metadata.get("asserts"), warnings),
        fresh_for=_scalar_text(metadata.get("fresh_for")),
        kind=_scalar_text(metadata.get("kind")),
        date_line=date_line,
        **refs,
    )
    if facts.valid_from and facts.valid_to and facts.valid_from > facts.valid_to:
        warnings.append(f"valid_from {facts.valid_from} is after valid_to {facts.valid_to}: the note is never valid")
    observed = observed or _created(keyed.get("created"), warnings)
    return facts, observed, [f"{rel_path}: {warning}" for warning in warnings]


def spelled_keys(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata under the canonical names of :data:`KEY_SPELLINGS` (values of one fact's spellings
    are merged in key order: ``replaces`` and ``supersedes`` together)."""
    found: dict[str, Any] = {}
    for key, value in metadata.items():
        name = KEY_SPELLINGS.get(re.sub(r"[\s_-]+", "", str(key)).lower())
        if name is None or value is None or (name == "created" and name in found):  # one source time: the first
            continue
        if name in found:
            previous = found[name] if isinstance(found[name], list) else [found[name]]
            found[name] = [*previous, *(value if isinstance(value, list) else [value])]
        else:
            found[name] = value
    return found


def _status_relation(status: str | None, text: str) -> str | None:
    """Which reference field the links of a status text fill ("Superseded by [x](x.md)" → superseded_by)."""
    if status == SUPERSEDED:
        return "superseded_by"
    if status == PARTLY_SUPERSEDED:
        return "amended_by"
    lowered = text.lower()
    if "supersedes" in lowered or "replaces" in lowered:
        return "supersedes"
    if "amends" in lowered or "updates" in lowered:
        return "amends"
    return None


def _created(value: object, warnings: list[str]) -> str | None:
    """The source time a ``created`` / ``date`` key gives (any format :func:`parse_date` reads)."""
    if value is None or isinstance(value, (dict, list)):
        return None
    parsed = parse_date(str(value))
    if parsed is None:
        warnings.append(f"created {value!r} is not a date such as 2019-10-29 or 29-Oct-2019; ignored")
        return None
    return parsed.isoformat()


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
    """References as written: a number, a path, a Markdown link (its target) or a comma-separated list."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if isinstance(value, dict) or any(isinstance(item, (dict, list)) for item in items):
        warnings.append(f"{name} must be a reference or a list of references; ignored")
        return ()
    found: list[str] = []
    for item in items:
        text = str(item).strip()
        targets = [match["target"] for match in _LINK.finditer(text)]
        found += targets or [part.strip().strip("<>") for part in _SEPARATORS.split(text)]
    return tuple(dict.fromkeys(ref for ref in found if ref))


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
    metadata: Mapping[str, Any], lines: Sequence[str], body_start: int, warnings: list[str], source: str
) -> tuple[str | None, str | None, str | None, tuple[str, ...]]:
    """``(status, as written, where it was read, links in the status text)``."""
    written = next((value for key, value in metadata.items() if str(key).strip().lower() == "status"), None)
    declared = _scalar_text(written)
    if declared is None and written is not None:
        warnings.append(f"status must be one word such as current, not {written!r}; treated as unknown")
        return None, None, source, ()
    if declared is not None:
        status = normalize_status(declared)
        if status is None:
            warnings.append(
                f"status {declared!r} is not in the status vocabulary ({', '.join(STATUSES)}); treated as unknown"
            )
        return status, declared, source, _status_links(declared) if status != "current" else ()
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
    """A date in ``text``: ISO (``2019-10-29``, also inside a datetime), ``2019/10/29``, ``29-Oct-2019``,
    ``29 October 2019``, ``Oct 29, 2019``, or day-first ``DD/MM/YY[YY]``; else ``None``."""
    try:
        for pattern, order in (
            (_ISO_DATE, "ymd"),
            (_YEAR_FIRST, "ymd"),
            (_DAY_MONTH_NAME, "dmy"),
            (_MONTH_NAME_DAY, "mdy"),
            (_DAY_FIRST, "dmy"),
        ):
            match = pattern.search(text)
            if match is None:
                continue
            parts = dict(zip(order, match.groups(), strict=True))
            month = _month(parts["m"])
            if month is None:
                continue
            year = int(parts["y"]) + (2000 if len(parts["y"]) == 2 else 0)
            return dt.date(year, month, int(parts["d"]))
    except ValueError:
        return None
    return None


def _month(text: str) -> int | None:
    """A month number from digits or an English month name (``Oct``, ``October``)."""
    if text.isdigit():
        return int(text)
    name = text.lower()
    return next((n for n, full in enumerate(_MONTH_NAMES, 1) if len(name) >= 3 and full.startswith(name)), None)
