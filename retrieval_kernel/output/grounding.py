"""The grounding check: does a generated answer stay within its evidence packet?

``check_grounding(packet, claims)`` takes a packet (a ``Packet`` or its ``to_dict()``
form) and the answer's claims (``Claim`` objects, or text parsed by ``parse_claims``:
one claim per non-blank line, citations written ``[e3]``, ``[e1, e3]`` or ``[e1][e3]``
anywhere in the line; list markers such as ``-`` or ``1.`` are dropped).

Every rule is lexical and deterministic; nothing here understands meaning. Terms:

* the *numbers* of a text are its digit runs not glued to a preceding letter, digit
  or dot, with thousands commas and a decimal part (``14 days`` -> 14, ``30%`` -> 30,
  ``1,000`` -> 1000, ``2.5`` -> 2.5; ``e3``, ``v2`` are not numbers; no signs, so
  ``2026-10-15`` is 2026, 10, 15); they compare by value (``14.0`` equals ``14``);
* the *content words* of a text are its ``lexical.analyze`` terms (lower-cased, stop
  words dropped, Porter2 stems) that do not start with a digit.

Findings per claim (code: rule):

* ``uncited``: the claim has no citation.
* ``unknown_ref``: a citation names a ref not in the packet's evidence.
* ``unsupported``: the support test fails on the claim's known cited items, taken
  together. The test passes when (1) every number of the claim is a number of a
  cited excerpt or of a value in a cited item's ``asserts``, and (2) at least
  ``SUPPORT_WORD_FRACTION`` of the claim's distinct content words are content words
  of the cited excerpts (a claim without content words passes (2) if it has a
  number; a claim with neither cannot be checked and fails).
* ``cites_historical``: a cited item has role ``historical`` or status
  ``superseded``, and the claim does not frame itself as history (none of the
  ``HISTORICAL_WORDS``, e.g. "previously", "superseded").
* ``contradicts_resolution``: for a resolved conflict (it has a winner and is not
  ``unresolved``) linked to the claim, the claim states a loser's value that differs
  from the winner's, or cites a loser. Historically framed claims may state or cite
  superseded losers.
* ``takes_side_in_unresolved_conflict``: for an unresolved conflict linked to the
  claim, the claim states some, but not all, of the sides' distinct values.

A claim is *linked* to a conflict when it cites one of the conflict's items or
mentions its proposition (at least ``PROPOSITION_MENTION_FRACTION`` of the content
words of the proposition name, ``refund_window_days`` -> refund, window, day). A
claim *states* a value when it contains all of the value's numbers or, for a value
without numbers, all of its content words.

A claim is *supported* when it has no finding at all. Report metrics:

* ``citation_precision``: precise (claim, ref) pairs / all (claim, ref) pairs with a
  known ref (each distinct ref once per claim), ``None`` without such pairs. A pair
  is precise when that item alone passes the support test, or when the claim passes
  with all its known citations but fails without this one (the ref is needed).
* ``citation_completeness``: claims with at least one citation / all claims.
* ``supported_fraction``: supported claims / all claims; ``unsupported_claims``:
  claims not supported. Ratios are ``None`` when there are no claims.

Known limits: stop words include "not", so negation is invisible, and inferences
("20 days > 14 days, so not eligible") pass only if the excerpts share their words.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..errors import InputError
from ..projections.lexical import make_analyzer, term_words

MAX_CLAIM_CHARS = 10_000
SUPPORT_WORD_FRACTION = 0.5
PROPOSITION_MENTION_FRACTION = 0.5
HISTORICAL_WORDS = "previous previously former formerly earlier superseded replaced outdated obsolete historical"

_ANALYZER = make_analyzer()
_CITATION = re.compile(r"\[\s*e\d+(?:\s*,\s*e\d+)*\s*\]", re.IGNORECASE)
_REF = re.compile(r"e\d+", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")

# A stated value: its numbers, or (when it has none) its content words.
_ValueKey = tuple[frozenset[Decimal], frozenset[str]]


# ---------------------------------------------------------------- public types


@dataclass(frozen=True)
class Claim:
    """One sentence of an answer and the evidence refs it cites."""

    text: str
    cites: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InputError(f"a claim's text must be a string, not {type(self.text).__name__}")
        object.__setattr__(self, "cites", tuple(self.cites))


@dataclass(frozen=True)
class Finding:
    """One problem with a claim: a short code and a message for people."""

    code: str
    message: str


@dataclass(frozen=True)
class ClaimResult:
    """What the check found for one claim."""

    text: str
    cites: tuple[str, ...]
    supported: bool
    findings: tuple[Finding, ...] = ()

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(f.code for f in self.findings)


@dataclass(frozen=True)
class GroundingReport:
    """Per-claim results and answer-level metrics (definitions in the module docstring)."""

    claims: tuple[ClaimResult, ...]
    citation_precision: float | None
    citation_completeness: float | None
    supported_fraction: float | None
    unsupported_claims: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data."""
        return {
            "claims": [
                {
                    "text": c.text,
                    "cites": list(c.cites),
                    "supported": c.supported,
                    "findings": [{"code": f.code, "message": f.message} for f in c.findings],
                }
                for c in self.claims
            ],
            "citation_precision": self.citation_precision,
            "citation_completeness": self.citation_completeness,
            "supported_fraction": self.supported_fraction,
            "unsupported_claims": self.unsupported_claims,
        }

    def summary(self) -> str:
        supported = len(self.claims) - self.unsupported_claims
        return (
            f"{supported} of {len(self.claims)} claims supported · citation precision "
            f"{_fmt(self.citation_precision)} · citation completeness {_fmt(self.citation_completeness)}"
        )

    def __str__(self) -> str:
        out = [f"Grounding: {self.summary()}"]
        for n, claim in enumerate(self.claims, 1):
            mark = "ok" if claim.supported else "NO"
            cites = ",".join(claim.cites) or "-"
            out.append(f"{n:>3} {mark}  {cites:<10} {_clip(claim.text, 70)}")
            out += [f"           {f.code}: {f.message}" for f in claim.findings]
        return "\n".join(out)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        rows = "".join(_html_row(n, claim) for n, claim in enumerate(self.claims, 1))
        head = "<tr><th>#</th><th>ok</th><th>cites</th><th>claim</th><th>findings</th></tr>"
        return f'<div class="rk-grounding"><div>{html.escape(self.summary())}</div><table>{head}{rows}</table></div>'


