"""Answerability reads each passage's terms from the lexical index's compiled form instead of
analysing its text per query: the features must stay exactly what the analysis gave (the models
are fitted on them). Real Whoosh on the workshop and policy-holdout4 fixtures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.corpus.notes import note_from_bytes
from retrieval_kernel.pipeline import answerability
from retrieval_kernel.pipeline.answerability import Judge, Signals, content_terms
from retrieval_kernel.store.records import utc_now

REPO_ROOT = Path(__file__).resolve().parent.parent
SUITES = ("workshop", "policy-holdout4")


@pytest.fixture(scope="module", params=SUITES)
def suite(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Workspace, list[str]]]:
    folder = REPO_ROOT / "fixtures" / request.param
    lines = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines if line.strip()]
    with Workspace(folder / "notes", tmp_path_factory.mktemp(request.param), lanes=("identity", "lexical")) as ws:
        ws.index()
        yield ws, questions


def _analysed(judge: Judge, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``judge`` take every word set from the analysis of the passage's text (the old path)."""
    monkeypatch.setattr(judge.lexical, "held_terms", lambda terms, ids: None)


def _signals(judge: Judge, query: str, passages: list) -> dict[str, Signals]:
    return judge._signals(query, passages, {}, {}, [], None)


def test_the_compiled_terms_are_what_analysing_each_passage_gives(suite: tuple[Workspace, list[str]]) -> None:
    ws, questions = suite
    passages = list(ws.passages().values())
    ids = [stored.passage.id for stored in passages]
    for question in questions:
        terms = content_terms(question)
        held = ws.judge.lexical.held_terms(terms, ids)
        assert held is not None  # in step with the record store: the compiled path is taken
        words = ws.judge._word_sets(passages, terms)
        for stored, found, offered in zip(passages, held, words, strict=True):
            analysed = answerability._words(stored)
            assert {t for t in terms if t in offered} == {t for t in terms if t in analysed}, stored.passage.id
            assert found <= analysed


def test_every_feature_is_identical_to_the_analysed_path(
    suite: tuple[Workspace, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, questions = suite
    passages = list(ws.passages().values())
    compiled = {question: _signals(ws.judge, question, passages) for question in questions}
    _analysed(ws.judge, monkeypatch)
    for question in questions:
        assert compiled[question] == _signals(ws.judge, question, passages), question


def test_every_packet_is_identical_to_the_analysed_path(
    suite: tuple[Workspace, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, questions = suite
    packets = [ws.query(question, refresh=False).to_dict() for question in questions]
    _analysed(ws.judge, monkeypatch)
    for question, packet in zip(questions, packets, strict=True):
        again = ws.query(question, refresh=False).to_dict()
        assert packet == again, question


def test_a_projection_behind_the_record_store_falls_back_to_analysis(make_notes, tmp_path: Path) -> None:
    notes = make_notes({"a.md": "# Alpha\n\n## Backups\n\nWe keep nightly backups for thirty days.\n"})
    with Workspace(notes, tmp_path / "store", lanes=("identity", "lexical")) as ws:
        ws.index()
        ids = list(ws.passages())
        assert ws.judge.lexical.held_terms(["backup"], ids) is not None
        assert ws.judge.lexical.held_terms(["backup"], ["no-such-passage"]) is None
        raw = b"# Alpha\n\n## Backups\n\nWe keep weekly copies.\n"
        ws.records.upsert(note_from_bytes("a.md", raw), len(raw), 1, utc_now())  # the projection lags behind
        assert ws.judge.lexical.held_terms(["backup"], list(ws.passages())) is None
