"""Answerability: "nothing applies" when nothing does, conflicts that block only what they are about,
the answering section first. Real Whoosh, real Chroma and the packaged model, on small note sets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from retrieval_kernel import Workspace
from retrieval_kernel.corpus.facts import NoteFacts
from retrieval_kernel.pipeline.answer_type import answers_asked, asks_for_no_value, value_kind
from retrieval_kernel.pipeline.answerability import (
    MODEL_FILE,
    PASSAGE_FEATURES,
    QUESTION_FEATURES,
    STATED_SIMILARITY,
    Judgement,
    content_terms,
    load_models,
    stating_candidates,
)
from retrieval_kernel.pipeline.candidates import ConflictDraft, Side
from retrieval_kernel.pipeline.conflicts import mark_blocking, names_value

ROOT = Path(__file__).resolve().parent.parent
AS_OF = "2026-11-30"
FAST = ("identity", "lexical")


def md(title: str, sections: dict[str, str], **front: object) -> str:
    head = "---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n" if front else ""
    body = "".join(f"\n## {heading}\n\n{text}\n" for heading, text in sections.items())
    return f"{head}# {title}\n{body}"


def workspace(tmp_path: Path, files: dict[str, str], lanes: tuple[str, ...] = FAST) -> Workspace:
    notes = tmp_path / "notes"
    for name, text in files.items():
        (notes / name).parent.mkdir(parents=True, exist_ok=True)
        (notes / name).write_text(text, encoding="utf-8")
    ws = Workspace(notes, tmp_path / "store", lanes=lanes)
    ws.index()
    return ws


@pytest.fixture(scope="module")
def workshop(workshop_notes: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    with Workspace(workshop_notes, tmp_path_factory.mktemp("answerability-workshop")) as ws:
        ws.index()
        yield ws


# ---------------------------------------------------------------- the models


def test_a_value_stated_about_something_else_by_meaning_does_not_answer(workshop: Workspace) -> None:
    # "Tracing a dependency chain" shares the question's words and states lengths of time (a 6-level
    # stop, hours), but no sentence stating one is close in meaning to how long the view takes to run.
    question = 'How long does the "used by" view take to run on a large assembly?'
    packet = workshop.query(question, as_of=AS_OF)
    assert packet.abstained and packet.abstention_reason == "below_threshold"
    why = next(warning for warning in packet.warnings if "asks for a length of time" in warning)
    closest = float(why.split("the closest statement ")[1].split(" ")[0])
    assert closest < STATED_SIMILARITY
    measured = workshop.judge.similarity
    try:  # the same statements judged close in meaning: the wording rule alone lets them answer
        workshop.judge.similarity = lambda query, texts: [1.0] * len(texts)
        assert not workshop.query(question, as_of=AS_OF).abstained
    finally:
        workshop.judge.similarity = measured


def test_without_the_dense_lane_the_value_statements_are_read_by_their_words_only(tmp_path: Path) -> None:
    notes = {"parking.md": md("Parking", {"Car park": "Cars park for 1.50 euro an hour behind the library."})}
    with workspace(tmp_path, notes) as ws:  # identity and lexical lanes: no model to compare meanings with
        ws.judge.similarity = lambda query, texts: pytest.fail("the dense lane did not run")
        ws.query("How much does it cost to park a car behind the library?", as_of=AS_OF)


def test_the_fitted_models_are_complete_and_say_where_they_came_from() -> None:
    data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    fitted = [data["sources"][name] for name in data["sources"] if name != "off_topic"]
    folders = [Path(path) for entry in fitted for path in ([entry] if isinstance(entry, str) else entry)]
    holdouts = [folder for folder in folders if "holdout" in folder.name or "probes" in folder.name]
    assert len(holdouts) >= 2
    for folder in holdouts:  # fitted only on holdouts already scored (a receipt), never on one still frozen
        assert any((ROOT / folder / "receipts").glob("*.json")), folder
    for lanes in ("hybrid", "lexical"):
        pair = data[lanes]
        assert set(pair["question"]["features"]) <= set(QUESTION_FEATURES)
        assert set(pair["passage"]["features"]) <= set(PASSAGE_FEATURES)
        assert 0 < pair["question"]["threshold"] < 1 and 0 < pair["passage"]["threshold"] < 1
        assert pair["passage"]["threshold"] <= pair["passage"]["reach"] < 1  # out of reach needs a stronger answer
        bins = pair["calibration"]["reliability_questions"]
        assert sum(b["count"] for b in bins) == sum(k["questions"] for k in pair["calibration"]["questions"].values())
    assert "dense" not in " ".join(data["lexical"]["question"]["features"] + data["lexical"]["passage"]["features"])
    models = load_models()
    assert models.hybrid.question.threshold == data["hybrid"]["question"]["threshold"]


def test_question_words_and_stop_words_never_count_as_content() -> None:
    assert content_terms("What is it? How does it work, and when?") == ["work"]
    assert content_terms("When are its elements checked, and by him or her?") == ["element", "check"]  # pronouns
    assert content_terms("How long do we keep backups?") == ["keep", "backup"]
    assert "time" in content_terms("What time does the depot open?")


# ---------------------------------------------------------------- nothing applies


def test_an_off_topic_question_abstains_and_an_answerable_one_answers(workshop: Workspace) -> None:
    off = workshop.query("What is the boiling point of water at the top of Everest?", as_of=AS_OF)
    assert off.abstained and off.abstention_reason == "below_threshold"
    assert off.evidence == ()
    assert off.exclusions["weak_match"] > 0  # found by the lanes, judged not to answer
    assert off.confidence is not None and off.confidence < load_models().hybrid.question.threshold
    on = workshop.query("Who approves a production deployment?", as_of=AS_OF)
    assert not on.abstained and on.evidence
    assert on.confidence is not None and on.confidence >= load_models().hybrid.question.threshold
    assert "answer confidence" in str(on).splitlines()[1]


def test_a_question_of_only_question_words_is_underspecified(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.md": md("Pumps", {"Intake": "The intake filter is cleaned weekly."})}) as ws:
        packet = ws.query("what is it?", as_of=AS_OF)
    assert packet.abstention_reason == "underspecified_query"


def test_when_the_answer_has_expired_the_packet_says_so_instead_of_a_stand_in(tmp_path: Path) -> None:
    files = {
        "drought.md": md(
            "Drought stage 2",
            {"Watering days": "Customers may water gardens on Tuesdays and Saturdays only."},
            valid_from="2026-07-01",
            valid_to="2026-10-31",
        ),
        "mains.md": md("Main breaks", {"Response": "A crew reaches a main break within 60 minutes on any day."}),
    }
    with workspace(tmp_path, files) as ws:
        packet = ws.query("On which days may customers water their gardens?", as_of=AS_OF)
        before = ws.query("On which days may customers water their gardens?", as_of="2026-08-01")
    assert packet.abstention_reason == "filtered_by_validity" and packet.evidence == ()
    assert [e.id for e in before.evidence] == ["drought#watering-days"]


@pytest.mark.parametrize(
    ("watering", "reason"),
    [
        ("Customers may water gardens on Tuesdays and Saturdays only.", "below_threshold"),  # no fine stated
        (
            "Customers may water gardens on Tuesdays and Saturdays only. Watering on other days brings a fine of "
            "50 euro.",
            "filtered_by_validity",
        ),
    ],
)
def test_an_answer_out_of_reach_states_the_value_asked_for(tmp_path: Path, watering: str, reason: str) -> None:
    files = {
        "drought.md": md(
            "Drought stage 2", {"Watering days": watering}, valid_from="2026-07-01", valid_to="2026-10-31"
        ),
        "mains.md": md("Main breaks", {"Response": "A crew reaches a main break within 60 minutes on any day."}),
    }
    with workspace(tmp_path, files) as ws:
        packet = ws.query("How much is the fine for customers watering gardens on other days?", as_of=AS_OF)
    assert packet.abstained and packet.abstention_reason == reason


# ---------------------------------------------------------------- conflicts block only what they are about


def depot(side: str, days: int, sections: dict[str, str]) -> str:
    """A depot note asserting its shipping days (the tie the conflict tests read), with more sections."""
    shipping = {"Shipping": f"Parcels from the {side} depot arrive in {days} days."}
    return md(
        f"{side.title()} depot",
        shipping | sections,
        id=f"{side}-depot",
        authority="reference",
        asserts={"shipping_days": days},
    )


DEPOTS = {
    "east.md": depot("east", 3, {"Opening hours": "The east depot is open from 7 am to 3 pm on weekdays."}),
    "west.md": depot(
        "west", 5, {"Returns address": "Returned parcels go to Unit 4, Harbour Road, not to the depot counter."}
    ),
}


def test_a_question_about_the_contested_fact_abstains(tmp_path: Path) -> None:
    with workspace(tmp_path, DEPOTS) as ws:
        packet = ws.query("How many shipping days for a parcel from a depot?", as_of=AS_OF)
    assert packet.abstention_reason == "unresolved_conflict"
    (conflict,) = packet.conflicts
    assert conflict.proposition == "shipping_days" and conflict.resolution == "unresolved"


def test_a_question_on_a_side_topic_of_a_conflicting_note_is_answered(tmp_path: Path) -> None:
    with workspace(tmp_path, DEPOTS) as ws:
        packet = ws.query("Where do returned parcels go?", as_of=AS_OF)
    assert not packet.abstained
    assert packet.evidence[0].id == "west-depot#returns-address"
    (conflict,) = packet.conflicts  # reported, not blocking: the question is not about shipping days
    assert (conflict.proposition, conflict.resolution) == ("shipping_days", "unresolved")


BAYS = {
    "east.md": depot("east", 3, {}),
    "west.md": depot(
        "west", 5, {"Returns": "Returned parcels are left at Bay 3, beside the west depot's loading door."}
    ),
}


def test_a_number_in_a_name_is_not_a_contested_value(tmp_path: Path) -> None:
    """A number in a name ("Bay 3") does not name the 3 shipping days one side of the tie states."""
    with workspace(tmp_path, BAYS) as ws:
        side = ws.query("Can I leave a returned parcel at Bay 3 of the west depot?", as_of=AS_OF)
    assert not side.abstained
    (conflict,) = side.conflicts
    assert (conflict.proposition, conflict.resolution) == ("shipping_days", "unresolved")


REVIEWS = {
    "aml.md": md(
        "Anti money laundering procedure",
        {"Refreshing records": "Member records are refreshed every 3 years."},
        id="aml",
        authority="reference",
        asserts={"record_refresh_years": 3},
    ),
    "handbook.md": md(
        "Compliance handbook",
        {"Reviews": "Review each member's identity every 5 years."},
        id="handbook",
        authority="reference",
        asserts={"record_refresh_years": 5},
    ),
}


def test_a_tie_is_found_when_retrieval_misses_its_other_side(tmp_path: Path) -> None:
    """The handbook shares no word with the question, so no lane proposes it; it asserts the same fact."""
    with workspace(tmp_path, REVIEWS) as ws:
        packet = ws.query("How often are records refreshed?", as_of=AS_OF)
        found = {c.path for c in ws.retrieve("How often are records refreshed?", list(ws.lanes))}
    assert found == {"aml.md"}  # the lanes alone never see the other side
    assert packet.abstention_reason == "unresolved_conflict"
    (conflict,) = packet.conflicts
    assert conflict.proposition == "record_refresh_years" and conflict.resolution == "unresolved"
    assert {side.id for side in conflict.evidence} == {"aml#refreshing-records", "handbook#reviews"}
    assert "handbook#reviews" not in [e.id for e in packet.evidence]  # named in the conflict, never admitted


REVISIONS = {
    "refresh-b.md": md(
        "Member record refresh (revision B)",
        {"Refreshing records": "Member records are refreshed every 2 years."},
        id="refresh-b",
        authority="reference",
        revision="B",
        supersedes=["refresh-a@A"],
        asserts={"record_refresh_years": 2},
    ),
    "refresh-a.md": md(
        "Know your customer procedure (revision A)",
        {"Identity reviews": "Review each member's identity every 5 years."},
        id="refresh-a",
        authority="reference",
        revision="A",
        status="superseded",
        asserts={"record_refresh_years": 5},
    ),
}


def test_a_changed_value_is_shown_when_retrieval_misses_the_old_revision(tmp_path: Path) -> None:
    """Revision A shares no word with the question, so no lane proposes it; revision B changed its value."""
    with workspace(tmp_path, REVISIONS) as ws:
        packet = ws.query("How often are records refreshed?", as_of=AS_OF)
        found = {c.path for c in ws.retrieve("How often are records refreshed?", list(ws.lanes))}
    assert found == {"refresh-b.md"}  # the lanes alone never see the old revision
    assert not packet.abstained and [e.id for e in packet.evidence] == ["refresh-b#refreshing-records"]
    (conflict,) = packet.conflicts
    assert conflict.proposition == "record_refresh_years" and conflict.resolution.startswith("superseded")
    assert conflict.winner == "refresh-b#refreshing-records"
    assert {side.id for side in conflict.evidence} == {"refresh-a#identity-reviews", "refresh-b#refreshing-records"}
    assert packet.exclusions.get("superseded", 0) == 0  # shown as the change, not counted as a candidate set aside


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("Can members fire kiln 3 on their own?", False),  # the notes write "Kiln 3" inside a sentence
        ("Is the Kiln 3 controller locked?", False),
        ("Is it 3 supervised firings or 5?", True),
        ("Do I need 3 supervised firings first?", True),
        ("Every 3 firings?", True),  # "Every 3" starts a sentence of the notes: no name
        ("Can I put my name down for Plot 3?", False),  # "Plot 3, by the gate" starts a sentence, before no unit
        ("Allow 3 days?", True),  # "Allow 3 days" starts a sentence before a unit: a value
    ],
)
def test_a_value_is_named_unless_the_number_is_part_of_a_name(query: str, named: bool) -> None:
    notes = [
        "Members may fire Kiln 3 on their own after 3 supervised firings.",
        "Every 3 firings, check it.",
        "Plot 3, by the gate, is never offered. Allow 3 days for a reply.",
    ]
    assert names_value(query, 3, notes) is named


# ---------------------------------------------------------------- the answering section first


def test_the_answering_section_beats_the_notes_introduction(workshop: Workspace) -> None:
    packet = workshop.query("What do we do if a delivery is going to be late?", as_of=AS_OF)
    assert packet.evidence[0].heading == "Replanning after a slip"
    intro = [e for e in packet.evidence if e.heading == "Delivery planning"]
    assert not intro or packet.evidence.index(intro[0]) > 0


CAR_PARKS = {
    "car-park.md": md(
        "Terminal car park",
        {
            "Maximum stay": "Cars may stay in the long stay car park for up to 14 days.",
            "Charges": "A day in the long stay car park costs EUR 6, paid at the machine.",
        },
        id="car-park",
        authority="authoritative",
        asserts={"long_stay_max_days": 14, "car_park_daily_rate_eur": 6},
    ),
    "bylaws.md": md(
        "Port bylaws",
        {
            "Abandoned vehicles": "A car left in the long stay car park for more than 21 days counts as abandoned.",
            "Speed": "The speed limit inside the port is 10 km/h.",
        },
        id="bylaws",
        authority="authoritative",
        asserts={"long_stay_max_days": 21, "port_speed_limit_kmh": 10},
    ),
}


def test_a_question_naming_the_contested_subject_but_asking_another_fact_is_answered(tmp_path: Path) -> None:
    # "long stay" names the contested key's words, but the answer is the note's daily rate.
    with workspace(tmp_path, CAR_PARKS) as ws:
        rate = ws.query("How much does a day in the long stay car park cost?", as_of=AS_OF)
        stay = ws.query("For how many days may a car stay in the long stay car park?", as_of=AS_OF)
    assert not rate.abstained and rate.evidence[0].id == "car-park#charges"
    assert [(c.proposition, c.resolution) for c in rate.conflicts] == [("long_stay_max_days", "unresolved")]
    assert stay.abstention_reason == "unresolved_conflict"


def _passage(pid: str, text: str, **asserts: object) -> SimpleNamespace:
    passage = SimpleNamespace(text=text)
    return SimpleNamespace(id=pid, stored=SimpleNamespace(passage=passage), facts=NoteFacts(asserts=asserts))


def _blocks(conflict: ConflictDraft, judged: Judgement, eligible: list[SimpleNamespace]) -> bool:
    (marked,) = mark_blocking([conflict], eligible, judged, "")  # type: ignore[arg-type]
    return marked.blocking


def _tie(first: str, second: str) -> ConflictDraft:
    sides = (Side(first, "a.md", 14, "authoritative", None), Side(second, "b.md", 16, "authoritative", None))
    return ConflictDraft("minor_min_age", sides, "unresolved")


def test_an_unanswered_question_led_by_both_stating_passages_is_about_the_conflict() -> None:
    eligible = [
        _passage("a#children", "Children of 14 or over may travel alone.", minor_min_age=14),
        _passage("b#young", "Passengers under 16 must travel with an adult.", minor_min_age=16),
        _passage("a#pets", "Dogs travel on the open deck.", minor_min_age=14),
        _passage("b#complaints", "Written complaints are answered within 10 working days.", minor_min_age=16),
    ]
    probabilities = {"a#children": 0.05, "b#young": 0.04, "a#pets": 0.03, "b#complaints": 0.01}
    unsure = Judgement(0.1, 0.35, probabilities, 0.02)
    assert _blocks(_tie("a#children", "b#young"), unsure, eligible)
    # A side shown by a fallback passage that does not state its value is no evidence that the question is about it.
    assert not _blocks(_tie("a#children", "b#complaints"), unsure, eligible)
    # Mostly words no note holds (a question about something else that sounds close): not about the conflict.
    assert not _blocks(_tie("a#children", "b#young"), replace(unsure, unknown=0.6), eligible)
    behind = Judgement(0.1, 0.35, {**probabilities, "b#young": 0.001}, 0.02)  # a stating passage is not in the lead
    assert not _blocks(_tie("a#children", "b#young"), behind, eligible)


READING_ROOMS = {
    "rules.md": md(
        "Reading room rules",
        {
            "Fetching items": "Items are fetched from the strongroom at 10:00 and 14:00. "
            "A reader may have 4 items at the desk at once."
        },
        id="rules",
        authority="reference",
        asserts={"reading_room_items_at_once": 4},
    ),
    "guide.md": md(
        "Handling guide",
        {"Producing items": "Staff bring a reader 3 items at once from the strongroom."},
        id="guide",
        authority="reference",
        asserts={"reading_room_items_at_once": 3},
    ),
    "hours.md": md(
        "Opening hours",
        {"Central": "Central opens at 09:00 on weekdays.", "Saltcote": "Saltcote is closed on Mondays."},
    ),
}


def test_a_question_asking_another_kind_of_value_than_the_contested_one_is_answered(tmp_path: Path) -> None:
    # The times share the section (and the word "items") with the contested count: a time of day
    # cannot be a count, so the question is not about the tie; asking the count still abstains.
    with workspace(tmp_path, READING_ROOMS) as ws:
        times = ws.query("At what time are items fetched from the strongroom?", as_of=AS_OF)
        count = ws.query("How many items can a reader have at the desk at once?", as_of=AS_OF)
    assert not times.abstained and times.evidence[0].id == "rules#fetching-items"
    assert [(c.proposition, c.resolution) for c in times.conflicts] == [("reading_room_items_at_once", "unresolved")]
    assert count.abstention_reason == "unresolved_conflict"


ROTATION = {
    "pool.md": md(
        "Pool operating standard",
        {
            "Lifeguard rotation": "Lifeguards rotate every 20 minutes. The rotation moves clockwise round the "
            "pool, from the high chair to the deep end and on to the shallow end."
        },
        id="pool",
        authority="reference",
        asserts={"lifeguard_rotation_minutes": 20},
    ),
    "manual.md": md(
        "Lifeguard team manual",
        {"Rotation": "Lifeguards rotate every 30 minutes so that nobody watches one zone for too long."},
        id="manual",
        authority="reference",
        asserts={"lifeguard_rotation_minutes": 30},
    ),
}


def test_a_question_asking_how_rather_than_how_long_is_not_about_the_contested_interval(tmp_path: Path) -> None:
    with workspace(tmp_path, ROTATION) as ws:
        direction = ws.query("In which direction does the lifeguard rotation move round the pool?", as_of=AS_OF)
        interval = ws.query("How often do lifeguards rotate?", as_of=AS_OF)
    assert direction.abstention_reason != "unresolved_conflict"
    reported = [(c.proposition, c.resolution) for c in direction.conflicts]
    assert reported == [("lifeguard_rotation_minutes", "unresolved")]
    assert interval.abstention_reason == "unresolved_conflict"


SWIM_SCHOOL = {
    "policy.md": md(
        "Swim school policy",
        {
            "Class sizes": "A stage 1 class has at most 8 pupils, with one teacher in the water.",
            "Assessments": "Pupils are assessed in week 6 of each term, by a teacher other than their own.",
        },
        id="policy",
        authority="reference",
        asserts={"stage1_class_max_pupils": 8},
    ),
    "guide.md": md(
        "Swim teacher guide",
        {"Stage 1 classes": "A stage 1 class may take up to 10 pupils when a helper is on the poolside."},
        id="guide",
        authority="reference",
        asserts={"stage1_class_max_pupils": 10},
    ),
}


def test_naming_the_contested_thing_is_not_asking_its_value_when_another_section_answers(tmp_path: Path) -> None:
    # "pupils" is the contested key's last word, but the assessment section answers and the question
    # asks for no count: the tie on class sizes does not block it; asking the count still does.
    with workspace(tmp_path, SWIM_SCHOOL) as ws:
        week = ws.query("In which week of the term are pupils assessed?", as_of=AS_OF)
        size = ws.query("How many pupils can a stage 1 class have?", as_of=AS_OF)
    assert not week.abstained
    assert week.evidence[0].id == "policy#assessments"
    assert [(c.proposition, c.resolution) for c in week.conflicts] == [("stage1_class_max_pupils", "unresolved")]
    assert size.abstention_reason == "unresolved_conflict"


@pytest.mark.parametrize(
    ("question", "value", "asks_none"),
    [
        ("Who inspects the flying system?", "duration", True),
        ("What happens if a hire is cancelled too late?", "number", True),
        ("Before I charge for a lost item, what should I check first?", "money", True),
        ("What colour caps do stage 2 pupils wear?", "number", True),
        ("Who inspects the flying system?", None, False),  # the contested values may be names
        ("How many pupils may a stage 1 class have?", "number", False),
        ("Who is allowed to cancel a hire?", "number", False),
        ("Do we fast rabbits before an operation?", "hours", True),  # whether, not how long
        ("How do appointment reminders get to clients?", "duration", True),
        ("Is the fasting time still 12 hours?", "hours", False),  # names a number: checks the value
        ("How long do we keep the records?", "duration", False),
        ("Do booster reminders go out by text, by email or both?", "duration", True),  # "both" counts nothing
        ("If we see six cows on one visit, is the call out charged per animal?", "money", True),  # a count of cows
        ("Is the class still 10 pupils?", "number", False),
        ("A box sealed at 6am was opened at 9pm. Can the units still be used?", "hours", False),
        ("Van K-0412 has done 40 rental days since its test. Is it due another?", "duration", False),
        ("What should donors avoid for the rest of the day?", "duration", True),
        ("What do I pick up when I sign on?", "hours", True),
        ("What else does the nurse check at admission?", "hours", True),
        # the thirty-seventh attempt: a few more words before the verb, and a few more verbs
        ("Which kinds of photo ID do we accept at the counter?", "money", True),
        ("Which locker in the lifeguard room has the photometer?", "hours", True),
        ("What does a customer need to send back with a faulty bottle?", "duration", True),
        ("After I top a barrel, what do I mark on it?", "duration", True),
        ("What goes on the label when I open a bottle of wine?", "duration", True),
        ("What form do I fill in to book freight?", "duration", True),
        ("A client missed their appointment: what do I put on the account?", "money", False),  # maybe the fee
        ("Which month is the boiler serviced in?", "duration", False),  # a value's sort
        ("A box sealed at 6am was opened at 9pm. Can the units still be used?", "duration", False),  # how long
        ("After sharpening a pair how do I reset the count?", "number", True),  # "how do I" mid-sentence
        ("What hollow do we sharpen hire skates to?", "number", True),  # "what" names a sort, as "which" does
        ("What setting does the soup kettle dial go on?", "duration", True),
        ("What discount do members get?", "percent", False),  # a discount is a value's sort
        ("What time does the cafe close?", "hours", False),
    ],
)
def test_a_person_or_procedure_question_asks_no_number(question: str, value: str | None, asks_none: bool) -> None:
    assert asks_for_no_value(question, value) is asks_none


@pytest.mark.parametrize(
    ("key", "values", "kind"),
    [
        ("reading_room_items_at_once", [4, 3], "number"),
        ("home_delivery_interval_weeks", [3, 4], "duration"),
        ("driver_sign_on_minutes", [10, 15], "duration"),  # a plural unit: a length of time, never a time of day
        ("soup_hot_hold_hours", [4, 2], "duration"),
        ("cafe_sunday_close_hour", [16, 17], "hours"),  # a singular hour may be a time of day
        ("keeper_heat_break_minutes_per_hour", [10, 15], "hours"),
        ("log_free_delivery_miles", [8, 10], "measurement"),
        ("lost_item_processing_fee_eur", [5, 7.5], "money"),
        ("deposit_pct", [20, 25], "percent"),
        ("branch.opens", ["09:30", "10:00"], "clock"),
        ("contract.ends", ["2027-03-31", "2027-06-30"], "date"),
        ("kiosk.staff_may_enter_pin", [True, False], None),
        ("bookbus.route", ["Route A", "Route C"], None),
    ],
)
def test_a_facts_value_kind_comes_from_its_key_or_its_values(key: str, values: list[object], kind: str | None) -> None:
    assert value_kind(key, values) == kind


@pytest.mark.parametrize(
    ("asked", "value", "answers"),
    [
        ("clock", "duration", False),  # "what times do the inspection slots start" is not an interval in weeks
        ("clock", "hours", True),
        ("duration", "hours", True),
        ("duration", "duration", True),
        ("count", "duration", False),
        ("money", None, True),  # unknown: may answer
        ("quantity", "money", True),  # "what's the day rate" may be asking the contested fee
        ("quantity", "date", False),
    ],
)
def test_an_asked_type_is_answered_only_by_value_kinds_it_can_be(asked: str, value: str | None, answers: bool) -> None:
    assert answers_asked(asked, value) is answers


def test_a_side_note_behind_another_notes_answer_blocks_only_with_its_value_close_behind() -> None:
    eligible = [
        _passage("noise#response", "The warden reaches a night noise complaint within 20 minutes."),
        _passage("a#help", "At night, ring the duty warden on 0800 100.", minor_min_age=14),
        _passage("b#young", "Passengers under 16 must travel with an adult.", minor_min_age=16),
        _passage("a#children", "Children of 14 or over may travel alone.", minor_min_age=14),
    ]
    ranked = ["noise#response", "a#help", "b#young", "a#children"]
    confident = Judgement(0.9, 0.35, {pid: 0.9 - i / 10 for i, pid in enumerate(ranked)}, 0.02)
    # The best answer is another note's; the side's best passage states none of the contested values.
    assert not _blocks_question(_tie("a#children", "b#young"), confident, eligible, "What age counts at night?")
    # Once a stating passage is second, the question may still be about the tie.
    closer = replace(confident, probabilities={**confident.probabilities, "b#young": 0.85})
    assert _blocks_question(_tie("a#children", "b#young"), closer, eligible, "What age counts at night?")


def _blocks_question(conflict: ConflictDraft, judged: Judgement, eligible: list[SimpleNamespace], query: str) -> bool:
    (marked,) = mark_blocking([conflict], eligible, judged, query)  # type: ignore[arg-type]
    return marked.blocking


def test_a_count_the_best_answer_states_itself_is_not_a_question_about_a_tie_behind_it() -> None:
    eligible = [
        _passage("patrols#nights", "A berthing master works at most 3 shifts a week at night."),
        _passage("a#stay", "Visiting boats may stay up to 14 nights.", visitor_max_stay_nights=14),
        _passage("b#longer", "Skippers may stay 21 nights in all.", visitor_max_stay_nights=21),
    ]
    ranked = ["patrols#nights", "a#stay", "b#longer"]
    confident = Judgement(0.9, 0.35, {pid: 0.9 - i / 10 for i, pid in enumerate(ranked)}, 0.02)
    sides = (Side("a#stay", "a.md", 14, "authoritative", None), Side("b#longer", "b.md", 21, "authoritative", None))
    tie = ConflictDraft("visitor_max_stay_nights", sides, "unresolved")
    assert not _blocks_question(tie, confident, eligible, "How many night shifts a week can a berthing master work?")
    # The same ranking for a count the best answer does not state: the tie's stating passage, second, may answer.
    assert _blocks_question(tie, confident, eligible, "How many nights can a visiting boat stay?")


LOANS = {
    "herbarium-handbook.md": md(
        "Herbarium handbook",
        {
            "Outgoing loans": "Specimens go out on loan for 12 months. The borrowing institution returns the signed "
            "invoice sheet within 2 weeks of receiving the parcel.",
        },
        id="herbarium-handbook",
        authority="reference",
        asserts={"specimen_loan_months": 12},
    ),
    "loans-policy.md": md(
        "Specimen loans policy",
        {"Loan period": "Specimens go out on loan for 6 months, renewable once."},
        id="loans-policy",
        authority="reference",
        asserts={"specimen_loan_months": 6},
    ),
}


def test_a_side_question_answered_beside_the_contested_value_in_the_same_section_is_answered(tmp_path: Path) -> None:
    with workspace(tmp_path, LOANS, lanes=("identity", "lexical", "dense")) as ws:
        side = ws.query("How soon after a loan arrives must the borrower return the signed invoice sheet?", as_of=AS_OF)
        tied = ws.query("How many months do specimens go out on loan for?", as_of=AS_OF)
    assert not side.abstained and side.evidence[0].id == "herbarium-handbook#outgoing-loans"
    assert tied.abstention_reason == "unresolved_conflict"


LEFTOVERS = {
    "food-safety.md": md(
        "Kitchen food safety policy",
        {
            "Leftovers": "Cooked leftovers are kept for at most 2 days. Cool them within 90 minutes, label them "
            "with a date sticker and store them on the top shelf of Fridge 3.",
        },
        id="food-safety",
        authority="authoritative",
        asserts={"leftovers_keep_days": 2},
    ),
    "kitchen-manual.md": md(
        "Cafe kitchen manual",
        {"Storing leftovers": "Leftovers may be kept for up to 3 days. Put them in the blue lidded tubs in Fridge 2."},
        id="kitchen-manual",
        authority="authoritative",
        asserts={"leftovers_keep_days": 3},
    ),
}


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Which shelf of Fridge 3 do the labelled leftovers go on?", "food-safety#leftovers"),
        ("How quickly do leftovers have to be cooled down?", "food-safety#leftovers"),
        ("What tubs do leftovers go in when they are put in Fridge 2?", "kitchen-manual#storing-leftovers"),
    ],
)
def test_another_fact_of_a_tied_section_is_answered_though_a_name_carries_a_contested_number(
    tmp_path: Path, question: str, answer: str
) -> None:
    """Fridge 3 and Fridge 2 are names, not the 2 and 3 days the two notes disagree on."""
    with workspace(tmp_path, LEFTOVERS, lanes=("identity", "lexical", "dense")) as ws:
        packet = ws.query(question, as_of=AS_OF)
    assert not packet.abstained and answer in {item.id for item in packet.evidence}
    assert any(c.resolution == "unresolved" for c in packet.conflicts)  # the tie is still listed beside the answer


@pytest.mark.parametrize(
    "question", ["How long can we keep leftovers in the fridge?", "Can leftovers stay in Fridge 2 for 3 days?"]
)
def test_the_contested_fact_still_abstains_when_a_tied_sentence_names_a_fridge(tmp_path: Path, question: str) -> None:
    with workspace(tmp_path, LEFTOVERS, lanes=("identity", "lexical", "dense")) as ws:
        packet = ws.query(question, as_of=AS_OF)
    assert packet.abstention_reason == "unresolved_conflict"


@pytest.mark.parametrize(
    ("question", "blocks"),
    [
        ("My son is 17 in June, can he sign up as a member?", True),  # a case: "is 17" is no name, so the
        # sentence holding "sign up" beside the contested age does not make it a question about signing up
        ("Do new members have to book an induction with a shop lead?", False),  # another sentence of the section
        ("Is my fob issued at the end of the induction?", False),
    ],
)
def test_a_question_stating_a_case_with_a_number_still_asks_about_the_tie(question: str, blocks: bool) -> None:
    first = (
        "terms#joining",
        "Members must be at least 16 years old. New members sign up at the front desk and book an induction "
        "with a shop lead.",
        16,
    )
    second = (
        "handbook#becoming-a-member",
        "You can join from age 18. Your door fob is issued at the end of the induction.",
        18,
    )
    assert _blocks_tied_pair("member_min_age_years", first, second, question) is blocks


@pytest.mark.parametrize(
    ("question", "blocks"),
    [
        ("Can I put the leftover cakes in Fridge 4?", False),  # the question names Fridge 4 itself
        ("How many days can a cake be displayed?", True),
        ("Can cakes be displayed for 4 days?", True),
    ],
)
def test_a_question_naming_the_numbered_thing_asks_about_its_sentence(question: str, blocks: bool) -> None:
    first = (
        "safety#cakes",
        "Home baked cakes are displayed for at most 3 days from baking. Cakes are never stored in Fridge 4, "
        "which is for dairy only.",
        3,
    )
    second = (
        "buffet#cakes",
        "Cakes sold in the buffet car are good for up to 4 days from baking. They sit on Shelf 3 of the counter.",
        4,
    )
    assert _blocks_tied_pair("cake_display_days", first, second, question) is blocks


LOG_DELIVERIES = (
    "woodshed#log-deliveries",
    "Deliveries go out on Thursday afternoons to addresses within 8 miles of the woodshed, with up to 10 bags "
    "on the pick-up per trip. Two volunteers go on every delivery.",
    8,
)
FREE_DELIVERY = ("firewood-sales#delivery", "Logs are delivered free within 10 miles of the woodshed.", 10)


@pytest.mark.parametrize(
    ("question", "blocks"),
    [
        ("How many bags fit on the pick-up for one delivery run?", False),  # "10 bags" is no 10 miles
        ("How many volunteers go out on a log delivery?", False),  # "two volunteers": no tied value
        ("How many miles out do you deliver logs for free?", True),
        ("How far away do you deliver logs for free?", True),
    ],
)
def test_a_count_of_another_thing_in_a_tied_section_is_not_about_the_tie(question: str, blocks: bool) -> None:
    assert _blocks_tied_pair("log_free_delivery_miles", LOG_DELIVERIES, FREE_DELIVERY, question) is blocks


def test_a_time_of_day_is_not_asked_of_a_tie_in_hours_held() -> None:
    first = (
        "cafe-manual#soup",
        "The soup goes into the soup kettle at 11:30 and can be served for up to 4 hours.",
        4,
    )
    second = ("food-safety#hot-holding", "Hot soup is thrown away 2 hours after it was heated.", 2)
    assert not _blocks_tied_pair("soup_hot_hold_hours", first, second, "What time does the soup go in the kettle?")
    assert _blocks_tied_pair("soup_hot_hold_hours", first, second, "How many hours can the soup be kept hot?")


def _blocks_tied_pair(key: str, first: tuple[str, str, int], second: tuple[str, str, int], question: str) -> bool:
    """Whether ``question`` is about the unresolved tie on ``key`` between two passages ``(id, text, value)``,
    confidently judged to answer it in that order."""
    eligible = [_passage(pid, text, **{key: value}) for pid, text, value in (first, second)]
    ranked = [first[0], second[0]]
    confident = Judgement(0.9, 0.35, {pid: 0.9 - i / 10 for i, pid in enumerate(ranked)}, 0.02)
    sides = tuple(
        Side(pid, f"{pid.split('#')[0]}.md", value, "authoritative", None) for pid, _, value in (first, second)
    )
    return _blocks_question(ConflictDraft(key, sides, "unresolved"), confident, eligible, question)


def test_a_word_only_in_a_heading_is_not_unknown_to_the_notes(tmp_path: Path) -> None:
    notes = {"api.md": md("Partner API", {"Decision": "Partners poll order status over gRPC."})}
    with workspace(tmp_path, notes) as ws:  # "api" is in the title only: the lexical index's heading field
        (_, signals), *_ = ws.signals("What about the partner API?")
        assert signals.unknown == 0.0
        (_, signals), *_ = ws.signals("What about the partner API protocol?")
        assert signals.unknown > 0.5  # "protocol" is in no note, and rarer than what every passage holds


def test_a_typed_check_also_reads_past_the_passages_an_identifier_named() -> None:
    """A question naming Fellpage ("how many people are available on Fellpage right now?") gets the Fellpage
    how-to's three sections first; the count is in the duty log behind them, so the check reads that far too."""
    ranked = [
        SimpleNamespace(id=pid) for pid in ("howto#a", "howto#b", "howto#c", "log#available", "faq#x", "x#y", "z#z")
    ]
    named = {"howto#a", "howto#b", "howto#c"}
    read = [c.id for c in stating_candidates(ranked, named)]  # type: ignore[arg-type]
    assert read == ["howto#a", "howto#b", "howto#c", "log#available"]
    assert [c.id for c in stating_candidates(ranked, set())] == ["howto#a", "howto#b", "howto#c"]  # type: ignore[arg-type]
    assert [c.id for c in stating_candidates(ranked, {"z#z"})] == ["howto#a", "howto#b", "howto#c"]  # type: ignore[arg-type]


