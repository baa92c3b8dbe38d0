"""Applicability selection: from broadly retrieved lessons, the smallest set that applies.

Retrieval finds related notes; this module decides which of them apply to the task
(seed 001, "Groundtrack"). The pipeline:

1. **Retrieve broadly**: the workspace lanes, fused by rank, give up to
   :data:`~retrieval_kernel.workspace.CANDIDATE_POOL` passages; passages are grouped
   by note (a note is a *record*), in the order of each note's best passage.
2. **Claim capsules**: each record carries the capsule its front matter declares
   (``claims``, ``applies_when``, ``status``, ``superseded_by``, ``rule``,
   ``critical``, ``evidence``, ``kind``), copied as written, never rewritten.
3. **Conditions**: the caller states conditions (``--when key=value``); values are
   also matched in the query text by the rule of :func:`conditions_from_text`.
4. **Selection** (:class:`RuleSelector`, deterministic): hard rules first
   (diagnostic notes without claims, contradicting conditions, superseded and
   disputed advice unless the intent is ``audit``), then an applicability score
   per remaining record: ``sigmoid(bias + weights . features)`` over
   :data:`FEATURES` (dense cosine with the query and with each of its parts,
   BM25F ratio to the best candidate, how much of the query and of its best part
   the capsule and body cover, whether the record is the best for some part,
   whether its conditions matched or are unknown). Records are visited by score:
   nothing is kept when the best is below ``min_first`` (an honest empty answer);
   a further record needs ``min_keep`` (and ``min_ratio`` of the best score) and
   must newly cover at least ``min_gain`` of the query's weighted words (a new
   *need*); one record per ``rule``; at most ``max_records``. Kept records whose
   conditions match come first, then universal ones, then those with unknown
   conditions (flagged ``unknown_condition``).

A :class:`JudgeSelector` wraps any user-supplied judge (for example an LLM call)
with a time budget and falls back to the rule selector when the judge is late or
fails. Weights and thresholds come from ``selector_calibration.json``, written by
``scripts/calibrate_selector.py`` from the lessons suite's calibration split only.
Selection runs in milliseconds: the candidates' words are analysed when they are
built (with retrieval), so selection only compares sets and sums weights.
"""

from __future__ import annotations

import html
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .errors import InputError
from .facts import normalize_status
from .lexical import analyze, make_analyzer
from .render import md_escape

if TYPE_CHECKING:
    from .policy import Candidate
    from .workspace import Workspace

CALIBRATION_FILE = Path(__file__).with_name("selector_calibration.json")

# Rejection reason codes.
CONTRADICTING_CONDITION = "contradicting_condition"
DISPUTED = "disputed"
SUPERSEDED = "superseded"
DUPLICATE_RULE = "duplicate_rule"
DIAGNOSTIC_NO_CLAIMS = "diagnostic_no_claims"
BELOW_THRESHOLD = "below_threshold"
NOT_NEEDED = "not_needed"
BEYOND_LIMIT = "beyond_limit"
NOT_SELECTED_BY_JUDGE = "not_selected_by_judge"
REASONS = (
    CONTRADICTING_CONDITION,
    DISPUTED,
    SUPERSEDED,
    DUPLICATE_RULE,
    DIAGNOSTIC_NO_CLAIMS,
    BELOW_THRESHOLD,
    NOT_NEEDED,
    BEYOND_LIMIT,
    NOT_SELECTED_BY_JUDGE,
)
UNKNOWN_CONDITION = "unknown_condition"  # a flag on a kept record, never a rejection by itself

# Condition states of a record for a task, best first.
MATCHED, UNIVERSAL, UNKNOWN, CONTRADICTING = "matched", "universal", "unknown", "contradicting"
_CONDITION_ORDER = {MATCHED: 0, UNIVERSAL: 1, UNKNOWN: 2, CONTRADICTING: 3}

# Words of a question that say nothing about its subject (the analyzer already drops
# English stop words); they never count as query words a record must cover.
QUERY_FILLER = frozenset(
    analyze(
        "how what which why when where who whom whose should would could shall must might do does did done "
        "need needs needed want wants use uses using used make makes right best way ways correct correctly "
        "properly proper good go going get gets got know tell recommend recommended advice approach handle "
        "handling deal dealing our ours my mine me i us we they them their there here anything something "
        "thing things any some also just now currently really actually please help okay ok"
    )
)
# Words that, within NEGATION_WINDOW words before a condition value, mean the text denies it.
NEGATIONS = frozenset(
    {"not", "no", "never", "without", "isn't", "aren't", "don't", "doesn't", "didn't", "nor", "instead", "rather"}
)
NEGATION_WINDOW = 3
_RAW_WORD = re.compile(r"[\w']+")


# ---------------------------------------------------------------- thresholds


FEATURES = (
    "cosine",  # the record's best dense cosine with the query (0.3 when the dense lane did not propose it)
    "cosine_gap",  # the best cosine among the candidates minus this record's
    "lexical_ratio",  # its best BM25F score over the best candidate's (0 when the lexical lane did not find it)
    "capsule_coverage",  # share of the query's weighted words its capsule (title, claims, rule, conditions) holds
    "coverage",  # the same over capsule and body (body words count half)
    "clause_coverage",  # the best such share over the query's clauses (its parts)
    "clause_best",  # 1 when it covers some clause best of all eligible records
    "clause_cosine",  # its best dense cosine with one part of the query (the whole query's when single-part)
    "clause_cosine_best",  # 1 when no eligible record is closer (dense) to some part of the query
    "matched",  # 1 when its applies_when conditions all match the task's
    "unknown",  # 1 when some of its conditions are not stated by the task
    "rank_inverse",  # 1 / its place in the fused order
)
DEFAULT_WEIGHTS = (5.0, -8.0, 1.5, 2.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, -0.5, 0.5)
DEFAULT_BIAS = -4.0
MISSING_COSINE = 0.3  # below the dense lane's floor (0.32): what a record the dense lane did not propose counts as


