"""A passage that asks the question (a chat line, an open point) does not answer it."""

from __future__ import annotations

from pathlib import Path

from test_answerability import md, workspace  # tests/ is on sys.path (rootdir-less test modules)

from retrieval_kernel.pipeline.echo import only_asks

AS_OF = "2034-10-20"
CHAT = (
    "Rita Doyle (19:02): Who has the key for the scout hall for the jumble sale? I thought it was left at the shop.\n\n"
    "Sean Farrell (19:15): Is the quiz night on the 2nd or the 9th of December?"
)
QUESTION = "Who has the key to the scout hall for the jumble sale?"


def _idf(*terms: str) -> dict[str, float]:
    return dict.fromkeys(terms, 1.0)


def test_a_question_held_only_by_a_question_is_asked_not_answered() -> None:
    weights = _idf("key", "scout", "hall", "jumbl")
    assert only_asks(QUESTION, weights, [CHAT])
    # a statement holding the question's words answers, even beside the asking line
    assert not only_asks(
        QUESTION,
        weights,
        [CHAT + "\n\nAoife Ryan (19:20): The key for the scout hall for the jumble sale is with Tom."],
    )
    # a statement holding most of them (all but the key) is not an answer either
    assert only_asks(QUESTION, weights, [CHAT, "The jumble sale is in the scout hall in December."])
    assert not only_asks(QUESTION, weights, ["The key for the scout hall is in the key safe."])  # no question at all
    assert not only_asks(QUESTION, {}, [CHAT])
    # a FAQ asks and answers: a question in a heading or on a "Q:" line, or one its next sentence answers
    faq = "## Who has the key to the scout hall for the jumble sale?\n\nTom does; ring him the day before."
    assert not only_asks(QUESTION, weights, [faq])
    assert not only_asks(QUESTION, weights, ["Q: Who has the key for the scout hall for the jumble sale?\nA: Tom."])
    inline = "Who has the key for the scout hall for the jumble sale? The key is with Tom."
    assert not only_asks(QUESTION, weights, [inline])
    # a case told first and then asked is often told again in a chat that asks it too: not an echo
    assert not only_asks("The scout hall is booked for the jumble sale. " + QUESTION, weights, [CHAT])


def test_two_questions_in_a_row_only_ask_and_can_be_echoed() -> None:
    weights = _idf("key", "scout", "hall", "jumbl")
    assert only_asks(QUESTION + " Where is it now?", weights, [CHAT])
    assert not only_asks("I need it tonight. " + QUESTION, weights, [CHAT])  # a case told first


def test_a_packet_abstains_when_the_notes_only_ask_the_question(tmp_path: Path) -> None:
    chat = md("Volunteers chat", {"Messages": CHAT})
    fair = md(
        "Jumble sale",
        {"Where and when": "The jumble sale is held in the scout hall on the first Saturday of December."},
    )
    with workspace(tmp_path, {"chat.md": chat, "jumble-sale.md": fair}) as ws:
        asked = ws.query(QUESTION, as_of=AS_OF)
        answered = ws.query("Where is the jumble sale held?", as_of=AS_OF)
    assert asked.abstained, asked.to_json()
    assert asked.abstention_reason == "below_threshold"
    assert any("ask this question and none answers it" in warning for warning in asked.warnings), asked.warnings
    assert not answered.abstained
