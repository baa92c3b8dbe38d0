"""Candidate records: retrieved notes grouped by note, each with the claim capsule its front matter declares.

A capsule (``claims``, ``applies_when``, ``status``, ``superseded_by``, ``rule``,
``critical``, ``evidence``, ``kind``) is copied as written, never rewritten. A
candidate's words are analysed when it is built (with retrieval), so selection only
compares sets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..corpus.facts import normalize_status
from ..projections.lexical import analyze
from .derived import derive_claims

if TYPE_CHECKING:
    from ..pipeline.candidates import Candidate

_TERMS_CACHE: dict[str, frozenset[str]] = {}
_TERMS_CACHE_MAX = 20_000


def _terms(text: str) -> frozenset[str]:
    """Analysed terms of ``text`` (cached by the text itself)."""
    terms = _TERMS_CACHE.get(text)
    if terms is None:
        if len(_TERMS_CACHE) > _TERMS_CACHE_MAX:
            _TERMS_CACHE.clear()
        terms = frozenset(analyze(text))
        _TERMS_CACHE[text] = terms
    return terms


def text_list(value: object) -> tuple[str, ...]:
    """A front-matter value (one item or a list) as its non-empty items, stripped."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    return tuple(str(item).strip() for item in items if item is not None and str(item).strip())


def normalize_value(value: object) -> str:
    """A condition key or value as compared: lower case, inner spaces as hyphens."""
    return "-".join(str(value).strip().lower().split())


@dataclass(frozen=True)
class Capsule:
    """A record's claim capsule, copied from its front matter (never rewritten).

    ``status`` is normalised like every note status (``active`` reads ``current``);
    ``status_text`` keeps it as written.
    """

    record: str
    path: str
    title: str
    kind: str | None = None
    claims: tuple[str, ...] = ()
    applies_when: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    status: str | None = None
    status_text: str | None = None
    superseded_by: tuple[str, ...] = ()
    rule: str | None = None
    critical: bool = False
    supports: tuple[str, ...] = ()
    contradicts: tuple[str, ...] = ()
    derived: bool = False  # claims read from the note's text (no ``claims:`` in its front matter)
    conditions_text: tuple[str, ...] = ()  # derived: the sentences saying when it applies

    @classmethod
    def from_metadata(cls, record: str, path: str, title: str, metadata: Mapping[str, Any]) -> Capsule:
        applies: dict[str, tuple[str, ...]] = {}
        raw = metadata.get("applies_when")
        if isinstance(raw, Mapping):
            for key, value in raw.items():
                values = tuple(normalize_value(v) for v in text_list(value))
                if str(key).strip() and values:
                    applies[normalize_value(key)] = values
        evidence = metadata.get("evidence")
        evidence = evidence if isinstance(evidence, Mapping) else {}
        status_text = None if metadata.get("status") is None else str(metadata.get("status")).strip()
        rule = metadata.get("rule")
        return cls(
            record=record,
            path=path,
            title=str(metadata.get("title") or title),
            kind=None if metadata.get("kind") is None else str(metadata["kind"]).strip().lower(),
            claims=text_list(metadata.get("claims")),
            applies_when=applies,
            status=normalize_status(status_text) if status_text else None,
            status_text=status_text,
            superseded_by=text_list(metadata.get("superseded_by")),
            rule=None if rule is None or not str(rule).strip() else str(rule).strip(),
            critical=metadata.get("critical") is True,
            supports=text_list(evidence.get("supports")),
            contradicts=text_list(evidence.get("contradicts")),
        )

    @property
    def is_diagnostic(self) -> bool:
        """A symptom write-up without a fix: declared ``kind: diagnostic``, or no claims at all."""
        return self.kind == "diagnostic" or not self.claims

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "path": self.path,
            "title": self.title,
            "kind": self.kind,
            "claims": list(self.claims),
            "applies_when": {key: list(values) for key, values in self.applies_when.items()},
            "status": self.status,
            "status_text": self.status_text,
            "superseded_by": list(self.superseded_by),
            "rule": self.rule,
            "critical": self.critical,
            "evidence": {"supports": list(self.supports), "contradicts": list(self.contradicts)},
            "derived": self.derived,
            "conditions_text": list(self.conditions_text),
        }

    def text(self) -> str:
        """The capsule's own words (title, claims, rule, conditions): what a record is about."""
        conditions = " ".join(f"{key} {' '.join(values)}" for key, values in self.applies_when.items())
        rule = (self.rule or "").replace("-", " ")
        return "\n".join([self.title, *self.claims, rule, conditions.replace("-", " ").replace("_", " ")])


