"""A question about one numbered week is answered only by a passage about that week.

"How many passengers did we handle in week 13?" lands on the weekly returns for weeks 14 and 15:
same words, same kind of number, a confident match, and the wrong week. A numbered week is an
identity, like an order number: the record of another week does not answer for it. A passage is
about week 13 when its note's path, its heading path or its text names that week ("week 13",
"wk 13", ``traffic-week-2027-13``, "2027-W13").

The same holds for one calendar day asked about in the past tense (see ``asked_day``) and for the next
occurrence of something (see ``asks_next``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator

_ASKED_WEEK = re.compile(r"\b(?:week|wk)\s*(?:no\.?\s*|number\s*)?(\d{1,2})(?!\d|[:.]\d)", re.IGNORECASE)


def asked_week(question: str) -> int | None:
    """The week number ``question`` names ("in week 13", "wk 9"), or ``None`` (none, or more than one)."""
    weeks = {int(found) for found in _ASKED_WEEK.findall(question)}
    return weeks.pop() if len(weeks) == 1 else None


def names_week(texts: Iterable[str], week: int) -> bool:
    """Whether any of ``texts`` (a path, a heading path, a passage) names week ``week``."""
    pattern = re.compile(rf"(?:\bweek|\bwk|\d{{4}}-?w)[\s_-]*(?:\d{{4}}[\s_-]+)?0?{week}(?![\d])", re.IGNORECASE)
    return any(pattern.search(text) for text in texts)


# "What was the footfall on Saturday 11 September?" asks the record of one day: a weekly return or
# another day's log does not answer it. Only a question about the past (was, were, did, had) that names
# one calendar day where it asks; "is the hall open on 25 December?" asks a rule, which any note may give.
_PAST = re.compile(r"\b(?:was|were|did|had)\b", re.IGNORECASE)
_SPAN = re.compile(r"\b(?:between|since|until|till|through|from|before|after|by)\b", re.IGNORECASE)  # not one day
_ASKING = re.compile(r"[^.!?]*\?")  # the sentences that ask ("The cranes came in on 2 July." only tells)


# "How many complaints came in yesterday?" asks yesterday's record; "BK-58213 booked yesterday at 08:05 - did they
# give enough notice?" tells a case and asks a rule: only a sentence opening with the question counts.
_OPENS_ASKING = re.compile(r"\s*(?:how|what|who|which|when|where|did|was|were|had|have|has|any)\b", re.IGNORECASE)
_YESTERDAY = re.compile(r"\byesterday\b|\blast night\b", re.IGNORECASE)  # "last night": the day before the clock
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ON_WEEKDAY = re.compile(  # not "on Monday 4 October" nor "on Saturday the 9th": the date decides
    r"\bon (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b(?!\s+(?:the\s+)?\d)", re.IGNORECASE
)
_DAY_OF_MONTH = re.compile(r"\bthe (\d{1,2})(?:st|nd|rd|th)\b(?!\s+(?:of\s+)?[a-z]{3})", re.IGNORECASE)  # "the 9th"


def asked_day(question: str, as_of: dt.date | None = None) -> tuple[int, int] | None:
    """The (month, day) of the one calendar day a past-tense question asks about, or ``None``.

    With the packet's clock, "yesterday" is the day before it, "Saturday the 9th" the last 9th on or
    before it and "on Monday" the last Monday before it (a question about yesterday is about the past
    whatever its verb).
    """
    asking = " ".join(_ASKING.findall(question)) or question
    if _SPAN.search(asking):
        return None
    if as_of is not None and _YESTERDAY.search(asking) and _OPENS_ASKING.match(asking):
        day = as_of - dt.timedelta(days=1)
        return day.month, day.day
    if not _PAST.search(asking):
        return None
    days = {(day.month, day.day) for day in _dates(asking, _ANY_YEAR)}
    if as_of is not None and not days and _OPENS_ASKING.match(asking):
        days = {_last_on_or_before(int(found), as_of) for found in _DAY_OF_MONTH.findall(asking)}
        days |= {_last_before(_WEEKDAYS.index(found.lower()), as_of) for found in _ON_WEEKDAY.findall(asking)}
    return days.pop() if len(days) == 1 else None


def _last_before(weekday: int, as_of: dt.date) -> tuple[int, int]:
    """The (month, day) of the last ``weekday`` (Monday 0) before ``as_of``: "did we pick on Monday?"."""
    day = as_of - dt.timedelta(days=(as_of.weekday() - weekday - 1) % 7 + 1)
    return day.month, day.day


def _last_on_or_before(day_of_month: int, as_of: dt.date) -> tuple[int, int]:
    """The (month, day) of the last ``day_of_month`` on or before ``as_of`` (this month's, else last month's)."""
    month = as_of.month if day_of_month <= as_of.day else as_of.month - 1 or 12
    return month, day_of_month


def names_day(texts: Iterable[str], day: tuple[int, int]) -> bool:
    """Whether any of ``texts`` (a path, a heading path, a passage) names the calendar ``day`` (month, day)."""
    return any((found.month, found.day) == day for text in texts for found in _dates(text, _ANY_YEAR))


# "When is the next fire drill?" asks for a coming date. "Drills are held twice a year" says how
# often, not when: it does not answer. A passage answers with a date on or after the clock or a day
# of the week ("every first Tuesday").
_ASKS_NEXT = re.compile(  # not "when does the next bus leave?": a timetable's times answer that
    r"\bwhen(?:'s| is| are)\s+(?:the |our )?next\b(?!\s+(?:week|month|year|day|quarter|term|season)s?\b)"
    r"|\bwhen will the next\b[^?]*\b(?:be|happen|take place|held)\b|\b(?:date|day) (?:of|for) (?:the |our )?next\b",
    re.IGNORECASE,
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAME = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_DAY_MONTH = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_NAME}\b\.?(?:,?\s+(\d{{4}}))?", re.IGNORECASE
)
_MONTH_DAY = re.compile(rf"\b{_MONTH_NAME}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_OF_WEEK = re.compile(r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b", re.IGNORECASE)


def asks_next(question: str) -> bool:
    """Whether ``question`` asks when the next occurrence of something is ("when is the next drill?")."""
    return bool(_ASKS_NEXT.search(question))


def gives_coming_date(text: str, as_of: dt.date) -> bool:
    """Whether ``text`` gives a date on or after ``as_of`` or a day of the week (a coming occurrence)."""
    return bool(_DAY_OF_WEEK.search(text)) or any(day >= as_of for day in _dates(text, as_of.year))


def _dates(text: str, year: int) -> Iterator[dt.date]:
    """The calendar dates ``text`` names (a date without a year is taken in ``year``)."""
    for found in _ISO_DATE.finditer(text):
        yield from _date(int(found[1]), int(found[2]), int(found[3]))
    for day, month, named_year in _DAY_MONTH.findall(text):
        yield from _date(int(named_year or year), _month(month), int(day))
    for month, day, named_year in _MONTH_DAY.findall(text):
        yield from _date(int(named_year or year), _month(month), int(day))


_ANY_YEAR = 2000  # a leap year: "29 February" without a year is still a day


def _month(name: str) -> int:
    return _MONTHS.index(name[:3].lower()) + 1


def _date(year: int, month: int, day: int) -> Iterator[dt.date]:
    try:
        yield dt.date(year, month, day)
    except ValueError:  # "31 June": not a date
        return
