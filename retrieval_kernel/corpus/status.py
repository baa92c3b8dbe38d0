"""The status vocabulary: every status as written in the wild → one normalised status.

This table is the one place the tool maps written statuses; docs/notes.md shows the same
table. A status is matched on its first words (outside link labels), multi-word phrases
first; text that names two different statuses ("Accepted or Rejected", template text)
or starts with "not" stays unknown (``None``). The words as written are always kept
(``status_as_written``).
"""

from __future__ import annotations

import re

CURRENT, DRAFT, SUPERSEDED, PARTLY_SUPERSEDED = "current", "draft", "superseded", "partly_superseded"
WITHDRAWN, REJECTED, DEPRECATED, MOVED, DISPUTED = "withdrawn", "rejected", "deprecated", "moved", "disputed"
STATUSES = (CURRENT, PARTLY_SUPERSEDED, SUPERSEDED, DISPUTED, DRAFT, DEPRECATED, REJECTED, WITHDRAWN, MOVED)

# Phrases of more than one word, tried before single words (a phrase wins over its words).
STATUS_PHRASES: dict[str, str] = {
    "partly superseded": PARTLY_SUPERSEDED,
    "partially superseded": PARTLY_SUPERSEDED,
    "partly replaced": PARTLY_SUPERSEDED,
    "amended by": PARTLY_SUPERSEDED,
    "updated by": PARTLY_SUPERSEDED,
    "proposed standard": CURRENT,  # IETF maturity levels: published, in force
    "draft standard": CURRENT,
    "internet standard": CURRENT,
    "best current practice": CURRENT,
    "last call": DRAFT,
    "final comment period": DRAFT,
    "under review": DRAFT,
}

# Single words, by the normalised status they mean.
STATUS_WORDS: dict[str, str] = {
    **dict.fromkeys(
        (
            "accepted",
            "approved",
            "adopted",
            "agreed",
            "active",
            "current",
            "implemented",
            "implementable",
            "final",
            "living",
            "amended",
            "informational",
        ),
        CURRENT,
    ),
    **dict.fromkeys(
        ("proposed", "draft", "pending", "open", "review", "stagnant", "deferred", "provisional"),
        DRAFT,
    ),
    **dict.fromkeys(("superseded", "replaced", "obsolete", "obsoleted"), SUPERSEDED),
    **dict.fromkeys(("disputed", "contested"), DISPUTED),
    **dict.fromkeys(("deprecated", "retired", "historic"), DEPRECATED),
    **dict.fromkeys(("rejected", "declined"), REJECTED),
    **dict.fromkeys(("withdrawn", "abandoned"), WITHDRAWN),
    **dict.fromkeys(("moved",), MOVED),
}

# Statuses that can never be admitted as current evidence (superseded ones only when a successor is valid).
NEVER_CURRENT = frozenset({DRAFT, DEPRECATED, REJECTED, WITHDRAWN, MOVED})

_LINK = re.compile(r"\[(?P<label>[^\]]*)\]\((?P<target>[^)\s]+)\)")
_WORD = re.compile(r"[a-z]+")
FIRST_WORDS = 3  # only the first words of a status count ("Superseded by ADR-3, accepted 2020" is superseded)


def normalize_status(text: str) -> str | None:
    """Map a written status onto :data:`STATUSES`; ``None`` when unknown or ambiguous."""
    words = _WORD.findall(_LINK.sub(" ", text).lower())[:FIRST_WORDS]
    if not words or words[0] == "not":
        return None
    if words[0] == "supersedes":  # "Supersedes ADR-3" describes a current decision
        return CURRENT
    joined = " ".join(words)
    for phrase, status in STATUS_PHRASES.items():
        if joined.startswith(phrase) or f" {phrase}" in f" {joined}":
            return status
    found = {STATUS_WORDS[word] for word in words if word in STATUS_WORDS}
    return found.pop() if len(found) == 1 else None


def vocabulary_rows() -> list[tuple[str, str]]:
    """``(as written, normalised)`` rows of the whole table, phrases first (for docs and tests)."""
    return [*STATUS_PHRASES.items(), *sorted(STATUS_WORDS.items(), key=lambda item: (item[1], item[0]))]