@dataclass(frozen=True)
class Thresholds:
    """The rule selector's parameters (weights and thresholds fitted on the calibration split only).

    A record's applicability score is ``sigmoid(bias + weights . features)`` over
    :data:`FEATURES`. ``min_first``: the best record's score below which nothing
    applies; ``min_keep``: the score every further record needs; ``min_gain``: the
    share of the query's weighted words a further record must newly cover (0: off);
    ``max_records``: most records returned; ``body_weight``: how much a query word
    found only in a record's body counts toward coverage; ``min_ratio``: the share of
    the best record's score a further record needs.
    """

    weights: tuple[float, ...] = DEFAULT_WEIGHTS
    bias: float = DEFAULT_BIAS
    min_first: float = 0.5
    min_keep: float = 0.5
    min_gain: float = 0.0
    max_records: int = 6
    body_weight: float = 0.5
    min_ratio: float = 0.0

    def __post_init__(self) -> None:
        if len(self.weights) != len(FEATURES):
            raise InputError(
                f"the selector needs {len(FEATURES)} weights ({', '.join(FEATURES)}), got {len(self.weights)}"
            )

    @classmethod
    def load(cls, path: str | Path | None = None) -> Thresholds:
        """The calibrated parameters from ``path`` (default: the packaged calibration file), else the defaults."""
        chosen = calibration_data(path).get("selector", {})
        known = {key: chosen[key] for key in cls.__dataclass_fields__ if key in chosen}
        if isinstance(known.get("weights"), Mapping):
            known["weights"] = tuple(float(known["weights"].get(name, 0.0)) for name in FEATURES)
        elif "weights" in known:
            known["weights"] = tuple(known["weights"])
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        data = {key: getattr(self, key) for key in self.__dataclass_fields__}
        data["weights"] = dict(zip(FEATURES, self.weights, strict=True))
        return data


def calibration_data(path: str | Path | None = None) -> dict[str, Any]:
    """The whole calibration file (chosen values and calibration metrics), or ``{}``."""
    try:
        data = json.loads(Path(path or CALIBRATION_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


# ---------------------------------------------------------------- capsules


def _text_list(value: object) -> tuple[str, ...]:
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

    @classmethod
    def from_metadata(cls, record: str, path: str, title: str, metadata: Mapping[str, Any]) -> Capsule:
        applies: dict[str, tuple[str, ...]] = {}
        raw = metadata.get("applies_when")
        if isinstance(raw, Mapping):
            for key, value in raw.items():
                values = tuple(normalize_value(v) for v in _text_list(value))
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
            claims=_text_list(metadata.get("claims")),
            applies_when=applies,
            status=normalize_status(status_text) if status_text else None,
            status_text=status_text,
            superseded_by=_text_list(metadata.get("superseded_by")),
            rule=None if rule is None or not str(rule).strip() else str(rule).strip(),
            critical=metadata.get("critical") is True,
            supports=_text_list(evidence.get("supports")),
            contradicts=_text_list(evidence.get("contradicts")),
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
                    )
                    for c in group
                ),
                key=lambda p: p.line_start,
            )
        )
        title = first.passage.heading_path[0] if first.passage.heading_path else first.passage.heading
        capsule = Capsule.from_metadata(module, first.passage.path, title, first.metadata)
        record = CandidateRecord(capsule, passages, rank, max(c.score for c in group), lanes)
        _ = record.capsule_terms, record.body_terms  # analysed here, with retrieval, so selection only reads them
        records.append(record)
    return records


# ---------------------------------------------------------------- conditions


def parse_conditions(spec: Mapping[str, Any] | Sequence[str] | str | None) -> dict[str, frozenset[str]]:
    """Stated conditions: ``{"key": "value" | [values]}``, or ``"key=value"`` strings (``--when``).

    ``key=v1,v2`` states either value. Keys and values are compared lower case with
    inner spaces as hyphens. ``InputError`` for a string without ``=`` or an empty side.
    """
    if spec is None:
        return {}
    pairs: list[tuple[str, str]] = []
    if isinstance(spec, Mapping):
        for key, value in spec.items():
            pairs += [(str(key), item) for item in _text_list(value)]
    else:
        for item in [spec] if isinstance(spec, str) else spec:
            key, sep, value = str(item).partition("=")
            if not sep or not key.strip() or not value.strip():
                raise InputError(f"a condition is key=value (e.g. signature_input=raw-body), not {item!r}")
            pairs += [(key, part) for part in value.split(",") if part.strip()]
    conditions: dict[str, set[str]] = {}
    for key, value in pairs:
        conditions.setdefault(normalize_value(key), set()).add(normalize_value(value))
    return {key: frozenset(values) for key, values in conditions.items()}


@dataclass(frozen=True)
class ConditionMatch:
    """A condition the task states: ``source`` is ``stated`` (by the caller) or ``query`` (matched in its text)."""

    key: str
    value: str
    source: str
    words: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "source": self.source, "words": self.words}


_ANALYZER = make_analyzer()


def _value_terms(value: str) -> tuple[str, ...]:
    return tuple(token.text for token in _ANALYZER(value.replace("-", " ").replace("_", " ")))


