"""The evidence packet: the JSON contract every adapter returns.

The budget caps the whole serialized packet, metadata included. The canonical
serialization is compact JSON (``separators=(",", ":")``, UTF-8, non-ASCII kept):
``budget.used`` is the size of exactly that text, in the budget's unit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ..errors import BudgetError
from .instructions import EVIDENCE_NOTICE, instruction_cue

if TYPE_CHECKING:
    import pandas

BudgetUnit = Literal["bytes", "chars"]
BUDGET_UNITS: tuple[str, ...] = ("bytes", "chars")
DEFAULT_BUDGET_UNIT: BudgetUnit = "chars"
DEFAULT_BUDGET_LIMIT = 20_000
MIN_BUDGET = 1_000
MAX_BUDGET = 1_000_000
PACKET_VERSION = 5  # 3: "confidence"; 4: "evidence_notice", items' "instruction_like"/"instruction_cue";
# 5: "record_values", "verify_live_before_acting", "live_sources"; items' "live_status",
#    "verify_live_before_acting", "source_sha256", "source_revision", "note_revision", "partly_superseded_by"
#    and "cell" (a notebook passage's cell); conflicts "partly_superseded(...)" and "live(...)"
MAX_LISTED_EXCLUSIONS = 20  # excluded items named in the packet; the counts cover all of them


@dataclass(frozen=True)
class Budget:
    """A size cap on the serialized packet, and how much of it was used."""

    unit: BudgetUnit
    limit: int
    used: int = 0

    @classmethod
    def checked(cls, unit: str, limit: int) -> Budget:
        """A budget whose unit and limit are in the accepted range, else ``BudgetError``."""
        if unit not in BUDGET_UNITS:
            raise BudgetError(f"budget unit must be 'bytes' or 'chars', not {unit!r}")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise BudgetError(f"budget limit must be a whole number, not {limit!r}")
        if not MIN_BUDGET <= limit <= MAX_BUDGET:
            raise BudgetError(f"budget of {limit:,} {unit} is outside the accepted range {MIN_BUDGET:,}-{MAX_BUDGET:,}")
        return cls(unit, limit)  # type: ignore[arg-type]

    def measure(self, text: str) -> int:
        return len(text.encode("utf-8")) if self.unit == "bytes" else len(text)


DEFAULT_BUDGET = Budget(DEFAULT_BUDGET_UNIT, DEFAULT_BUDGET_LIMIT)


@dataclass(frozen=True)
class LaneHit:
    """Where one lane ranked a passage, with that lane's own raw score."""

    lane: str
    rank: int
    score: float


@dataclass(frozen=True)
class LaneReport:
    """What one retrieval lane did for this query."""

    name: str
    status: Literal["ok", "empty", "stale", "unavailable"]
    candidates: int
    index_version: int | None
    high_water: int | None
    score_basis: str
    lag: int = 0
    reason: str | None = None


@dataclass(frozen=True)
class Evidence:
    """One admitted passage: the exact cited excerpt plus what it can and cannot prove."""

    ref: str
    id: str
    path: str
    line_start: int
    line_end: int
    excerpt: str
    module: str
    heading: str
    observed_at: str | None
    source_age_days: int | None
    freshness: str
    fresh_for_days: int
    indexed_at: str
    live_verified: bool
    authority: str | None
    status: str | None
    retrieved_by: tuple[LaneHit, ...]
    rank: int
    score: float
    reason: str
    truncated: bool
    role: str = "current"
    asserts: Mapping[str, Any] = field(default_factory=dict)
    duplicates: tuple[str, ...] = ()
    scope: tuple[str, ...] = ()  # the audience the note speaks for; empty = everyone
    live_status: str = "not_checked"  # verified | contradicted | unavailable | not_checked
    verify_live: str | None = None  # why its facts need a live read before anyone acts on them
    source_sha256: str = ""  # sha256 of the note bytes the passage was read from
    source_revision: int = 0  # the store's revision of the note (1 = first indexed, +1 per changed save)
    note_revision: str | None = None  # the note's own declared ``revision``
    partly_superseded_by: tuple[str, ...] = ()  # paths of valid notes that amend this one (they govern the changes)
    cell_id: str | None = None  # a notebook passage: its Markdown cell's id (lines count inside the cell) ...
    cell_index: int | None = None  # ... and its 0-based position among the notebook's cells

    @property
    def cell(self) -> dict[str, Any] | None:
        """``{"id", "index"}`` of the notebook cell the lines are in, else ``None`` (a Markdown note)."""
        return None if self.cell_index is None else {"id": self.cell_id, "index": self.cell_index}

    @property
    def instruction_cue(self) -> str | None:
        """The cue that makes the excerpt read like an instruction to an agent (see output.instructions)."""
        return instruction_cue(self.excerpt)