def _html_row(number: int, claim: ClaimResult) -> str:
    esc = html.escape
    findings = "<br>".join(f"<b>{esc(f.code)}</b>: {esc(f.message)}" for f in claim.findings)
    mark = "✓" if claim.supported else "✗"
    cells = [str(number), mark, esc(", ".join(claim.cites)), esc(claim.text), findings]
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


# ---------------------------------------------------------------- parsing


def parse_claims(text: str) -> tuple[Claim, ...]:
    """One claim per non-blank line; ``InputError`` for empty text or an overlong line."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("no claims to check: the answer text is empty or only whitespace")
    claims = []
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) > MAX_CLAIM_CHARS:
            raise InputError(f"claim on line {number} is {len(line):,} characters; the limit is {MAX_CLAIM_CHARS:,}")
        if line.strip():
            claims.append(_parse_line(line))
    return tuple(claims)


def _parse_line(line: str) -> Claim:
    refs = [ref.lower() for group in _CITATION.findall(line) for ref in _REF.findall(group)]
    text = " ".join(_CITATION.sub(" ", line).split())
    text = re.sub(r"\s+([.,;:!?])", r"\1", _LIST_MARKER.sub("", text))
    return Claim(text, tuple(dict.fromkeys(refs)))


# ---------------------------------------------------------------- text analysis


@dataclass(frozen=True)
class _Terms:
    """The checkable parts of a text: its numbers and its content words (stem -> word)."""

    numbers: frozenset[Decimal]
    words: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, text: str) -> _Terms:
        words = {stem: word for stem, word in term_words(text, _ANALYZER).items() if not stem[:1].isdigit()}
        return cls(_numbers(text), words)

    @property
    def stems(self) -> frozenset[str]:
        return frozenset(self.words)


def _numbers(text: str) -> frozenset[Decimal]:
    return frozenset(Decimal(match.replace(",", "")) for match in _NUMBER.findall(text))


def _value_numbers(value: Any) -> frozenset[Decimal]:
    """The numbers of an ``asserts`` / conflict value (bools and non-finite floats have none)."""
    if isinstance(value, bool) or value is None:
        return frozenset()
    if isinstance(value, int):
        return frozenset({Decimal(value)})
    if isinstance(value, float):
        return frozenset({Decimal(repr(value))}) if math.isfinite(value) else frozenset()
    if isinstance(value, str):
        return _numbers(value)
    if isinstance(value, list | tuple | set | frozenset):
        return frozenset(n for v in value for n in _value_numbers(v))
    return frozenset()


def _value_key(value: Any) -> _ValueKey | None:
    numbers = _value_numbers(value)
    if numbers:
        return numbers, frozenset()
    words = _Terms.of(value).stems if isinstance(value, str) else frozenset()
    return (frozenset(), words) if words else None


def _states(claim: _Terms, key: _ValueKey) -> bool:
    numbers, words = key
    return numbers <= claim.numbers and words <= claim.stems


def _show(number: Decimal) -> str:
    return f"{number.normalize():f}"


_HISTORICAL = _Terms.of(HISTORICAL_WORDS).stems


# ---------------------------------------------------------------- the packet


@dataclass(frozen=True)
class _Item:
    """One evidence item, analysed once."""

    ref: str
    id: str | None
    historical: bool
    terms: _Terms
    asserted: frozenset[Decimal]


@dataclass(frozen=True)
class _Side:
    """One conflict entry."""

    ref: str | None
    label: str
    key: _ValueKey | None
    winner: bool
    historical: bool


@dataclass(frozen=True)
class _Conflict:
    id: str
    proposition: str
    resolution: str
    resolved: bool
    words: frozenset[str]
    sides: tuple[_Side, ...]

    @property
    def refs(self) -> frozenset[str]:
        return frozenset(s.ref for s in self.sides if s.ref)


def _packet_dict(packet: Any) -> Mapping[str, Any]:
    if hasattr(packet, "to_dict"):
        packet = packet.to_dict()
    if not isinstance(packet, Mapping):
        raise InputError(f"packet must be a Packet or its to_dict() mapping, not {type(packet).__name__}")
    return packet


def _items(packet: Mapping[str, Any]) -> dict[str, _Item]:
    raws = [raw for raw in packet.get("evidence") or [] if isinstance(raw, Mapping) and raw.get("ref")]
    return {str(raw["ref"]): _item(raw) for raw in raws}


def _item(raw: Mapping[str, Any]) -> _Item:
    historical = raw.get("role") == "historical" or raw.get("status") == "superseded"
    asserted = frozenset(n for value in (raw.get("asserts") or {}).values() for n in _value_numbers(value))
    return _Item(str(raw["ref"]), raw.get("id"), historical, _Terms.of(raw.get("excerpt") or ""), asserted)


def _conflicts(packet: Mapping[str, Any], items: Mapping[str, _Item]) -> list[_Conflict]:
    ref_of = {item.id: item.ref for item in items.values() if item.id}
    conflicts = []
    for raw in packet.get("conflicts") or []:
        if not isinstance(raw, Mapping):
            continue
        winner = raw.get("winner")
        resolution = str(raw.get("resolution") or "unresolved")
        resolved = winner is not None and resolution != "unresolved"
        resolved = resolved and raw.get("required_behavior") != "abstain_or_escalate"
        entries = [entry for entry in raw.get("evidence") or [] if isinstance(entry, Mapping)]
        sides = tuple(_side(entry, winner, ref_of, items) for entry in entries)
        proposition = str(raw.get("proposition") or "")
        words = _Terms.of(re.sub(r"[_.]", " ", proposition)).stems
        conflicts.append(_Conflict(str(raw.get("id") or "?"), proposition, resolution, resolved, words, sides))
    return conflicts


def _side(entry: Mapping[str, Any], winner: Any, ref_of: Mapping[str, str], items: Mapping[str, _Item]) -> _Side:
    ref: str | None = entry.get("ref") or ref_of.get(str(entry.get("id")))
    historical = entry.get("status") == "superseded" or (ref is not None and ref in items and items[ref].historical)
    is_winner = winner is not None and winner in (entry.get("id"), entry.get("ref"))
    return _Side(ref, str(entry.get("value")), _value_key(entry.get("value")), is_winner, historical)


# ---------------------------------------------------------------- the checks


def _support_gaps(claim: _Terms, cited: Sequence[_Item]) -> list[str]:
    """Why the cited items together fail the support test; empty when they pass."""
    if not claim.numbers and not claim.words:
        return ["the claim has no content words or numbers to check"]
    gaps = []
    available = frozenset().union(*(i.terms.numbers | i.asserted for i in cited))
    missing = sorted(claim.numbers - available)
    if missing:
        gaps.append(f"not in the cited evidence: {', '.join(map(_show, missing))}")
    if claim.words:
        found = claim.stems & frozenset().union(*(i.terms.stems for i in cited))
        if len(found) < SUPPORT_WORD_FRACTION * len(claim.words):
            absent = ", ".join(w for s, w in claim.words.items() if s not in found)
            gaps.append(
                f"{len(found)} of {len(claim.words)} content words are in the cited excerpts "
                f"(need {SUPPORT_WORD_FRACTION:.0%}); missing: {absent}"
            )
    return gaps


def _precise(claim: _Terms, cited: Sequence[_Item], together_ok: bool) -> list[bool]:
    """Per cited item: supports the claim alone, or is needed for the claim to pass."""
    flags = []
    for item in cited:
        others = [i for i in cited if i is not item]
        flags.append(not _support_gaps(claim, [item]) or (together_ok and bool(_support_gaps(claim, others))))
    return flags


def _historical_findings(cited: Iterable[_Item]) -> list[Finding]:
    return [
        Finding("cites_historical", f"{i.ref} is historical or superseded: shown for audit, not current evidence")
        for i in cited
        if i.historical
    ]


def _contradiction(conflict: _Conflict, claim: _Terms, cites: Sequence[str], framed: bool) -> Finding | None:
    winner_keys = {s.key for s in conflict.sides if s.winner}
    losers = [s for s in conflict.sides if not s.winner and not (framed and s.historical)]
    stated = sorted({s.label for s in losers if s.key and s.key not in winner_keys and _states(claim, s.key)})
    cited = [s.ref for s in losers if s.ref and s.ref in cites]
    reasons = ([f"states {', '.join(stated)}"] if stated else []) + ([f"cites {', '.join(cited)}"] if cited else [])
    if not reasons:
        return None
    winner = ", ".join(s.label for s in conflict.sides if s.winner) or "?"
    return Finding(
        "contradicts_resolution",
        f"{' and '.join(reasons)}: the losing side of {conflict.id} on {conflict.proposition} "
        f"({conflict.resolution}); the winner says {winner}",
    )


def _side_taking(conflict: _Conflict, claim: _Terms) -> Finding | None:
    values: dict[_ValueKey, str] = {s.key: s.label for s in conflict.sides if s.key}
    stated = [label for key, label in values.items() if _states(claim, key)]
    if not stated or len(stated) == len(values):
        return None
    return Finding(
        "takes_side_in_unresolved_conflict",
        f"states {', '.join(stated)} for {conflict.proposition}, one side of unresolved conflict {conflict.id}; "
        "the packet requires abstaining or escalating",
    )


def _linked(conflict: _Conflict, claim: _Terms, cites: Sequence[str]) -> bool:
    """The claim cites one of the conflict's items or mentions its proposition."""
    if conflict.refs & set(cites):
        return True
    shared = len(conflict.words & claim.stems)
    return bool(conflict.words) and shared >= PROPOSITION_MENTION_FRACTION * len(conflict.words)