def conditions_from_text(query: str, vocabulary: Iterable[tuple[str, str]]) -> list[ConditionMatch]:
    """Condition values the query text states, by this deterministic rule.

    A value (``raw-body``) is split at hyphens and underscores into words, each
    analysed like the index (lower case, stop words dropped, Porter2 stems:
    ``raw bodi``). The query states the value when those stems occur in it as one
    run, in order, stop words between them ignored ("the raw body", "raw-body",
    "raw bodies" all state ``raw-body``; "at least once" states ``at-least-once``).
    A mention preceded within :data:`NEGATION_WINDOW` words by a negation (``not``,
    ``no``, ``without``, ``instead``, ``rather`` ...) does not state the value. A
    value whose stems are a strict part of another stated value's for the same key
    (``json`` inside ``canonical-json``, same place) yields to the longer one. A value
    made only of stop words cannot be matched from text.
    """
    # Whoosh reuses one token object while iterating: copy what is needed.
    tokens = [(token.text, token.startchar, token.endchar) for token in _ANALYZER(query, chars=True)]
    stems = [text for text, _, _ in tokens]
    raw_words = [(m.start(), m.group(0).lower()) for m in _RAW_WORD.finditer(query)]
    found: dict[tuple[str, str], tuple[int, int, str]] = {}
    for key, value in dict.fromkeys(vocabulary):
        terms = _value_terms(value)
        if not terms:
            continue
        for start in range(len(stems) - len(terms) + 1):
            if tuple(stems[start : start + len(terms)]) != terms:
                continue
            begin, end = tokens[start][1], tokens[start + len(terms) - 1][2]
            before = [word for offset, word in raw_words if offset < begin][-NEGATION_WINDOW:]
            if any(word in NEGATIONS for word in before):
                continue
            found.setdefault((key, value), (start, start + len(terms), query[begin:end]))
    kept = []
    for (key, value), (start, stop, words) in found.items():
        longer = any(
            other_key == key
            and other != value
            and o_start <= start
            and stop <= o_stop
            and (o_stop - o_start) > (stop - start)
            for (other_key, other), (o_start, o_stop, _) in found.items()
        )
        if not longer:
            kept.append(ConditionMatch(key, value, "query", words))
    return sorted(kept, key=lambda m: (m.key, m.value))


def task_conditions(
    query: str, candidates: Sequence[CandidateRecord], stated: Mapping[str, frozenset[str]]
) -> tuple[dict[str, frozenset[str]], list[ConditionMatch]]:
    """The task's conditions: those stated, plus values matched in the query for keys not stated.

    The vocabulary is every ``applies_when`` key/value pair of the candidates.
    """
    matches = [
        ConditionMatch(key, value, "stated") for key, values in sorted(stated.items()) for value in sorted(values)
    ]
    vocabulary = [
        (key, value) for c in candidates for key, values in c.capsule.applies_when.items() for value in values
    ]
    inferred = [m for m in conditions_from_text(query, vocabulary) if m.key not in stated]
    conditions: dict[str, set[str]] = {key: set(values) for key, values in stated.items()}
    for match in inferred:
        conditions.setdefault(match.key, set()).add(match.value)
    return {key: frozenset(values) for key, values in conditions.items()}, matches + inferred


@dataclass(frozen=True)
class ConditionCheck:
    state: str  # matched | universal | unknown | contradicting
    matched: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    contradicting: tuple[str, ...] = ()  # "key: lesson wants a, task has b"


def check_conditions(capsule: Capsule, conditions: Mapping[str, frozenset[str]]) -> ConditionCheck:
    """How a record's ``applies_when`` meets the task's conditions (any listed value matches)."""
    if not capsule.applies_when:
        return ConditionCheck(UNIVERSAL)
    matched, unknown, contradicting = [], [], []
    for key, values in capsule.applies_when.items():
        task = conditions.get(key)
        if task is None:
            unknown.append(key)
        elif task.intersection(values):
            matched.append(key)
        else:
            contradicting.append(f"{key}: applies when {' or '.join(values)}, the task has {' or '.join(sorted(task))}")
    state = CONTRADICTING if contradicting else UNKNOWN if unknown else MATCHED
    return ConditionCheck(state, tuple(matched), tuple(unknown), tuple(contradicting))


# ---------------------------------------------------------------- the selection


@dataclass(frozen=True)
class SelectedRecord:
    """A record that applies: why, which need (query words) it covers, and its flags."""

    record: str
    path: str
    title: str
    why: str
    needs: tuple[str, ...]
    conditions: str  # matched | universal | unknown
    flags: tuple[str, ...] = ()
    relevance: float = 0.0
    rank: int = 0
    passages: tuple[PassageRef, ...] = ()
    capsule: Capsule | None = None

    @property
    def chars(self) -> int:
        return sum(len(p.text) for p in self.passages)

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "path": self.path,
            "title": self.title,
            "why": self.why,
            "needs": list(self.needs),
            "conditions": self.conditions,
            "flags": list(self.flags),
            "relevance": round(self.relevance, 4),
            "rank": self.rank,
            "passages": [{"id": p.id, "line_start": p.line_start, "line_end": p.line_end} for p in self.passages],
            "capsule": self.capsule.to_dict() if self.capsule else None,
        }


@dataclass(frozen=True)
class RejectedCandidate:
    """A candidate that was not returned, with its reason code and detail."""

    record: str
    path: str
    reason: str
    detail: str
    rank: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "path": self.path,
            "reason": self.reason,
            "detail": self.detail,
            "rank": self.rank,
        }


@dataclass(frozen=True)
class ApplicabilitySelection:
    """0..N records that apply to a query, and every rejected candidate with its reason."""

    query: str
    intent: str
    selector: str
    conditions: Mapping[str, tuple[str, ...]]
    condition_matches: tuple[ConditionMatch, ...]
    records: tuple[SelectedRecord, ...]
    rejected: tuple[RejectedCandidate, ...]
    candidates: int
    fallback: str | None = None
    selection_ms: float = 0.0
    retrieval_ms: float | None = None
    lanes: tuple[dict[str, Any], ...] = ()
    thresholds: Mapping[str, Any] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.records

    @property
    def ids(self) -> list[str]:
        return [record.record for record in self.records]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "intent": self.intent,
            "selector": self.selector,
            "fallback": self.fallback,
            "conditions": {key: list(values) for key, values in self.conditions.items()},
            "condition_matches": [m.to_dict() for m in self.condition_matches],
            "empty": self.empty,
            "records": [r.to_dict() for r in self.records],
            "rejected": [r.to_dict() for r in self.rejected],
            "candidates": self.candidates,
            "selection_ms": round(self.selection_ms, 3),
            "retrieval_ms": None if self.retrieval_ms is None else round(self.retrieval_ms, 3),
            "lanes": list(self.lanes),
            "thresholds": dict(self.thresholds),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=False)

    def __str__(self) -> str:
        return render_text(self)

    def _repr_markdown_(self) -> str:
        return render_markdown(self)

    def _repr_html_(self) -> str:
        return render_html(self)

    def __repr__(self) -> str:
        return f"<ApplicabilitySelection {len(self.records)} record(s), {len(self.rejected)} rejected: {self.ids}>"