@dataclass(frozen=True)
class ConflictSide:
    """One side of a conflict: the passage, its ref if it is in the packet, and its value."""

    ref: str | None
    id: str
    value: Any
    authority: str | None
    status: str | None


@dataclass(frozen=True)
class Conflict:
    """Two or more candidates that disagree on one proposition, and how that was resolved."""

    id: str
    proposition: str
    evidence: tuple[ConflictSide, ...]
    resolution: str
    winner: str | None
    required_behavior: str


@dataclass(frozen=True)
class RecordValue:
    """What a system of record holds for one asserted proposition, read live for this packet."""

    proposition: str
    value: Any
    source: str
    checked_at: str | None
    contradicts: tuple[str, ...] = ()  # passage ids of the notes saying otherwise (the record wins)
    confirms: tuple[str, ...] = ()  # passage ids of the notes saying the same


@dataclass(frozen=True)
class LiveRead:
    """An item whose facts must be read live before acting, and none was (or the read failed)."""

    ref: str
    id: str
    keys: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class LiveSourceState:
    """How one configured live source fared for this packet."""

    name: str
    location: str
    status: str  # answered | unavailable
    checked_at: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class Excluded:
    """An in-scope candidate kept out as current evidence, with its reason code."""

    id: str
    path: str
    line_start: int
    line_end: int
    reason: str
    detail: str
    cell_id: str | None = None
    cell_index: int | None = None


@dataclass(frozen=True)
class Packet:
    """A cited, budgeted answer to one query. Render it, serialize it, or read its fields."""

    query: str
    as_of: str
    budget: Budget
    projection: str
    lanes: tuple[LaneReport, ...]
    evidence: tuple[Evidence, ...]
    abstained: bool
    abstention_reason: str | None
    exclusions: Mapping[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    trace_id: str = ""
    scopes: tuple[str, ...] = ()
    intent: str = "orient"
    conflicts: tuple[Conflict, ...] = ()
    excluded: tuple[Excluded, ...] = ()
    confidence: float | None = None  # probability that the evidence answers the question (None: not judged)
    record_values: tuple[RecordValue, ...] = ()  # what the systems of record hold; leads the packet
    verify_live_before_acting: tuple[LiveRead, ...] = ()
    live_sources: tuple[LiveSourceState, ...] = ()
    # Where the cited paths live (for links in HTML); not part of the JSON contract.
    source_root: str | None = field(default=None, compare=False, repr=False)

    # ------------------------------------------------------------ serialization

    def to_dict(self) -> dict[str, Any]:
        """The packet as plain JSON-ready data, keys in contract order."""
        return {
            "packet_version": PACKET_VERSION,
            "evidence_notice": EVIDENCE_NOTICE,
            "trace_id": self.trace_id,
            "query": self.query,
            "as_of": self.as_of,
            "scopes": list(self.scopes),
            "intent": self.intent,
            "budget": {"unit": self.budget.unit, "limit": self.budget.limit, "used": self.budget.used},
            "projection": self.projection,
            "lanes": [_lane_dict(lane) for lane in self.lanes],
            "abstained": self.abstained,
            "abstention_reason": self.abstention_reason,
            "confidence": self.confidence,
            "record_values": [record_value_dict(value) for value in self.record_values],
            "verify_live_before_acting": [live_read_dict(read) for read in self.verify_live_before_acting],
            "live_sources": [live_source_dict(source) for source in self.live_sources],
            "evidence": [evidence_dict(item) for item in self.evidence],
            "conflicts": [conflict_dict(conflict) for conflict in self.conflicts],
            "exclusions": dict(self.exclusions),
            "excluded": [excluded_dict(item) for item in self.excluded],
            "warnings": list(self.warnings),
        }

    def to_json(self, indent: int | None = None) -> str:
        """Canonical compact JSON (what the budget measures); ``indent`` for reading only."""
        if indent is not None:
            return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)
        return serialize(self.to_dict())

    def size(self) -> int:
        """Size of the canonical serialization in the budget's unit."""
        return self.budget.measure(self.to_json())

    def with_measured_budget(self) -> Packet:
        """This packet with ``budget.used`` equal to its own serialized size.

        Serialized once: ``used`` appears once, as a plain integer, so another value changes the
        size by its difference in digits alone (ASCII digits: one byte and one character each).
        """
        rest = self.size() - len(str(self.budget.used))
        used = self.budget.used
        for _ in range(8):  # used's own digits change the size; a fixed point comes within a few steps
            size = rest + len(str(used))
            if size == used:
                return self if used == self.budget.used else replace(self, budget=replace(self.budget, used=used))
            used = size
        raise AssertionError("budget.used did not settle")  # pragma: no cover - digits converge

    def to_frame(self) -> pandas.DataFrame:
        """One row per evidence item (pandas)."""
        from .render import to_frame

        return to_frame(self)

    # ------------------------------------------------------------ display

    def __repr__(self) -> str:
        outcome = f"abstained: {self.abstention_reason}" if self.abstained else f"{len(self.evidence)} evidence"
        size = f"{self.budget.used:,}/{self.budget.limit:,} {self.budget.unit}"
        return f"<Packet {self.query[:40]!r} {outcome}; {size}>"

    def __str__(self) -> str:
        from .render import to_text

        return to_text(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self) if cycle else str(self))

    def _repr_html_(self) -> str:
        from .render import to_html

        return to_html(self)

    def _repr_markdown_(self) -> str:
        from .render import to_markdown

        return to_markdown(self)


