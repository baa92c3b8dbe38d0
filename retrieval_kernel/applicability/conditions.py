"""Conditions: those the caller states (``--when key=value``), those the query text states, and a record's match.

A record's ``applies_when`` meets the task's conditions in one of four states
(:data:`MATCHED`, :data:`UNIVERSAL`, :data:`UNKNOWN`, :data:`CONTRADICTING`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..projections.lexical import make_analyzer
from .capsules import CandidateRecord, Capsule, normalize_value, text_list

# Condition states of a record for a task, best first.
MATCHED, UNIVERSAL, UNKNOWN, CONTRADICTING = "matched", "universal", "unknown", "contradicting"
CONDITION_ORDER = {MATCHED: 0, UNIVERSAL: 1, UNKNOWN: 2, CONTRADICTING: 3}

# Words that, within NEGATION_WINDOW words before a condition value, mean the text denies it.
NEGATIONS = frozenset(
    {"not", "no", "never", "without", "isn't", "aren't", "don't", "doesn't", "didn't", "nor", "instead", "rather"}
)
NEGATION_WINDOW = 3
_RAW_WORD = re.compile(r"[\w']+")

# The index's analyser (Porter2 stems, stop words dropped): condition values and need words are matched with it.
ANALYZER = make_analyzer()


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
            pairs += [(str(key), item) for item in text_list(value)]
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


def _value_terms(value: str) -> tuple[str, ...]:
    return tuple(token.text for token in ANALYZER(value.replace("-", " ").replace("_", " ")))


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
    tokens = [(token.text, token.startchar, token.endchar) for token in ANALYZER(query, chars=True)]
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

    The vocabulary is every ``applies_when`` key/value pair of the candidates in the
    query's own context (:func:`context_of`): conditions of another family's notes are
    not read into the question.
    """
    matches = [
        ConditionMatch(key, value, "stated") for key, values in sorted(stated.items()) for value in sorted(values)
    ]
    context = context_of(candidates)
    vocabulary = [
        (key, value)
        for c in candidates
        if folder_of(c.capsule.path) == context
        for key, values in c.capsule.applies_when.items()
        for value in values
    ]
    inferred = [m for m in conditions_from_text(query, vocabulary) if m.key not in stated]
    conditions: dict[str, set[str]] = {key: set(values) for key, values in stated.items()}
    for match in inferred:
        conditions.setdefault(match.key, set()).add(match.value)
    return {key: frozenset(values) for key, values in conditions.items()}, matches + inferred


CONTEXT_DEPTH = 5  # the leading candidates (fused order) that say which folder the question is about


def folder_of(path: str) -> str:
    """The folder of a note's path (``''`` at the top)."""
    return path.rsplit("/", 1)[0] if "/" in path else ""


def context_of(candidates: Sequence[CandidateRecord]) -> str | None:
    """The question's context: the folder holding most of its leading candidates (weighted 1/rank)."""
    weight: dict[str, float] = {}
    for candidate in candidates[:CONTEXT_DEPTH]:
        folder = folder_of(candidate.capsule.path)
        weight[folder] = weight.get(folder, 0.0) + 1.0 / candidate.rank
    return max(weight, key=lambda f: weight[f]) if weight else None


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
