"""Answerability: "nothing applies" when nothing does, conflicts that block only what they are about,
the answering section first. Real Whoosh, real Chroma and the packaged model, on small note sets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from retrieval_kernel import Workspace
from retrieval_kernel.pipeline.answerability import (
    MODEL_FILE,
    PASSAGE_FEATURES,
    QUESTION_FEATURES,
    content_terms,
    load_models,
)

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


def test_the_fitted_models_are_complete_and_say_where_they_came_from() -> None:
    data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    sources = json.dumps(data["sources"])
    assert "policy-holdout4" not in sources and "workshop-probes2" not in sources  # never fitted on the holdouts
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


# ---------------------------------------------------------------- conflicts block only what they are about

DEPOTS = {
    "east.md": md(
        "East depot",
        {
            "Shipping": "Parcels from the east depot arrive in 3 days.",
            "Opening hours": "The east depot is open from 7 am to 3 pm on weekdays.",
        },
        id="east-depot",
        authority="reference",
        asserts={"shipping_days": 3},
    ),
    "west.md": md(
        "West depot",
        {
            "Shipping": "Parcels from the west depot arrive in 5 days.",
            "Returns address": "Returned parcels go to Unit 4, Harbour Road, not to the depot counter.",
        },
        id="west-depot",
        authority="reference",
        asserts={"shipping_days": 5},
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


# ---------------------------------------------------------------- the answering section first


def test_the_answering_section_beats_the_notes_introduction(workshop: Workspace) -> None:
    packet = workshop.query("What do we do if a delivery is going to be late?", as_of=AS_OF)
    assert packet.evidence[0].heading == "Replanning after a slip"
    intro = [e for e in packet.evidence if e.heading == "Delivery planning"]
    assert not intro or packet.evidence.index(intro[0]) > 0
