"""A question asking whether a thing exists is answered only by a passage that names the thing."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_answerability import AS_OF, md, workspace  # tests/ is on sys.path (rootdir-less test modules)

from retrieval_kernel.pipeline.existence import asked_thing, names_thing


@pytest.mark.parametrize(
    ("question", "thing"),
    [
        ("Is there a lift up to Screen 3?", {"lift"}),
        ("Do you sell hot dogs at the bar?", {"hot", "dog"}),
        ("Does the Textiles Room have an overlocker?", {"overlock"}),
        ("Is there a staff travel concession for crew family members?", {"staff", "travel", "concess"}),
        ("Is there anywhere to park at Pennock Halt?", set()),  # a place, not a thing
        ("Is there a charge for boaters to sign up for texts?", set()),  # "free" answers it: not looked for
        ("Is there a weight limit for an archive box?", set()),  # "no box over 10 kilograms" answers it
        ("Does the trial run have to include a lock?", set()),  # "have to": a rule, not a thing it has
        ("What time does the bar open?", set()),
    ],
)
def test_the_thing_a_question_asks_the_existence_of(question: str, thing: set[str]) -> None:
    assert asked_thing(question) == thing


def test_a_thing_is_named_when_one_passage_holds_all_its_words() -> None:
    assert names_thing([{"hot", "drink"}, {"dog", "lead"}], {"hot", "dog"}) is False  # not in one passage
    assert names_thing([{"hot", "dog", "stand"}], {"hot", "dog"})
    assert names_thing([{"overlock", "machin"}], {"overlock"})


CINEMA = {
    "facts.md": md(
        "Cinema facts",
        {
            "Screens": "Screen 1 has 220 seats on the ground floor. Screen 3 has 40 seats on the second floor.",
            "Hearing loops": "Screens 1 and 2 have hearing loops; ask at the box office for a receiver.",
        },
        id="facts",
        authority="authoritative",
    ),
    "bar.md": md(
        "Bar manual",
        {"What we sell": "The bar sells wine, beer, soft drinks, popcorn and ice cream."},
        id="bar",
        authority="authoritative",
    ),
}


def test_a_packet_abstains_when_no_passage_names_the_thing_asked_about(tmp_path: Path) -> None:
    with workspace(tmp_path, CINEMA, lanes=("identity", "lexical", "dense")) as ws:
        lift = ws.query("Is there a lift up to Screen 3?", as_of=AS_OF)
        loop = ws.query("Is there a hearing loop in Screen 1?", as_of=AS_OF)
    assert lift.abstained and lift.abstention_reason == "below_threshold", lift.to_json()
    assert any("asks whether there is something" in warning for warning in lift.warnings), lift.warnings
    assert not loop.abstained and loop.evidence[0].id == "facts#hearing-loops"
