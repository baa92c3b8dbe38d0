"""A question about one numbered week (or the next occurrence of something) is answered only by a passage about it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from test_answerability import AS_OF, md, workspace  # tests/ is on sys.path (rootdir-less test modules)

from retrieval_kernel.pipeline.periods import asked_day, asked_week, asks_next, gives_coming_date, names_day, names_week


@pytest.mark.parametrize(
    ("question", "week"),
    [
        ("How many passengers did we handle in week 13?", 13),
        ("How many passengers did we carry in week 14, and how many bags were mishandled?", 14),
        ("wk 9: how many operations?", 9),
        ("What was on at 10:30 in week 12?", 12),
        ("In which week of the term are pupils assessed?", None),  # no number: not a named week
        ("Week 3 or week 4, which was busier?", None),  # two weeks: not one identity
        ("Is the return due within 2 weeks?", None),  # a length of time
    ],
)
def test_the_week_a_question_names(question: str, week: int | None) -> None:
    assert asked_week(question) == week


@pytest.mark.parametrize(
    ("texts", "week", "named"),
    [
        (["traffic-week-2027-15#passengers"], 15, True),  # a note id with the year
        (["records/traffic-week-2027-15.md"], 5, False),
        (["Weekly return", "Week 15"], 15, True),
        (["Return for 2027-W13"], 13, True),  # ISO week
        (["Reports are due within 2 weeks."], 2, False),
        (["Week 2027 archive"], 20, False),
    ],
)
def test_where_a_passage_names_a_week(texts: list[str], week: int, named: bool) -> None:
    assert names_week(texts, week) is named


RETURNS = {
    f"records/traffic-week-2027-{week}.md": md(
        f"Weekly traffic return, week {week}",
        {"Passengers": f"We handled {count} passengers and {flights} flights this week."},
        id=f"traffic-week-2027-{week}",
        authority="reference",
        kind="record",
        observed="2026-11-29",
    )
    for week, count, flights in ((14, 17105, 221), (15, 18420, 236))
} | {  # the rest of a small airport's notes: a background the judge can tell the returns apart from
    "policies/parking.md": md(
        "Parking tariff",
        {"Short stay": "Short stay parking costs 5 euro an hour.", "Long stay": "Long stay costs 14 euro a day."},
        id="parking",
        authority="authoritative",
    ),
    "policies/lounge.md": md(
        "Lounge rules",
        {"Entry": "Walk-in entry to the lounge costs 35 euro for an adult.", "Stay": "Guests may stay 4 hours."},
        id="lounge",
        authority="authoritative",
    ),
    "reference/facts.md": md(
        "Airport facts",
        {"Runway": "The runway is 2150 metres long.", "Gates": "The terminal has 6 gates and 12 stands."},
        id="facts",
        authority="authoritative",
    ),
}


def test_a_week_the_returns_do_not_cover_is_not_answered_by_another_week(tmp_path: Path) -> None:
    with workspace(tmp_path, RETURNS, lanes=("identity", "lexical", "dense")) as ws:
        covered = ws.query("How many passengers did we handle in week 15?", as_of=AS_OF)
        missing = ws.query("How many passengers did we handle in week 13?", as_of=AS_OF)
    assert not covered.abstained and covered.evidence[0].id.startswith("traffic-week-2027-15#")
    assert missing.abstained and missing.abstention_reason == "below_threshold"
    assert any("asks about week 13" in warning for warning in missing.warnings)


TIED_POLICY = {
    "policies/missed-bins.md": md(
        "Missed bins policy",
        {"Reporting a missed bin": "Residents report a missed bin within 48 hours. Missed bin reports are logged."},
        id="missed-bins",
        authority="authoritative",
        asserts={"missed_bin_report_hours": 48},
    ),
    "procedures/contact-centre.md": md(
        "Contact centre guide",
        {"Missed bin reports": "A missed bin can be reported up to 72 hours after collection day; we log each one."},
        id="contact-centre",
        authority="authoritative",
        asserts={"missed_bin_report_hours": 72},
    ),
    "records/returns-week-39.md": md(
        "Weekly return, week 39",
        {"Missed bins": "We logged 112 missed bin reports this week."},
        id="returns-week-39",
        authority="reference",
        kind="record",
        observed="2026-11-29",
    ),
}


def test_a_week_nobody_reports_abstains_for_that_reason_not_for_a_tie_on_the_leading_notes(tmp_path: Path) -> None:
    # The tied notes lead (they name missed bin reports), but the question is about week 38's count,
    # which no note states: the tie is not what it asks, the missing week is.
    with workspace(tmp_path, RETURNS | TIED_POLICY, lanes=("identity", "lexical", "dense")) as ws:
        packet = ws.query("How many missed bin reports were logged in week 38?", as_of=AS_OF)
    assert packet.abstained and packet.abstention_reason == "below_threshold"
    assert any("asks about week 38" in warning for warning in packet.warnings)


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("When is the next fire drill at Central?", True),
        ("What's the date of the next evacuation drill at the bus station?", True),
        ("When's the next consultative committee meeting?", True),
        ("When will the next audit be?", True),
        ("When is the bin collected next week?", False),  # a period, not the next occurrence
        ("When does the next ferry leave?", False),  # a timetable's times answer that
        ("How often are fire drills held?", False),
    ],
)
def test_which_questions_ask_for_the_next_occurrence(question: str, asks: bool) -> None:
    assert asks_next(question) is asks


@pytest.mark.parametrize(
    ("text", "coming"),
    [
        ("A fire drill is held twice a year, once in spring and once in autumn.", False),  # how often, not when
        ("The committee meets 4 times a year.", False),
        ("Environment committee, 14 September 2027.", False),  # before the clock
        ("Next meeting: 12 November.", True),  # no year: the clock's
        ("The panel meets on the first Tuesday of each month.", True),
        ("The next audit is due 2027-10-07.", True),
        ("Rota for June 31.", False),  # not a date
    ],
)
def test_which_texts_give_a_coming_date(text: str, coming: bool) -> None:
    assert gives_coming_date(text, dt.date(2027, 10, 6)) is coming


DRILLS = RETURNS | {
    "procedures/evacuation.md": md(
        "Evacuation procedure",
        {
            "Fire drills": "A full evacuation drill of the terminal is held twice a year, without warning.",
            "Assembly points": "Passengers gather at assembly point B in the short stay car park.",
        },
        id="evacuation",
        authority="authoritative",
    ),
}


def test_how_often_does_not_answer_when_the_next_one_is(tmp_path: Path) -> None:
    with workspace(tmp_path, DRILLS, lanes=("identity", "lexical", "dense")) as ws:
        often = ws.query("How often is there a fire drill in the terminal?", as_of=AS_OF)
        next_one = ws.query("When is the next fire drill in the terminal?", as_of=AS_OF)
    assert not often.abstained and often.evidence[0].id == "evacuation#fire-drills"
    assert next_one.abstained and next_one.abstention_reason == "below_threshold"
    assert any("when the next one is" in warning for warning in next_one.warnings)


def test_a_coming_date_answers_when_the_next_one_is(tmp_path: Path) -> None:
    scheduled = {
        "procedures/evacuation.md": md(
            "Evacuation procedure",
            {
                "Fire drills": "A full evacuation drill of the terminal is held twice a year; "
                "the next is on 3 March 2027."
            },
            id="evacuation",
            authority="authoritative",
        ),
    }
    with workspace(tmp_path, RETURNS | scheduled, lanes=("identity", "lexical", "dense")) as ws:
        packet = ws.query("When is the next fire drill in the terminal?", as_of=AS_OF)
    assert not packet.abstained and packet.evidence[0].id == "evacuation#fire-drills"


@pytest.mark.parametrize(
    ("question", "day"),
    [
        ("What was the footfall on Saturday 11 September?", (9, 11)),
        ("How many passes did we sell on 14 March?", (3, 14)),
        ("What did the log say on 2027-09-11?", (9, 11)),
        ("Is the hall open on 25 December?", None),  # a rule, not a day's record
        ("The cranes came in on 2 July. Can they go on show after five weeks?", None),  # told, not asked
        ("What was sold between 2 and 9 May?", None),  # the question names a span, or nothing readable
    ],
)
def test_the_day_a_past_tense_question_asks_about(question: str, day: tuple[int, int] | None) -> None:
    assert asked_day(question) == day


@pytest.mark.parametrize(
    ("question", "day"),
    [
        ("How many complaints came in yesterday?", (10, 12)),  # the day before the clock, whatever the verb
        ("What were the bar takings last night?", (10, 12)),  # last night: the day before the clock too
        ("How many hires did we do on Saturday the 9th?", (10, 9)),  # the last 9th on or before the clock
        ("How many hires did we do on the 20th?", (9, 20)),  # after the clock's day: last month's
        ("Is the depot open on the 20th?", None),  # a rule
        ("How many tonnes did we pick on Monday?", (10, 11)),  # the last Monday before the clock
        ("What did we take on Wednesday?", (10, 6)),  # the clock's own weekday: the week before
        ("How many pickers do we have on Monday?", None),  # a rule
        ("Who was on the desk on Monday 4 October?", (10, 4)),  # the date decides
        ("How many hires did we do on Tuesday the 5th?", (10, 5)),  # the 5th, not the last Tuesday (the 12th)
        ("BK-58213 booked yesterday at 08:05 - did they give enough notice?", None),  # a case told, a rule asked
    ],
)
def test_a_day_named_relative_to_the_clock(question: str, day: tuple[int, int] | None) -> None:
    assert asked_day(question, dt.date(2027, 10, 13)) == day


DAY_LOGS = RETURNS | {
    f"records/daily-log-2027-09-{day:02d}.md": md(
        f"Daily log, {day} September 2027",
        {"Passengers": f"We handled {count} passengers today."},
        id=f"daily-log-2027-09-{day:02d}",
        authority="reference",
        kind="record",
        observed="2026-11-29",
    )
    for day, count in ((9, 2410), (10, 2633))
}


def test_a_day_no_log_covers_is_not_answered_by_another_days_log(tmp_path: Path) -> None:
    assert names_day(["records/daily-log-2027-09-10.md"], (9, 10))
    assert not names_day(["We handled 2410 passengers on 9 September."], (9, 10))
    with workspace(tmp_path, DAY_LOGS, lanes=("identity", "lexical", "dense")) as ws:
        covered = ws.query("How many passengers did we handle on 10 September?", as_of=AS_OF)
        missing = ws.query("How many passengers did we handle on 11 September?", as_of=AS_OF)
    assert not covered.abstained and covered.evidence[0].id.startswith("daily-log-2027-09-10#")
    assert missing.abstained and any("asks about 11 September" in warning for warning in missing.warnings)


HARBOUR = {
    "policies/visiting-boats.md": md(
        "Visiting boats",
        {
            "Length of stay": "Visiting boats may stay up to 7 nights on the visitor pontoon.",
            "Rafting": "Visiting boats may raft up to three deep on the outer pontoon.",
            "Dogs": "Dogs on visiting boats must be on a lead ashore.",
        },
        id="visiting-boats",
        authority="authoritative",
    ),
    "records/harbour-log-2027-05-12.md": md(
        "Harbour log, 12 May 2027",
        {"Arrivals and departures": "14 visiting boats came in today and 9 left."},
        id="harbour-log-2027-05-12",
        authority="reference",
        kind="record",
        observed="2027-05-12",
    ),
}


def test_verifying_orders_by_authority_only_among_passages_that_answer_about_as_well(tmp_path: Path) -> None:
    with workspace(tmp_path, HARBOUR, lanes=("identity", "lexical", "dense")) as ws:
        packet = ws.query("How many visiting boats came in today?", as_of="2027-05-12", intent="verify", top=2)
    assert [item.id for item in packet.evidence][:1] == ["harbour-log-2027-05-12#arrivals-and-departures"]


def test_yesterday_is_answered_only_by_a_passage_about_the_day_before_the_clock(tmp_path: Path) -> None:
    with workspace(tmp_path, DAY_LOGS, lanes=("identity", "lexical", "dense")) as ws:
        logged = ws.query("How many passengers did we handle yesterday?", as_of="2027-09-11")
        unlogged = ws.query("How many passengers did we handle yesterday?", as_of="2027-09-12")
    assert not logged.abstained and "daily-log-2027-09-10#passengers" in [item.id for item in logged.evidence]
    assert unlogged.abstained and any("asks about 11 September" in warning for warning in unlogged.warnings)


def test_a_value_asked_of_one_week_is_read_from_that_weeks_return_only(tmp_path: Path) -> None:
    baggage = {
        "records/traffic-week-2027-15.md": md(
            "Weekly traffic return, week 15",
            {
                "Passengers": "We handled 18420 passengers and 236 flights this week.",
                "Baggage": "31 bags went missing this week and 29 were traced.",
            },
            id="traffic-week-2027-15",
            authority="reference",
            kind="record",
            observed="2026-11-29",
        )
    }
    with workspace(tmp_path, RETURNS | baggage, lanes=("identity", "lexical", "dense")) as ws:
        reported = ws.query("How many bags went missing in week 15?", as_of=AS_OF)
        unreported = ws.query("How many bags went missing in week 14?", as_of=AS_OF)
    assert not reported.abstained and reported.evidence[0].id == "traffic-week-2027-15#baggage"
    assert unreported.abstained and unreported.abstention_reason == "below_threshold"  # week 15's count is not it