@dataclass(frozen=True)
class PassageRef:
    """One passage of a candidate record, as cited."""

    id: str
    line_start: int
    line_end: int
    text: str
    heading_path: tuple[str, ...] = ()


@dataclass(frozen=True)
class CandidateRecord:
    """A retrieved note with its capsule and how the lanes found it.

    ``rank`` is the note's place in fused order (1 = best); ``lanes`` maps a lane to
    the best ``(rank, raw score)`` any of the note's passages got there.
    """

    capsule: Capsule
    passages: tuple[PassageRef, ...]
    rank: int
    score: float = 0.0
    lanes: Mapping[str, tuple[int, float]] = field(default_factory=dict)
    clause_cosines: tuple[float, ...] = ()  # dense cosine with each part of the query (see clause_texts)

    @property
    def record(self) -> str:
        return self.capsule.record

    @property
    def capsule_terms(self) -> frozenset[str]:
        """The analysed words of the capsule (computed once per text, when the candidate is built)."""
        return _terms(self.capsule.text())

    @property
    def body_terms(self) -> frozenset[str]:
        return _terms(self.text)

    @property
    def text(self) -> str:
        return "\n\n".join(p.text for p in self.passages)

    @property
    def chars(self) -> int:
        return sum(len(p.text) for p in self.passages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "rank": self.rank,
            "score": self.score,
            "lanes": {lane: {"rank": r, "score": s} for lane, (r, s) in self.lanes.items()},
            "passages": [{"id": p.id, "line_start": p.line_start, "line_end": p.line_end} for p in self.passages],
            "capsule": self.capsule.to_dict(),
        }


def with_derived_claims(capsule: Capsule, passages: Sequence[PassageRef]) -> Capsule:
    """``capsule`` with claims and condition sentences read from ``passages`` (see :mod:`.derived`), marked derived."""
    claims, conditions = derive_claims([(p.heading_path, p.text) for p in passages])
    return replace(capsule, claims=claims, conditions_text=conditions, derived=True)


def group_candidates(ranked: Sequence[Candidate], limit: int | None = None) -> list[CandidateRecord]:
    """Group fused passage candidates by note, in the order of each note's best passage.

    ``limit`` caps the passages read (the fused pool), not the notes returned.
    """
    by_note: dict[str, list[Candidate]] = {}
    for candidate in ranked[:limit] if limit is not None else ranked:
        by_note.setdefault(candidate.stored.passage.module, []).append(candidate)
    records = []
    for rank, (module, group) in enumerate(by_note.items(), 1):
        first = group[0].stored
        lanes: dict[str, tuple[int, float]] = {}
        for candidate in group:
            for hit in candidate.retrieved_by:
                best = lanes.get(hit.lane)
                if best is None or hit.rank < best[0]:
                    lanes[hit.lane] = (hit.rank, hit.score)
        passages = tuple(
            sorted(
                (
                    PassageRef(
                        c.stored.passage.id,
                        c.stored.passage.line_start,
                        c.stored.passage.line_end,
                        c.stored.passage.text,
                        tuple(c.stored.passage.heading_path),
                    )
                    for c in group
                ),
                key=lambda p: p.line_start,
            )
        )
        title = first.passage.heading_path[0] if first.passage.heading_path else first.passage.heading
        capsule = Capsule.from_metadata(module, first.passage.path, title, first.metadata)
        if "claims" not in first.metadata:
            capsule = with_derived_claims(capsule, passages)
        record = CandidateRecord(capsule, passages, rank, max(c.score for c in group), lanes)
        _ = record.capsule_terms, record.body_terms  # analysed here, with retrieval, so selection only reads them
        records.append(record)
    return records