def serialize(data: Any) -> str:
    """Compact, order-preserving JSON: the form every budget is measured on."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _lane_dict(lane: LaneReport) -> dict[str, Any]:
    return {
        "name": lane.name,
        "status": lane.status,
        "candidates": lane.candidates,
        "index_version": lane.index_version,
        "high_water": lane.high_water,
        "lag": lane.lag,
        "score_basis": lane.score_basis,
        "reason": lane.reason,
    }


def evidence_dict(item: Evidence) -> dict[str, Any]:
    return {
        "ref": item.ref,
        "id": item.id,
        "path": item.path,
        "line_start": item.line_start,
        "line_end": item.line_end,
        "module": item.module,
        "heading": item.heading,
        "excerpt": item.excerpt,
        "observed_at": item.observed_at,
        "source_age_days": item.source_age_days,
        "freshness": item.freshness,
        "fresh_for_days": item.fresh_for_days,
        "indexed_at": item.indexed_at,
        "live_verified": item.live_verified,
        "live_status": item.live_status,
        "verify_live_before_acting": item.verify_live is not None,  # why: the packet's list of the same name
        "source_sha256": item.source_sha256,
        "source_revision": item.source_revision,
        "note_revision": item.note_revision,
        "authority": item.authority,
        "status": item.status,
        "role": item.role,
        "scope": list(item.scope),
        "asserts": dict(item.asserts),
        "duplicates": list(item.duplicates),
        "retrieved_by": [{"lane": h.lane, "rank": h.rank, "score": h.score} for h in item.retrieved_by],
        "rank": item.rank,
        "score": item.score,
        "reason": item.reason,
        "truncated": item.truncated,
        "instruction_like": (cue := item.instruction_cue) is not None,
        "instruction_cue": cue,
        "partly_superseded_by": list(item.partly_superseded_by),
        "cell": item.cell,
    }


def conflict_dict(conflict: Conflict) -> dict[str, Any]:
    return {
        "id": conflict.id,
        "proposition": conflict.proposition,
        "evidence": [
            {"ref": side.ref, "id": side.id, "value": side.value, "authority": side.authority, "status": side.status}
            for side in conflict.evidence
        ],
        "resolution": conflict.resolution,
        "winner": conflict.winner,
        "required_behavior": conflict.required_behavior,
    }


def record_value_dict(value: RecordValue) -> dict[str, Any]:
    return {
        "proposition": value.proposition,
        "value": value.value,
        "source": value.source,
        "checked_at": value.checked_at,
        "contradicts": list(value.contradicts),
        "confirms": list(value.confirms),
    }


def live_read_dict(read: LiveRead) -> dict[str, Any]:
    return {"ref": read.ref, "id": read.id, "keys": list(read.keys), "reason": read.reason}


def live_source_dict(source: LiveSourceState) -> dict[str, Any]:
    return {
        "name": source.name,
        "location": source.location,
        "status": source.status,
        "checked_at": source.checked_at,
        "detail": source.detail,
    }


def excluded_dict(item: Excluded) -> dict[str, Any]:
    return {
        "id": item.id,
        "path": item.path,
        "line_start": item.line_start,
        "line_end": item.line_end,
        "reason": item.reason,
        "detail": item.detail,
        "cell": None if item.cell_index is None else {"id": item.cell_id, "index": item.cell_index},
    }