def _ranked(*passage_ids: str) -> Judgement:
    """A confident judgement ranking ``passage_ids`` in that order."""
    return Judgement(0.9, 0.35, {pid: 0.9 - i / 10 for i, pid in enumerate(passage_ids)}, 0.02)


def _weeks_tie() -> ConflictDraft:
    sides = (
        Side("kit#buoyancy", "kit.md", 4, "authoritative", None),
        Side("hb#aids", "hb.md", 6, "authoritative", None),
    )
    return ConflictDraft("buoyancy_aid_check_weeks", sides, "unresolved")


BUOYANCY = [
    _passage("first-aid#kits", "The activity first aid kits are checked every month by the duty instructor."),
    _passage(
        "kit#buoyancy", "Buoyancy aids are checked every 4 weeks and after any capsize.", buoyancy_aid_check_weeks=4
    ),
    _passage("hb#aids", "Instructors check the buoyancy aids every 6 weeks.", buoyancy_aid_check_weeks=6),
]


@pytest.mark.parametrize(
    ("question", "blocks"),
    [
        ("How often are the activity first aid kits checked?", False),  # the first aid note answers it
        ("How often are the buoyancy aids checked?", True),  # the contested fact itself
        # a case with a number may ask the tie in passing: it is not passed over
        ("The first aid kits were checked 5 weeks ago. Are they due?", True),
    ],
)
def test_another_notes_answer_holding_the_questions_own_words_is_not_about_a_tie_behind_it(
    question: str, blocks: bool
) -> None:
    ranked = _ranked("first-aid#kits", "kit#buoyancy", "hb#aids")
    assert _blocks_question(_weeks_tie(), ranked, BUOYANCY, question) is blocks