def _conflict_findings(conflicts: Iterable[_Conflict], claim: _Terms, cites: Sequence[str]) -> list[Finding]:
    framed = bool(claim.stems & _HISTORICAL)
    findings = []
    for conflict in (c for c in conflicts if _linked(c, claim, cites)):
        finding = _contradiction(conflict, claim, cites, framed) if conflict.resolved else _side_taking(conflict, claim)
        if finding:
            findings.append(finding)
    return findings


def _check(claim: Claim, items: Mapping[str, _Item], conflicts: list[_Conflict]) -> tuple[ClaimResult, list[bool]]:
    """One claim's result and the precision flag of each known cited ref."""
    terms = _Terms.of(claim.text)
    cites = tuple(dict.fromkeys(claim.cites))
    cited = [items[ref] for ref in cites if ref in items]
    unknown = [ref for ref in cites if ref not in items]
    findings = []
    if not cites:
        findings.append(Finding("uncited", "no citation: a material claim needs evidence"))
    if unknown:
        findings.append(Finding("unknown_ref", f"cites {', '.join(unknown)}, not in the packet's evidence"))
    gaps = _support_gaps(terms, cited) if cited else []
    if gaps:
        findings.append(Finding("unsupported", "; ".join(gaps)))
    if not terms.stems & _HISTORICAL:
        findings += _historical_findings(cited)
    findings += _conflict_findings(conflicts, terms, cites)
    flags = _precise(terms, cited, together_ok=not gaps) if cited else []
    return ClaimResult(claim.text, cites, not findings, tuple(findings)), flags


