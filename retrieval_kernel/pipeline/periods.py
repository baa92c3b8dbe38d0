"""A question about one numbered week is answered only by a passage about that week.

"How many passengers did we handle in week 13?" lands on the weekly returns for weeks 14 and 15:
same words, same kind of number, a confident match, and the wrong week. A numbered week is an
identity, like an order number: the record of another week does not answer for it. A passage is
about week 13 when its note's path, its heading path or its text names that week ("week 13",
"wk 13", ``traffic-week-2027-13``, "2027-W13").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_ASKED_WEEK = re.compile(r"\b(?:week|wk)\s*(?:no\.?\s*|number\s*)?(\d{1,2})(?!\d|[:.]\d)", re.IGNORECASE)


def asked_week(question: str) -> int | None:
    """The week number ``question`` names ("in week 13", "wk 9"), or ``None`` (none, or more than one)."""
    weeks = {int(found) for found in _ASKED_WEEK.findall(question)}
    return weeks.pop() if len(weeks) == 1 else None


def names_week(texts: Iterable[str], week: int) -> bool:
    """Whether any of ``texts`` (a path, a heading path, a passage) names week ``week``."""
    pattern = re.compile(rf"(?:\bweek|\bwk|\d{{4}}-?w)[\s_-]*(?:\d{{4}}[\s_-]+)?0?{week}(?![\d])", re.IGNORECASE)
    return any(pattern.search(text) for text in texts)
