"""What a caller may ask: the query text, lanes, scopes, intent, top and budget, each checked at the edge."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import BudgetError, EmptyQueryError, InputError, QueryTooLongError
from ..output.packet import DEFAULT_BUDGET_LIMIT, DEFAULT_BUDGET_UNIT, Budget
from .candidates import INTENTS

MAX_QUERY_CHARS = 4_000
DEFAULT_TOP = 8
MAX_TOP = 100
CANDIDATE_POOL = 50
LANES = ("identity", "lexical", "dense")


def checked_query(text: str) -> str:
    """The query stripped; ``InputError`` for non-text, empty or over-long queries."""
    if text is not None and not isinstance(text, str):
        raise InputError(f"the query must be text, not {type(text).__name__}")
    query = (text or "").strip()
    if not query:
        raise EmptyQueryError("the query is empty: ask a question or give key words")
    if len(query) > MAX_QUERY_CHARS:
        raise QueryTooLongError(
            f"the query has {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}. Shorten it to its key words"
        )
    return query


def checked_top(top: int) -> int:
    if not 1 <= top <= MAX_TOP:
        raise BudgetError(f"top must be between 1 and {MAX_TOP}, not {top}")
    return top


def checked_scopes(scopes: Sequence[str] | str | None) -> frozenset[str]:
    """The caller's scopes: a comma-separated string, a list, or ``None`` for none."""
    if scopes is None:
        return frozenset()
    names = scopes.split(",") if isinstance(scopes, str) else list(scopes)
    if any(not isinstance(name, str) for name in names):
        raise InputError(f"scopes must be names (strings), got {scopes!r}")
    return frozenset(name.strip() for name in names if name.strip())


def checked_intent(intent: str) -> str:
    if intent not in INTENTS:
        raise InputError(f"intent must be one of {', '.join(INTENTS)}, not {intent!r}")
    return intent


def checked_lanes(lanes: Sequence[str] | str) -> tuple[str, ...]:
    """Lane names in canonical order; ``InputError`` for an unknown or empty choice."""
    names = [lane.strip() for lane in (lanes.split(",") if isinstance(lanes, str) else lanes) if lane.strip()]
    unknown = sorted(set(names) - set(LANES))
    if unknown or not names:
        raise InputError(f"lanes must be a non-empty subset of {', '.join(LANES)}; got {', '.join(names) or 'none'}")
    return tuple(lane for lane in LANES if lane in names)


def budget_from(max_bytes: int | None, max_chars: int | None) -> Budget:
    """The budget named by at most one of ``max_bytes`` / ``max_chars`` (default 20,000 chars)."""
    if max_bytes is not None and max_chars is not None:
        raise BudgetError("give either max_bytes or max_chars, not both")
    if max_bytes is not None:
        return Budget.checked("bytes", max_bytes)
    if max_chars is not None:
        return Budget.checked("chars", max_chars)
    return Budget.checked(DEFAULT_BUDGET_UNIT, DEFAULT_BUDGET_LIMIT)