def _as_claims(claims: str | Sequence[Claim]) -> tuple[Claim, ...]:
    if isinstance(claims, str):
        return parse_claims(claims)
    out = tuple(claims)
    for claim in out:
        if not isinstance(claim, Claim):
            raise InputError(f"claims must be a string or a sequence of Claim, not {type(claim).__name__}")
        if len(claim.text) > MAX_CLAIM_CHARS:
            raise InputError(f"a claim is {len(claim.text):,} characters; the limit is {MAX_CLAIM_CHARS:,}")
    return out


def check_grounding(packet: Any, claims: str | Sequence[Claim]) -> GroundingReport:
    """Check each claim against the packet's evidence and conflicts (rules in the module docstring)."""
    data = _packet_dict(packet)
    items = _items(data)
    conflicts = _conflicts(data, items)
    checked = [_check(claim, items, conflicts) for claim in _as_claims(claims)]
    results = tuple(result for result, _ in checked)
    flags = [flag for _, pair_flags in checked for flag in pair_flags]
    supported = sum(r.supported for r in results)
    return GroundingReport(
        claims=results,
        citation_precision=_ratio(sum(flags), len(flags)),
        citation_completeness=_ratio(sum(bool(r.cites) for r in results), len(results)),
        supported_fraction=_ratio(supported, len(results)),
        unsupported_claims=len(results) - supported,
    )


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