class Selector(Protocol):
    """Chooses 0..N applicable records from retrieved candidates."""

    name: str

    def select(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        conditions: Mapping[str, Any] | Sequence[str] | None = None,
        intent: str = "orient",
    ) -> ApplicabilitySelection: ...


# ---------------------------------------------------------------- relevance


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


def query_terms(query: str) -> list[str]:
    """The query's content terms: analysed, without :data:`QUERY_FILLER`."""
    return [term for term in analyze(query) if term not in QUERY_FILLER]


_CLAUSE_BREAK = re.compile(
    r"[.?!;:]+(?:\s+|$)|,?\s+(?:and also|also|separately|apart from|as well as|plus)\b,?|,\s+and\s+"
    r"|\s+and\s+(?=(?:how|what|why|which|when|where|who|should|do|does|is|are|can)\b)",
    re.IGNORECASE,
)


def clause_texts(query: str) -> list[str]:
    """The query's parts (its distinct needs, roughly), as text.

    Parts break at sentence ends, ``;`` and ``:``, ", and", "and" before a question
    word ("and how ..."), and the words "also", "separately", "apart from", "as well
    as", "plus". A part without content terms is dropped.
    """
    parts = [part.strip() for part in _CLAUSE_BREAK.split(query) if part and query_terms(part)]
    return parts or [query]


def clauses(query: str) -> list[list[str]]:
    """The query's parts as content terms (see :func:`clause_texts`)."""
    return [query_terms(part) for part in clause_texts(query)]


def attach_clause_cosines(
    workspace: Workspace, query: str, candidates: Sequence[CandidateRecord], hidden: frozenset[str] = frozenset()
) -> list[CandidateRecord]:
    """Each candidate's dense cosine with each part of a multi-part query (one dense search per part).

    A candidate the dense lane does not propose for a part counts :data:`MISSING_COSINE`.
    Single-part queries and workspaces without a dense lane are returned unchanged.
    """
    parts = clause_texts(query)
    if len(parts) < 2 or "dense" not in workspace.lanes:
        return list(candidates)
    per_part: list[dict[str, float]] = []
    for part in parts:
        run = workspace.run_lanes(part, ["dense"], hidden=hidden)["dense"]
        per_part.append(dict(run.ranking))
    attached = []
    for candidate in candidates:
        ids = [p.id for p in candidate.passages]
        cosines = tuple(max((found[i] for i in ids if i in found), default=MISSING_COSINE) for found in per_part)
        attached.append(replace(candidate, clause_cosines=cosines))
    return attached


@dataclass(frozen=True)
class _Scored:
    candidate: CandidateRecord
    check: ConditionCheck
    capsule_terms: frozenset[str]
    body_terms: frozenset[str]
    features: tuple[float, ...]
    score: float


def _sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, value))))


def score_candidates(
    query: str,
    pool: Sequence[CandidateRecord],
    eligible: Sequence[tuple[CandidateRecord, ConditionCheck]],
    params: Thresholds,
) -> tuple[list[_Scored], list[str], dict[str, float]]:
    """Features and applicability score of each eligible record; also the query terms and their weights.

    Word weights are BM25 idf over the whole candidate pool, so words every
    candidate shares count little and words no candidate holds count most.
    """
    terms = query_terms(query)
    weights = _weights(terms, pool)
    total = sum(weights.values()) or 1.0
    parts = [(part, sum(weights[t] for t in part) or 1.0) for part in clauses(query)]
    cosines = [c.lanes["dense"][1] for c in pool if "dense" in c.lanes]
    best_cosine = max(cosines, default=MISSING_COSINE)
    lexical = [c.lanes["lexical"][1] for c in pool if "lexical" in c.lanes]
    best_lexical = max(lexical, default=0.0) or 1.0
    rows: list[tuple[CandidateRecord, ConditionCheck, list[float], list[float]]] = []
    for candidate, check in eligible:
        capsule_terms, body_terms = candidate.capsule_terms, candidate.body_terms
        cosine = candidate.lanes["dense"][1] if "dense" in candidate.lanes else MISSING_COSINE
        lex = candidate.lanes["lexical"][1] if "lexical" in candidate.lanes else 0.0
        per_part = [
            _coverage(part, weights, capsule_terms, body_terms, params.body_weight) / mass for part, mass in parts
        ]
        features = [
            cosine,
            best_cosine - cosine,
            lex / best_lexical,
            _coverage(terms, weights, capsule_terms, frozenset(), 0.0) / total,
            _coverage(terms, weights, capsule_terms, body_terms, params.body_weight) / total,
            max(per_part, default=0.0),
            0.0,  # clause_best, set below
            max(candidate.clause_cosines, default=cosine),
            0.0,  # clause_cosine_best, set below
            1.0 if check.state == MATCHED else 0.0,
            1.0 if check.state == UNKNOWN else 0.0,
            1.0 / candidate.rank,
        ]
        rows.append((candidate, check, features, per_part))
    for index in range(len(parts)):
        best = max((row[3][index] for row in rows), default=0.0)
        for row in rows:
            if best > 0 and row[3][index] == best:
                row[2][6] = 1.0
    width = max((len(row[0].clause_cosines) for row in rows), default=0)
    for index in range(max(width, 1)):
        closest = [_part_cosine(row[0], index) for row in rows]
        best = max(closest, default=MISSING_COSINE)
        for row, value in zip(rows, closest, strict=True):
            if best > MISSING_COSINE and value == best:
                row[2][8] = 1.0
    scored = []
    for candidate, check, features, _ in rows:
        value = params.bias + sum(w * x for w, x in zip(params.weights, features, strict=True))
        scored.append(
            _Scored(candidate, check, candidate.capsule_terms, candidate.body_terms, tuple(features), _sigmoid(value))
        )
    return scored, terms, weights


