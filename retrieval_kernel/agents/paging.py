"""Paging past ``top``: the first page is exactly ``Workspace.query``; later pages come from a deeper one.

A cursor is ``KEY.SEEN``: a digest of the question and arguments it belongs to (so it cannot be
replayed against another question) and a short digest of each item earlier pages delivered.
The next page runs the same query with ``top = delivered + top`` and an unlimited budget, drops
the items already delivered (the policy's order can differ with ``top``, so an offset alone
could repeat one), and fits the next ``top`` whole into ``max_chars`` (the last that does not
fit opens the next page; a single item too long for the page is cut by whole lines, as
assembly does). Refs continue the earlier pages' (``e9`` follows ``e8``); conflicts and the excluded
list are the first page's business (its conflicts already name sides beyond ``top`` by passage id),
so later pages carry none.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import BudgetTooSmallError, InputError
from ..output.packet import Budget, Evidence, Packet
from ..pipeline.candidates import BEYOND_TOP, BUDGET
from ..pipeline.requests import MAX_TOP

DIGEST = 6  # hex characters per delivered item in a cursor


@dataclass(frozen=True)
class ContextPage:
    """One page of evidence, and the cursor for the next (``None``: nothing further)."""

    packet: Packet
    next_cursor: str | None


def cursor_key(question: str, intent: str, top: int, lanes: Sequence[str], as_of: str, scopes: frozenset[str]) -> str:
    material = [question.strip() if isinstance(question, str) else question, intent, top, list(lanes), as_of]
    material.append(sorted(scopes))
    return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:12]


def item_digest(passage_id: str) -> str:
    return hashlib.sha256(passage_id.encode()).hexdigest()[:DIGEST]


def parse_cursor(cursor: str, key: str) -> tuple[str, ...]:
    """The digests of the items earlier pages delivered; ``InputError`` for a malformed or foreign cursor."""
    digest, _, seen = cursor.strip().partition(".")
    wellformed = seen and len(seen) % DIGEST == 0 and all(ch in "0123456789abcdef" for ch in seen)
    if not digest or not wellformed or len(seen) // DIGEST >= MAX_TOP:
        raise InputError("malformed cursor: pass next_cursor exactly as a previous context call returned it")
    if digest != key:
        raise InputError(
            "this cursor belongs to another question or other arguments: repeat the same question, intent, "
            "top, lanes, as_of and scopes with it, or drop the cursor for the first page"
        )
    return tuple(seen[i : i + DIGEST] for i in range(0, len(seen), DIGEST))


def next_cursor(page: Packet, seen: Sequence[str], source: Packet, key: str) -> str | None:
    """The cursor past ``page``, if ``source`` (the query the page came from) ranked more items."""
    delivered = (*seen, *(item_digest(item.id) for item in page.evidence))
    if not page.evidence or len(delivered) >= MAX_TOP:
        return None
    left = [item for item in source.evidence if item_digest(item.id) not in delivered]
    more = left or source.exclusions.get(BEYOND_TOP, 0) + source.exclusions.get(BUDGET, 0)
    return f"{key}.{''.join(delivered)}" if more else None


def page_of(deep: Packet, seen: Sequence[str], top: int, max_chars: int) -> Packet:
    """The next ``top`` items of ``deep`` not yet delivered, fitted whole into ``max_chars``."""
    budget = Budget.checked("chars", max_chars)
    fresh = [item for item in deep.evidence if item_digest(item.id) not in set(seen)][:top]
    items = [replace(item, ref=f"e{len(seen) + n}", rank=len(seen) + n) for n, item in enumerate(fresh, 1)]
    base = replace(
        deep, budget=budget, evidence=(), excluded=(), conflicts=(), exclusions={**deep.exclusions, BUDGET: len(items)}
    )
    if base.with_measured_budget().budget.used > budget.limit:
        minimum = base.with_measured_budget().budget.used
        raise BudgetTooSmallError(f"a page needs at least {minimum:,} chars; max_chars is {max_chars:,}", minimum)
    for count in range(len(items), 0, -1):
        page = _with(base, items[:count], len(items) - count)
        if page.budget.used <= budget.limit:
            return page
    cut = _cut_to_fit(base, items[0], len(items) - 1)
    return cut if cut is not None else _with(base, [], len(items))


def _with(base: Packet, items: Sequence[Evidence], left: int) -> Packet:
    return replace(base, evidence=tuple(items), exclusions={**base.exclusions, BUDGET: left}).with_measured_budget()


def _cut_to_fit(base: Packet, item: Evidence, left: int) -> Packet | None:
    """The page holding ``item`` cut to its most leading lines that fit, if any do."""
    lines = item.excerpt.split("\n")
    for keep in range(len(lines) - 1, 0, -1):
        if not lines[keep - 1].strip():
            continue
        cut = replace(item, excerpt="\n".join(lines[:keep]), line_end=item.line_start + keep - 1, truncated=True)
        page = _with(base, [cut], left)
        if page.budget.used <= base.budget.limit:
            return page
    return None
