"""A passage saying the thing asked about is not decided yet does not answer it."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_answerability import md, workspace  # tests/ is on sys.path (rootdir-less test modules)

from retrieval_kernel import Workspace
from retrieval_kernel.pipeline.answer_type import asked_type
from retrieval_kernel.pipeline.answerability import content_terms
from retrieval_kernel.pipeline.undecided import says_undecided, undecided_sentences

AS_OF = "2027-03-01"


@pytest.mark.parametrize(
    ("text", "open_"),
    [
        ("No supplier for the new machines was chosen.", True),
        ("No size, cost or opening date was agreed.", True),
        ("The start date is to be confirmed.", True),
        ("The panto title is still open.", True),
        ("Whether to buy new buses was left open until the grant decision.", True),
        ("Opening night TBC.", True),
        ("The destination of the summer tour will be decided at the April meeting.", True),
        ("The dates of the November AGM will be set at the September meeting.", True),
        ("The date will be fixed later.", True),
        ("The intruder alarm will be set at 22:00 by the last keyholder.", False),  # a rule with a time
        ("Bookings will be confirmed by email within 2 days.", False),  # a rule about every booking
        ("A gate left open is reported to the section head at once.", False),  # an event, not a decision
        ("Swaps between nurses are never arranged privately.", False),  # a rule
        ("Legal has not confirmed that the extension applies to packs.", False),  # a claim in dispute
        ("The alarm is not set off by steam from the showers.", False),
        ("The committee agreed the new charges.", False),
    ],
)
def test_a_sentence_says_a_thing_is_not_decided(text: str, open_: bool) -> None:
    assert bool(undecided_sentences(text)) is open_


def _says(question: str, text: str) -> bool:
    return says_undecided(text, set(content_terms(question)), asked_type(question))


def test_the_open_sentence_holds_the_question_words_or_the_passage_states_no_value_of_the_asked_type() -> None:
    minutes = "The laundry machine lease ends in 2028. No supplier for the new machines was chosen."
    assert _says("Which company will supply the new laundry machines?", minutes)
    hall = "A new hall on the Quarry Road site was discussed. No size, cost or opening date was agreed."
    assert _says("How many rooms will the new Quarry Road hall have?", hall)  # a count asked, none stated
    stated = "The new hall will have 240 rooms. Its opening date was not agreed."
    assert not _says("How many rooms will the new hall have?", stated)
    assert not _says("When does the laundrette open?", "The laundrette opens at 07:00. The new prices were approved.")
    # a value stated beside every question word the open sentence holds: only the supplier is open, not the date
    posts = "The board confirmed that the charging posts go live on 1 September 2031. The supplier of the posts is "
    assert not _says("When do the electric charging posts go live?", posts + "still to be chosen.")
    unset = "The date the charging posts go live is to be confirmed."
    assert _says("When do the electric charging posts go live?", unset)
    docks = "Northgate gets three new stations next year. The number of docks at each is still to be decided."
    assert _says("How many docks will each of the new Northgate stations have?", docks)  # "three" counts stations


def _workspace(tmp_path: Path) -> Workspace:
    minutes = md(
        "Residences committee, February",
        {
            "Laundry machines": "The laundry machine lease ends in 2028. "
            "No supplier for the new laundry machines was chosen."
        },
    )
    services = md("Hall services", {"Laundrettes": "Each hall has a laundrette, open from 07:00 to 23:00 every day."})
    return workspace(tmp_path, {"committee-minutes.md": minutes, "hall-services.md": services})


def test_a_packet_abstains_when_the_best_passage_says_it_is_not_decided(tmp_path: Path) -> None:
    with _workspace(tmp_path) as ws:
        # in the notes' word ("supplier"): "Which company will supply ...?" is below the lexical-only threshold
        # since the eighteenth attempt's refit, so it abstains before the veto is read
        packet = ws.query("Which supplier will provide the new laundry machines?", as_of=AS_OF)
        answered = ws.query("What time does the laundrette open?", as_of=AS_OF)
    assert packet.abstained and packet.abstention_reason == "below_threshold"
    assert any("not decided yet" in warning for warning in packet.warnings)
    assert not answered.abstained


def test_the_open_sentence_may_hold_a_question_word_in_another_form() -> None:
    question = "Which company will take over the cleaning when the Carrowbeg contract ends?"
    minutes = (
        "The Carrowbeg Cleaning contract ends in March 2028. The committee discussed a tender, but no contractor "
        "was chosen."
    )
    assert says_undecided(minutes, set(content_terms(question)), asked_type(question))  # contract, contractor
    other = "The Carrowbeg Cleaning contract ends in March 2028. No date for the fire drill was agreed."
    assert not says_undecided(other, set(content_terms(question)), asked_type(question))


def test_new_says_which_one_not_what() -> None:
    minutes = (
        "Swim school agreed to start on 1 September 2037. A new slide was discussed but no supplier was chosen. "
        "The paddleboard hire start date was not agreed."
    )
    assert not _says("When does the new swim school start?", minutes)  # the slide is new, the start is another's
    assert _says("Which supplier will build the new slide?", minutes)


def test_a_date_to_be_set_at_the_next_meeting_is_not_decided() -> None:
    minutes = "The autumn bike jumble 2038 and the AGM in October 2038 will be dated at the next meeting."
    assert _says("When is this year's autumn bike jumble?", minutes)