def _part_cosine(candidate: CandidateRecord, index: int) -> float:
    if candidate.clause_cosines:
        return candidate.clause_cosines[index] if index < len(candidate.clause_cosines) else MISSING_COSINE
    return candidate.lanes["dense"][1] if "dense" in candidate.lanes else MISSING_COSINE


def _weights(terms: Sequence[str], candidates: Sequence[CandidateRecord]) -> dict[str, float]:
    """Each query term's weight: BM25's idf over the candidate pool (rare there = distinctive)."""
    pool = [c.capsule_terms | c.body_terms for c in candidates]
    size = len(pool)
    return {t: math.log(1 + (size - df + 0.5) / (df + 0.5)) for t in terms for df in [sum(t in s for s in pool)]}


def _coverage(
    terms: Iterable[str],
    weights: Mapping[str, float],
    capsule: frozenset[str],
    body: frozenset[str],
    body_weight: float,
) -> float:
    return sum(weights[t] if t in capsule else weights[t] * body_weight if t in body else 0.0 for t in terms)


# ---------------------------------------------------------------- the rule selector


def eligible_candidates(
    candidates: Sequence[CandidateRecord], task: Mapping[str, frozenset[str]], intent: str
) -> tuple[
    list[tuple[CandidateRecord, ConditionCheck]],
    list[tuple[CandidateRecord, ConditionCheck, str]],
    list[RejectedCandidate],
]:
    """Split candidates by the hard rules: eligible, history (kept aside for audit), rejected."""
    eligible, history, rejected = [], [], []
    for candidate in candidates:
        check = check_conditions(candidate.capsule, task)
        reason = hard_rejection(candidate.capsule, check)
        if reason is None:
            eligible.append((candidate, check))
        elif reason[0] in (SUPERSEDED, DISPUTED) and intent == "audit":
            history.append((candidate, check, reason[0]))
        else:
            rejected.append(_reject(candidate, *reason))
    return eligible, history, rejected


class RuleSelector:
    """The deterministic selector (see the module docstring for the steps).

    ``thresholds`` default to the calibrated values in ``selector_calibration.json``.
    """

    name = "rule"

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds.load()

    def select(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        conditions: Mapping[str, Any] | Sequence[str] | None = None,
        intent: str = "orient",
    ) -> ApplicabilitySelection:
        started = time.perf_counter()
        stated = parse_conditions(conditions)
        task, matches = task_conditions(query, candidates, stated)
        eligible, history, rejected = eligible_candidates(candidates, task, intent)
        records, more = self._choose(query, candidates, eligible)
        rejected += more
        if history:
            kept, refused = self._history(query, candidates, history)
            records += kept
            rejected += refused
        selection = _selection(query, intent, self.name, task, matches, records, rejected, len(candidates), started)
        return replace(selection, thresholds=self.thresholds.to_dict())

    def _choose(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        eligible: Sequence[tuple[CandidateRecord, ConditionCheck]],
    ) -> tuple[list[SelectedRecord], list[RejectedCandidate]]:
        scored, terms, weights = score_candidates(query, candidates, eligible, self.thresholds)
        kept, rejected = pick(scored, terms, weights, self.thresholds)
        return [_selected(item, new, query) for item, new in kept], rejected

    def _history(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        history: Sequence[tuple[CandidateRecord, ConditionCheck, str]],
    ) -> tuple[list[SelectedRecord], list[RejectedCandidate]]:
        """Under audit: superseded and disputed records scoring at least ``min_keep``, flagged as such."""
        scored, terms, _ = score_candidates(query, candidates, [(c, check) for c, check, _ in history], self.thresholds)
        kept, rejected = [], []
        for item, (candidate, _, reason) in zip(scored, history, strict=True):
            if item.score >= self.thresholds.min_keep:
                selected = _selected(item, [t for t in terms if t in item.capsule_terms], query)
                flag = f"{reason}: shown because the intent is audit"
                if candidate.capsule.superseded_by:
                    flag += f" (superseded by {', '.join(candidate.capsule.superseded_by)})"
                why = f"{reason} advice, for audit. {selected.why}"
                kept.append(replace(selected, flags=(*selected.flags, flag), why=why))
            else:
                rejected.append(_reject(candidate, reason, f"{reason}; its score {item.score:.2f} is also low"))
        return kept, rejected


