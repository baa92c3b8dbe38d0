"""The answer reader: a cross-encoder that reads the question with each leading passage, weighed with the
question model's confidence. The shipped int8 model itself, and the judge with stand-in readers."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.errors import LaneUnavailableError
from retrieval_kernel.pipeline.answerability import BLEND_FILE, MODEL_FILE, Blend, load_models
from retrieval_kernel.pipeline.reader import READER_FILE, AnswerReader, load_reader
from retrieval_kernel.store.records import StoredPassage

AS_OF = "2026-11-30"
NOTES = {
    "caretaker.md": "# Caretaker\n\n## Hall keys\n\nThe hall keys are kept by Maria Lopez, the caretaker; ring her on "
    "0161 496 0000 to collect them.\n\n## Opening\n\nThe hall opens at 9 on weekdays.\n",
    "heating.md": "# Heating\n\n## Servicing\n\nThe boiler was last serviced in March by a Gas Safe engineer. "
    "The next service is booked for September.\n",
}


@pytest.fixture(scope="module")
def hall(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("reader-hall")
    for name, text in NOTES.items():
        (root / "notes").mkdir(exist_ok=True)
        (root / "notes" / name).write_text(text, encoding="utf-8")
    with Workspace(root / "notes", root / "store", lanes=("identity", "lexical", "dense")) as ws:
        ws.index()
        yield ws


# ---------------------------------------------------------------- the shipped reader


def test_the_shipped_reader_scores_the_passage_that_states_the_answer_above_one_that_does_not() -> None:
    reader = load_reader()
    question = "Who keeps the keys to the hall?"
    states, talks = reader.probabilities(
        question,
        [
            "Hall keys: The hall keys are kept by Maria Lopez, the caretaker.",
            "Hall keys: The locks on the hall doors were changed last year after a break-in.",
        ],
    )
    assert 0.0 <= talks < states <= 1.0  # (0.03 against 0.02: this plain style is far from its training notes)


def test_a_score_is_the_same_asked_again_and_asked_with_other_passages() -> None:
    question = "When is the boiler next serviced?"
    text = "Servicing: The next service is booked for September."
    first = AnswerReader().probabilities(question, [text])
    beside = AnswerReader().probabilities(question, ["Opening: The hall opens at 9.", text])
    assert first == beside[1:]


def test_a_missing_or_corrupt_model_file_makes_the_reader_unavailable_with_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LaneUnavailableError, match="is missing"):
        AnswerReader(tmp_path / "nowhere.onnx")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(LaneUnavailableError, match="could not load"):
        AnswerReader(broken)


def test_the_shipped_reader_and_its_blend_say_what_they_were_fitted_on() -> None:
    assert READER_FILE.stat().st_size <= 25_000_000  # shipped small
    data = json.loads(BLEND_FILE.read_text(encoding="utf-8"))
    assert data["reader"] == READER_FILE.name
    for folder in data["sources"]:  # weighed on suites already scored once, never on one still frozen
        assert any((Path(__file__).resolve().parent.parent / folder / "receipts").glob("*.json")), folder
    blend = load_models().reader
    assert blend is not None and blend.reader_weight > 0 and 0 < blend.threshold < 1


# ---------------------------------------------------------------- the blend and the judge


def test_the_blend_rises_with_either_opinion() -> None:
    blend = Blend(judge_weight=1.0, reader_weight=0.8, bias=-0.2, threshold=0.5)
    assert blend.confidence(0.3, 0.9) > blend.confidence(0.3, 0.1)
    assert blend.confidence(0.9, 0.3) > blend.confidence(0.1, 0.3)
    assert blend.confidence(0.0, 1.0) == pytest.approx(blend.confidence(1e-4, 1 - 1e-4))  # log-odds clipped
    assert Blend.from_dict(vars(blend)) == blend


def test_without_a_blend_file_the_models_have_no_reader(tmp_path: Path) -> None:
    assert load_models(MODEL_FILE, tmp_path / "absent.json").reader is None
    written = tmp_path / "blend.json"
    written.write_text(json.dumps({"blend": vars(Blend(1.0, 2.0, -1.0, 0.4))}), encoding="utf-8")
    assert load_models(MODEL_FILE, written).reader == Blend(1.0, 2.0, -1.0, 0.4)


def _with_reader(ws: Workspace, scores: float, blend: Blend) -> None:
    def read(query: str, passages: Sequence[StoredPassage]) -> list[float]:
        return [scores] * len(passages)

    ws.judge.reader = read
    ws.judge._models = replace(load_models(), reader=blend)


def test_the_readers_opinion_decides_when_the_blend_weighs_it_alone(hall: Workspace) -> None:
    question = "Who keeps the keys to the hall?"
    alone = Blend(judge_weight=0.0, reader_weight=1.0, bias=0.0, threshold=0.5)
    try:
        _with_reader(hall, 0.02, alone)
        doubted = hall.query(question, as_of=AS_OF)
        assert doubted.abstained and doubted.abstention_reason == "below_threshold"
        assert doubted.confidence == pytest.approx(0.02, abs=1e-3)
        _with_reader(hall, 0.98, alone)
        trusted = hall.query(question, as_of=AS_OF)
        assert not trusted.abstained and trusted.evidence[0].path == "caretaker.md"
    finally:
        hall.judge.reader, hall.judge._models = hall._read, None


def test_the_judgement_keeps_both_opinions_and_says_them_when_it_abstains(hall: Workspace) -> None:
    ranked = hall.retrieve("Who services the boiler in the hall?")
    runs = hall._caller_runs("Who services the boiler in the hall?", None, None)[0]
    try:
        _with_reader(hall, 0.01, Blend(judge_weight=1.0, reader_weight=1.0, bias=0.0, threshold=0.5))
        judged = hall.judge.judge("Who services the boiler in the hall?", ranked, runs)
        assert judged.read == 0.01 and judged.judged_confidence is not None
        assert "the answer reader at most 0.01" in judged.why_not()
    finally:
        hall.judge.reader, hall.judge._models = hall._read, None


def test_an_unloadable_reader_leaves_the_judge_alone_and_the_packet_says_so(hall: Workspace) -> None:
    try:
        hall.judge._models = replace(load_models(), reader=Blend(1.0, 1.0, 0.0, 0.5))
        hall.reader_error = "the answer reader's model x.onnx is missing"
        packet = hall.query("Who keeps the keys to the hall?", as_of=AS_OF)
        assert any("decided without the answer reader" in warning for warning in packet.warnings)
        assert packet.confidence == pytest.approx(hall.judge.judge(
            "Who keeps the keys to the hall?", hall.retrieve("Who keeps the keys to the hall?"),
            hall._caller_runs("Who keeps the keys to the hall?", None, None)[0],
        ).confidence)  # fmt: skip
    finally:
        hall.reader_error, hall.judge._models = None, None


def test_the_shipped_reader_runs_inside_a_hybrid_query(hall: Workspace) -> None:
    ranked = hall.retrieve("Who keeps the keys to the hall?")
    runs = hall._caller_runs("Who keeps the keys to the hall?", None, None)[0]
    judged = hall.judge.judge("Who keeps the keys to the hall?", ranked, runs)
    assert judged.read is not None
    assert judged.judged_confidence is not None
    assert judged.confidence == pytest.approx(load_models().reader.confidence(judged.judged_confidence, judged.read),
                                              abs=1e-4)  # fmt: skip
