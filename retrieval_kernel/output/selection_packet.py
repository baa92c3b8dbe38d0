"""A selection is a packet: the records that apply, as a :class:`~retrieval_kernel.output.packet.Packet`.

:class:`SelectionPacket` is the packet the workspace builds for the question with its
evidence limited to the selected records' passages (same budget, ``as_of``, two clocks,
validity, supersession, conflicts, scope and trace as ``%context``), plus a
``selection`` object: the outcome (``selected``, ``empty`` or ``needs_condition``),
the conditions, each record with the needs it covers and why it applies, each rejected
candidate with its reason, and the ``open_questions`` nothing answered. Its JSON has
every key of a packet's, in the same order, then ``selection``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .packet import Packet, serialize

MAX_DERIVED_CLAIMS = 2  # derived claims repeated in the packet (the evidence quotes their passages)
TIMING_RESERVE = 9_999_999.999  # the widest timing a selection reports (ms)
MAX_LISTED_REJECTED = 10  # rejected candidates named in the packet; rejected_count counts them all
CAPSULE_KEYS = ("claims", "applies_when", "conditions_text", "status", "superseded_by", "rule", "critical", "derived")

if TYPE_CHECKING:
    from ..applicability.selection import ApplicabilitySelection


def selection_fields(selection: ApplicabilitySelection) -> dict[str, Any]:
    """What a selection adds to a packet (the records' passages are the packet's evidence)."""
    records = []
    for record in selection.records:
        data = record.to_dict()
        data.pop("passages", None)  # the packet's evidence holds them
        data["capsule"] = _capsule(data["capsule"])
        records.append(data)
    rejected = [{key: r.to_dict()[key] for key in ("record", "reason", "detail")} for r in selection.rejected]
    return {
        "outcome": selection.outcome,
        "selector": selection.selector,
        "fallback": selection.fallback,
        "conditions": {key: list(values) for key, values in selection.conditions.items()},
        "condition_matches": [m.to_dict() for m in selection.condition_matches],
        "needs_condition": selection.fork.to_dict() if selection.fork else None,
        "open_questions": list(selection.open_questions),
        "records": records,
        "rejected": rejected[:MAX_LISTED_REJECTED],
        "rejected_count": len(rejected),
        "candidates": selection.candidates,
        "selection_ms": round(selection.selection_ms, 3),
        "retrieval_ms": None if selection.retrieval_ms is None else round(selection.retrieval_ms, 3),
    }


def _capsule(capsule: dict[str, Any] | None) -> dict[str, Any] | None:
    """The parts of a claim capsule a packet does not already say (its path and title are the evidence's;
    a derived capsule's claims are sentences of the evidence, so only the first few are repeated)."""
    if capsule is None:
        return None
    kept = {key: capsule[key] for key in CAPSULE_KEYS}
    if kept["derived"]:  # read from the passages the evidence quotes: the first few say what it is
        kept["claims"] = kept["claims"][:MAX_DERIVED_CLAIMS]
    return kept


def selection_size(selection: ApplicabilitySelection, unit: str) -> int:
    """How much of a budget (``unit``: chars or bytes) the selection's own fields take."""
    fields = selection_fields(selection)
    # Timings are sized at their widest, so the room left for evidence (and with it the packet and its
    # trace id) does not change with how long this run took.
    fields.update(selection_ms=TIMING_RESERVE, retrieval_ms=TIMING_RESERVE)
    text = serialize({"selection": fields})
    return len(text.encode("utf-8")) if unit == "bytes" else len(text)


@dataclass(frozen=True)
class SelectionPacket(Packet):
    """A packet whose evidence is the selected records' passages, with the selection beside it."""

    selection: ApplicabilitySelection | None = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["selection"] = selection_fields(self.selection) if self.selection is not None else None
        return data

    @property
    def records(self) -> list[str]:
        return self.selection.ids if self.selection is not None else []

    def __repr__(self) -> str:
        outcome = self.selection.outcome if self.selection is not None else "no selection"
        size = f"{self.budget.used:,}/{self.budget.limit:,} {self.budget.unit}"
        return f"<SelectionPacket {self.query[:40]!r} {outcome}: {self.records}; {size}>"

    def __str__(self) -> str:
        from .selection_render import render_text

        return f"{render_text(self.selection)}\n\n{super().__str__()}" if self.selection else super().__str__()

    def _repr_markdown_(self) -> str:
        from .selection_render import render_markdown

        body = super()._repr_markdown_()
        return f"{render_markdown(self.selection)}\n\n{body}" if self.selection else body

    def _repr_html_(self) -> str:
        from .selection_render import render_html

        body = super()._repr_html_()
        return f"{render_html(self.selection)}{body}" if self.selection else body