def pick(
    scored: Sequence[_Scored], terms: Sequence[str], weights: Mapping[str, float], limits: Thresholds
) -> tuple[list[tuple[_Scored, list[str]]], list[RejectedCandidate]]:
    """Keep the smallest sufficient set of scored records: ``[(record, query terms it newly covers)]`` and the rest.

    Visited by score (ties: matched conditions, universal, unknown; then fused rank):
    a second record of a ``rule`` is a duplicate; nothing is kept when the best score
    is below ``min_first``; a further record needs ``min_keep`` and ``min_gain``.
    """
    total = sum(weights.values()) or 1.0
    ordered = sorted(scored, key=lambda s: (-round(s.score, 9), _CONDITION_ORDER[s.check.state], s.candidate.rank))
    best = ordered[0].score if ordered else 0.0
    kept: list[tuple[_Scored, list[str]]] = []
    rejected: list[RejectedCandidate] = []
    covered: set[str] = set()
    rules: dict[str, str] = {}
    for item in ordered:
        candidate = item.candidate
        rule = candidate.capsule.rule
        if rule and rule in rules:
            rejected.append(
                _reject(candidate, DUPLICATE_RULE, f"teaches rule {rule!r}, already given by {rules[rule]}")
            )
            continue
        if best < limits.min_first:
            detail = f"score {item.score:.2f}; the best, {best:.2f}, is below {limits.min_first:.2f}: none applies"
            rejected.append(_reject(candidate, BELOW_THRESHOLD, detail))
            continue
        floor = max(limits.min_keep, limits.min_ratio * best)
        if kept and item.score < floor:
            rejected.append(_reject(candidate, BELOW_THRESHOLD, f"score {item.score:.2f} is below {floor:.2f}"))
            continue
        new = [t for t in terms if t not in covered and (t in item.capsule_terms or t in item.body_terms)]
        gain = _coverage(new, weights, item.capsule_terms, item.body_terms, limits.body_weight) / total
        if kept and gain < limits.min_gain:
            detail = f"adds {gain:.2f} new query coverage (< {limits.min_gain:.2f}); kept records cover it"
            rejected.append(_reject(candidate, NOT_NEEDED, detail))
            continue
        if len(kept) >= limits.max_records:
            rejected.append(_reject(candidate, BEYOND_LIMIT, f"already {limits.max_records} records"))
            continue
        covered.update(new)
        if rule:
            rules[rule] = candidate.record
        kept.append((item, new))
    # Records whose conditions match come before universal ones, then those with unknown conditions.
    kept.sort(key=lambda pair: (_CONDITION_ORDER[pair[0].check.state], -pair[0].score))
    return kept, rejected


def _selection(
    query: str,
    intent: str,
    selector: str,
    task: Mapping[str, frozenset[str]],
    matches: Sequence[ConditionMatch],
    records: Sequence[SelectedRecord],
    rejected: Sequence[RejectedCandidate],
    candidates: int,
    started: float,
) -> ApplicabilitySelection:
    """A selector's result: conditions in key order, rejections by rank, time since ``started``."""
    return ApplicabilitySelection(
        query=query,
        intent=intent,
        selector=selector,
        conditions={key: tuple(sorted(values)) for key, values in sorted(task.items())},
        condition_matches=tuple(matches),
        records=tuple(records),
        rejected=tuple(sorted(rejected, key=lambda r: r.rank)),
        candidates=candidates,
        selection_ms=(time.perf_counter() - started) * 1000,
    )


def hard_rejection(capsule: Capsule, check: ConditionCheck) -> tuple[str, str] | None:
    """The rule that excludes a record whatever the query: ``(reason, detail)`` or ``None``."""
    if capsule.is_diagnostic:
        return DIAGNOSTIC_NO_CLAIMS, "a symptom write-up with no claim or fix"
    if check.state == CONTRADICTING:
        return CONTRADICTING_CONDITION, "; ".join(check.contradicting)
    if capsule.status == "superseded":
        successor = f" by {', '.join(capsule.superseded_by)}" if capsule.superseded_by else ""
        return SUPERSEDED, f"superseded{successor}"
    if capsule.status == "disputed":
        against = f": {capsule.contradicts[0]}" if capsule.contradicts else ""
        return DISPUTED, f"its advice is disputed{against}"
    return None


def _reject(candidate: CandidateRecord, reason: str, detail: str) -> RejectedCandidate:
    return RejectedCandidate(candidate.record, candidate.capsule.path, reason, detail, candidate.rank)


def _selected(item: _Scored, new_terms: Sequence[str], query: str) -> SelectedRecord:
    candidate, check = item.candidate, item.check
    flags: list[str] = []
    if check.state == MATCHED:
        conditions = f"its conditions match the task ({', '.join(check.matched)})"
    elif check.state == UNIVERSAL:
        conditions = "it holds under any conditions"
    else:
        conditions = f"its conditions are not stated by the task ({', '.join(check.unknown)})"
        flags.append(f"{UNKNOWN_CONDITION}: {', '.join(check.unknown)} not stated; check it applies")
    if candidate.capsule.critical:
        flags.append("critical")
    words = _need_words(query, new_terms)
    why = f"Covers {', '.join(words) or 'the query'}; {conditions}; status {candidate.capsule.status or 'unknown'}."
    return SelectedRecord(
        record=candidate.record,
        path=candidate.capsule.path,
        title=candidate.capsule.title,
        why=why,
        needs=tuple(words),
        conditions=check.state,
        flags=tuple(flags),
        relevance=item.score,
        rank=candidate.rank,
        passages=candidate.passages,
        capsule=candidate.capsule,
    )


def _need_words(query: str, terms: Sequence[str]) -> list[str]:
    """The query's own words behind ``terms`` (stems), in query order."""
    wanted = set(terms)
    words: dict[str, str] = {}
    for token in _ANALYZER(query, chars=True):
        if token.text in wanted:
            words.setdefault(token.text, query[token.startchar : token.endchar])
    return list(words.values())


# ---------------------------------------------------------------- a judge with a budget and a fallback

Judge = Callable[[str, list[dict[str, Any]], dict[str, list[str]]], Any]


