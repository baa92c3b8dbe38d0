"""Claims derived from a note's own text, for notes without a ``claims:`` capsule.

Ordinary notes (ADRs, a wiki, runbooks) carry no claim capsule. Their retrieved
passages are read for the sentences that state a rule, a value or a decision
(:func:`is_claim`), each prefixed with its heading path, and for the sentences that
say when something applies ("If ...", "When ...", "Unless ...", "For ..."), kept as
the derived capsule's ``conditions_text``. Derived capsules are marked ``derived``;
a note whose front matter declares ``claims`` (even an empty list) is never derived.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Words that make a sentence state a rule, a value or a decision.
_RULE = re.compile(
    r"\b(?:must|should|shall|never|always|do not|don't|does not|required?|requires|recommended|"
    r"we (?:will|decided|chose|use|prefer|adopt)|decided|decision|accepted|is set to|are set to|"
    r"defaults? to|at most|at least|no more than|up to|limit(?:ed)? to|only|prefer|avoid|use|set)\b",
    re.IGNORECASE,
)
_VALUE = re.compile(r"\d")
_CONDITION = re.compile(r"^(?:if|when|whenever|unless|for|where|once|before|after)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_MARKUP = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+|>\s*)")
MAX_CLAIMS = 6  # per note
PER_PASSAGE = 2
MAX_CHARS = 300  # a longer sentence is cut at a word boundary


def sentences(text: str) -> list[str]:
    """The sentences of a passage, markup at line starts dropped, code blocks and tables skipped."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.strip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith(("|", "#")):
            continue
        lines.append(_MARKUP.sub("", line))
    prose = " ".join(" ".join(lines).split())
    return [s.strip() for s in _SENTENCE.split(prose) if len(s.strip().split()) >= 4]


def is_claim(sentence: str) -> bool:
    """A sentence that states a rule (a modal or an imperative), a value (a number) or a decision."""
    return bool(_RULE.search(sentence) or _VALUE.search(sentence))


def is_condition(sentence: str) -> bool:
    """A sentence that says when something applies ("If ...", "When ...", "Unless ...")."""
    return bool(_CONDITION.match(sentence))


def _short(sentence: str) -> str:
    if len(sentence) <= MAX_CHARS:
        return sentence
    return sentence[:MAX_CHARS].rsplit(" ", 1)[0] + " ..."


def derive_claims(passages: Sequence[tuple[tuple[str, ...], str]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(claims, conditions_text)`` from ``(heading_path, text)`` passages, in passage order.

    Each claim reads ``heading > path: sentence``; at most :data:`PER_PASSAGE` per passage
    and :data:`MAX_CLAIMS` in all. Condition sentences are claims too, and also listed
    as conditions.
    """
    claims: list[str] = []
    conditions: list[str] = []
    for heading_path, text in passages:
        where = " > ".join(h for h in heading_path if h)
        taken = 0
        for sentence in sentences(text):
            if taken >= PER_PASSAGE or len(claims) >= MAX_CLAIMS:
                break
            if not is_claim(sentence) and not is_condition(sentence):
                continue
            claim = f"{where}: {_short(sentence)}" if where else _short(sentence)
            if claim in claims:
                continue
            claims.append(claim)
            taken += 1
            if is_condition(sentence):
                conditions.append(_short(sentence))
    return tuple(claims), tuple(conditions)
