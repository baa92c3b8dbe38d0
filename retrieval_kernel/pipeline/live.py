"""Live checks: ask a system of record whether a note's assertions still hold.

``live_verified`` is true only when a registered check actually ran and agreed.
A check that disagrees leaves it false and says what the system of record holds.
:class:`JsonSystemOfRecord` reads a JSON file at every check, e.g.::

    {"name": "orders-api", "checked_at": "2026-11-30T09:00:00Z",
     "values": {"order_4471.purchased_days_ago": 20}}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Protocol

from ..errors import InputError


@dataclass(frozen=True)
class LiveResult:
    """What one live check found for one note's assertions."""

    check: str
    verified: bool
    detail: str


class LiveCheck(Protocol):
    """Anything that can check asserted values against a live source."""

    name: str

    def check(self, asserts: Mapping[str, Any]) -> LiveResult | None:
        """A verdict on the assertions it knows, or ``None`` when it knows none of them."""


class JsonSystemOfRecord:
    """A live check backed by a JSON file of current values (read afresh on every check)."""

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or _declared_name(self.path) or self.path.stem

    def _values(self) -> tuple[dict[str, Any], str | None]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"system of record {self.path} cannot be read as JSON: {exc}") from exc
        values = data.get("values") if isinstance(data, dict) else None
        if not isinstance(values, dict):
            raise InputError(f"system of record {self.path} needs a 'values' object of proposition -> value")
        return values, data.get("checked_at")

    def check(self, asserts: Mapping[str, Any]) -> LiveResult | None:
        values, checked_at = self._values()
        known = sorted(key for key in asserts if key in values)
        if not known:
            return None
        wrong = [key for key in known if not same_value(values[key], asserts[key])]
        when = f" (checked {checked_at})" if checked_at else ""
        if wrong:
            found = "; ".join(f"{key}: note says {asserts[key]!r}, {self.name} says {values[key]!r}" for key in wrong)
            return LiveResult(self.name, False, f"contradicted by {self.name}{when}: {found}")
        return LiveResult(self.name, True, f"verified live against {self.name}{when}: {', '.join(known)}")


def same_value(a: Any, b: Any) -> bool:
    """Numbers compare by value (``14`` equals ``14.0``); anything else as trimmed, case-folded text."""
    try:
        return Decimal(str(a).strip()) == Decimal(str(b).strip())
    except InvalidOperation:
        return str(a).strip().casefold() == str(b).strip().casefold()


def _declared_name(path: Path) -> str | None:
    """The ``name`` the system-of-record file gives itself, if it can be read now."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return str(name) if isinstance(name, str) and name.strip() else None


def run_checks(checks: tuple[LiveCheck, ...], asserts: Mapping[str, Any]) -> list[LiveResult]:
    """Every check's verdict on ``asserts``; a check that fails to run reports that, never raises."""
    results = []
    for check in checks:
        try:
            result = check.check(asserts)
        except Exception as exc:  # a broken live source must not break the packet
            result = LiveResult(check.name, False, f"live check {check.name} failed: {exc}")
        if result is not None:
            results.append(result)
    return results