class JudgeSelector:
    """An external judge (e.g. an LLM call) with a time budget; the rule selector when it is late or fails.

    ``judge(query, capsules, conditions)`` gets the candidates' capsules (as dicts, with
    their record id, rank and text) and the task's conditions, and returns the record
    ids that apply: a list, or a mapping ``{record: why}``. Unknown ids are ignored.
    With ``enforce_rules`` (default) the hard rules still hold after the judge:
    diagnostic notes, contradicting conditions, superseded and disputed advice
    (unless the intent is audit) and a second record of one rule are rejected.
    A judge still running after ``budget_s`` seconds is abandoned (its thread is a
    daemon) and the fallback's selection is returned with ``fallback`` saying why.
    """

    def __init__(
        self,
        judge: Judge,
        budget_s: float = 1.95,
        fallback: Selector | None = None,
        enforce_rules: bool = True,
        name: str = "judge",
    ) -> None:
        if budget_s <= 0:
            raise InputError(f"the judge's time budget must be positive, not {budget_s}")
        self.judge = judge
        self.budget_s = budget_s
        self.fallback = fallback or RuleSelector()
        self.enforce_rules = enforce_rules
        self.name = name

    def select(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        conditions: Mapping[str, Any] | Sequence[str] | None = None,
        intent: str = "orient",
    ) -> ApplicabilitySelection:
        started = time.perf_counter()
        stated = parse_conditions(conditions)
        task, matches = task_conditions(query, candidates, stated)
        payload = [{**c.capsule.to_dict(), "rank": c.rank, "text": c.text} for c in candidates]
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def call() -> None:
            try:
                outcome["value"] = self.judge(query, payload, {k: sorted(v) for k, v in task.items()})
            except BaseException as exc:  # reported to the caller's thread as a fallback reason
                outcome["error"] = exc
            finally:
                done.set()

        threading.Thread(target=call, name=f"rk-judge-{self.name}", daemon=True).start()
        reason = None
        if not done.wait(self.budget_s):
            reason = f"the judge took longer than its {self.budget_s:g} s budget"
        elif "error" in outcome:
            error = outcome["error"]
            reason = f"the judge failed: {type(error).__name__}: {error}"
        else:
            try:
                chosen = _judge_choice(outcome.get("value"))
            except (TypeError, ValueError) as exc:
                reason = f"the judge returned an unusable answer: {exc}"
        if reason is not None:
            selection = self.fallback.select(query, candidates, conditions, intent)
            elapsed = (time.perf_counter() - started) * 1000
            return replace(
                selection, selector=f"{self.name}->{selection.selector}", fallback=reason, selection_ms=elapsed
            )
        records, rejected = self._apply(query, candidates, task, chosen, intent)
        return _selection(query, intent, self.name, task, matches, records, rejected, len(candidates), started)

    def _apply(
        self,
        query: str,
        candidates: Sequence[CandidateRecord],
        task: Mapping[str, frozenset[str]],
        chosen: dict[str, str],
        intent: str,
    ) -> tuple[list[SelectedRecord], list[RejectedCandidate]]:
        by_id = {c.record: c for c in candidates}
        records: list[SelectedRecord] = []
        rejected: list[RejectedCandidate] = []
        rules: dict[str, str] = {}
        for candidate in candidates:
            if candidate.record not in chosen:
                rejected.append(_reject(candidate, NOT_SELECTED_BY_JUDGE, "the judge did not choose it"))
        for record, why in chosen.items():
            if record not in by_id:
                continue
            candidate = by_id[record]
            check = check_conditions(candidate.capsule, task)
            if self.enforce_rules:
                reason = hard_rejection(candidate.capsule, check)
                if reason and not (reason[0] in (SUPERSEDED, DISPUTED) and intent == "audit"):
                    rejected.append(_reject(candidate, *reason))
                    continue
                rule = candidate.capsule.rule
                if rule and rule in rules:
                    rejected.append(
                        _reject(candidate, DUPLICATE_RULE, f"teaches rule {rule!r}, already given by {rules[rule]}")
                    )
                    continue
                if rule:
                    rules[rule] = record
            flags = [f"{UNKNOWN_CONDITION}: {', '.join(check.unknown)} not stated"] if check.state == UNKNOWN else []
            records.append(
                SelectedRecord(
                    record=record,
                    path=candidate.capsule.path,
                    title=candidate.capsule.title,
                    why=why or "chosen by the judge",
                    needs=(),
                    conditions=check.state,
                    flags=tuple(flags),
                    rank=candidate.rank,
                    passages=candidate.passages,
                    capsule=candidate.capsule,
                )
            )
        return records, rejected


def _judge_choice(value: Any) -> dict[str, str]:
    """A judge's answer as ``{record: why}`` (order kept)."""
    if isinstance(value, Mapping):
        return {str(key): "" if why is None else str(why) for key, why in value.items()}
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"expected a list of record ids or a mapping of id to reason, got {type(value).__name__}")
    return {str(item): "" for item in value}


# ---------------------------------------------------------------- end to end from a workspace


def retrieve_candidates(
    workspace: Workspace,
    query: str,
    lanes: Sequence[str] | None = None,
    scopes: Sequence[str] | str | None = None,
    refresh: bool = True,
    pool: int | None = None,
) -> tuple[list[CandidateRecord], list[dict[str, Any]]]:
    """Retrieve broadly: every lane, fused by rank, the first ``pool`` passages grouped by note.

    Returns the candidate records and each lane's report (name, status, candidates, reason).
    Notes outside the caller's ``scopes`` are dropped inside the lanes, as for packets.
    """
    from . import policy
    from .workspace import CANDIDATE_POOL, _checked_query, checked_lanes, checked_scopes

    text = _checked_query(query)
    chosen = checked_lanes(lanes) if lanes is not None else workspace.lanes
    if refresh:
        workspace.refresh()
    visible_to = checked_scopes(scopes)
    documents = workspace.records.documents()
    hidden = frozenset(
        p.id
        for path, doc in documents.items()
        if not policy.visible(doc.facts, visible_to)
        for p in workspace.records.passages_of(path)
    )
    runs = workspace.run_lanes(text, chosen, hidden=hidden)
    ranked = workspace.rank(runs)
    candidates = group_candidates(ranked, pool or CANDIDATE_POOL)
    if "dense" in chosen:
        candidates = attach_clause_cosines(workspace, text, candidates, hidden)
    reports = [
        {
            "name": run.report.name,
            "status": run.report.status,
            "candidates": run.report.candidates,
            "reason": run.report.reason,
        }
        for run in runs.values()
    ]
    return candidates, reports


def select_applicable(
    workspace: Workspace,
    query: str,
    conditions: Mapping[str, Any] | Sequence[str] | None = None,
    intent: str = "orient",
    selector: Selector | None = None,
    lanes: Sequence[str] | None = None,
    scopes: Sequence[str] | str | None = None,
    refresh: bool = True,
) -> ApplicabilitySelection:
    """Retrieve broadly from ``workspace`` and keep the smallest set of records that applies."""
    from .workspace import checked_intent

    intent = checked_intent(intent)
    parse_conditions(conditions)  # a malformed condition fails before any retrieval
    started = time.perf_counter()
    candidates, reports = retrieve_candidates(workspace, query, lanes, scopes, refresh)
    retrieved = (time.perf_counter() - started) * 1000
    selection = (selector or RuleSelector()).select(query.strip(), candidates, conditions, intent)
    return replace(selection, retrieval_ms=retrieved, lanes=tuple(reports))


# ---------------------------------------------------------------- rendering


def _record_lines(record: SelectedRecord) -> list[str]:
    lines = [f"{record.record}  ({record.path})", f"   why: {record.why}"]
    if record.needs:
        lines.append(f"   need: {', '.join(record.needs)}")
    if record.capsule and record.capsule.claims:
        lines += [f"   claim: {claim}" for claim in record.capsule.claims]
    lines += [f"   flag: {flag}" for flag in record.flags]
    return lines


def render_text(selection: ApplicabilitySelection) -> str:
    """A plain-text view: conditions, each record with why/need/claims/flags, then the rejected."""
    head = f"Applicable records for: {selection.query}"
    lines = [
        head,
        f"selector: {selection.selector}" + (f" (fallback: {selection.fallback})" if selection.fallback else ""),
    ]
    if selection.conditions:
        stated = "; ".join(
            f"{m.key}={m.value} ({m.source}{': ' + repr(m.words) if m.words else ''})"
            for m in selection.condition_matches
        )
        lines.append(f"conditions: {stated}")
    if selection.empty:
        lines.append(f"Nothing applies ({selection.candidates} candidates checked).")
    for index, record in enumerate(selection.records, 1):
        body = _record_lines(record)
        lines.append(f"{index}. {body[0]}")
        lines += body[1:]
    if selection.rejected:
        lines.append(f"rejected ({len(selection.rejected)}):")
        lines += [f" - {r.record}: {r.reason} - {r.detail}" for r in selection.rejected]
    return "\n".join(lines)


def render_markdown(selection: ApplicabilitySelection) -> str:
    """Markdown with every piece of note text escaped."""
    lines = [f"**Applicable records** for _{md_escape(selection.query)}_ (selector `{md_escape(selection.selector)}`)"]
    if selection.fallback:
        lines.append(f"\n> fallback: {md_escape(selection.fallback)}")
    if selection.condition_matches:
        lines.append(
            "\nConditions: "
            + ", ".join(f"`{md_escape(m.key)}={md_escape(m.value)}` ({m.source})" for m in selection.condition_matches)
        )
    if selection.empty:
        lines.append(f"\n**Nothing applies** ({selection.candidates} candidates checked).")
    for index, record in enumerate(selection.records, 1):
        lines.append(f"\n{index}. **{md_escape(record.title)}** ({md_escape(record.record)}, {md_escape(record.path)})")
        lines.append(f"   - why: {md_escape(record.why)}")
        if record.needs:
            lines.append(f"   - need: {md_escape(', '.join(record.needs))}")
        if record.capsule:
            lines += [f"   - claim: {md_escape(claim)}" for claim in record.capsule.claims]
        lines += [f"   - flag: {md_escape(flag)}" for flag in record.flags]
    if selection.rejected:
        lines.append("\n| rejected | reason | detail |\n|---|---|---|")
        lines += [f"| {md_escape(r.record)} | {r.reason} | {md_escape(r.detail)} |" for r in selection.rejected]
    return "\n".join(lines)


def render_html(selection: ApplicabilitySelection) -> str:
    """Self-contained HTML; every piece of note text is escaped."""
    esc = html.escape
    parts = [
        f'<div class="rk-select"><p><b>Applicable records</b> for <i>{esc(selection.query)}</i> '
        f"(selector <code>{esc(selection.selector)}</code>)</p>"
    ]
    if selection.fallback:
        parts.append(f"<p>fallback: {esc(selection.fallback)}</p>")
    if selection.condition_matches:
        items = ", ".join(
            f"<code>{esc(m.key)}={esc(m.value)}</code> ({esc(m.source)})" for m in selection.condition_matches
        )
        parts.append(f"<p>Conditions: {items}</p>")
    if selection.empty:
        parts.append(f"<p><b>Nothing applies</b> ({selection.candidates} candidates checked).</p>")
    else:
        parts.append("<ol>")
        for record in selection.records:
            claims = "".join(f"<li>claim: {esc(c)}</li>" for c in (record.capsule.claims if record.capsule else ()))
            flags = "".join(f"<li>flag: {esc(f)}</li>" for f in record.flags)
            need = f"<li>need: {esc(', '.join(record.needs))}</li>" if record.needs else ""
            parts.append(
                f"<li><b>{esc(record.title)}</b> <code>{esc(record.record)}</code> ({esc(record.path)})"
                f"<ul><li>why: {esc(record.why)}</li>{need}{claims}{flags}</ul></li>"
            )
        parts.append("</ol>")
    if selection.rejected:
        rows = "".join(
            f"<tr><td><code>{esc(r.record)}</code></td><td>{esc(r.reason)}</td><td>{esc(r.detail)}</td></tr>"
            for r in selection.rejected
        )
        parts.append(f"<table><tr><th>rejected</th><th>reason</th><th>detail</th></tr>{rows}</table>")
    parts.append("</div>")
    return "".join(parts)
