"""Answer first, persist after: the query that finds an edit answers from the record store and the in-memory
search forms; the Whoosh and Chroma writes wait for an idle moment (see store/refresh.py)."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_kernel.output.packet import LaneReport, Packet
from retrieval_kernel.pipeline import upkeep
from retrieval_kernel.pipeline.workspace import Workspace
from retrieval_kernel.store.refresh import IdleRunner

AS_OF = "2026-10-15"
LANES = ("identity", "lexical", "dense")
QUESTIONS = ("Who may approve a production deployment?", "pager rota after hours", "How is ownership decided?")
EDIT = "\n## Pager\n\nThe pager rota approves production deployments after hours.\n"


def lane(packet: Packet, name: str) -> LaneReport:
    return next(report for report in packet.lanes if report.name == name)


def behind(ws: Workspace) -> dict[str, int]:
    """How many change-log entries each durable projection lacks."""
    newest = ws.records.high_water()
    states = {name: ws.records.projection(name) for name in ("lexical", "dense")}
    return {name: newest - state.high_water for name, state in states.items() if state is not None}


@pytest.fixture
def edited(tmp_path: Path, workshop_notes: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Workspace, Path]]:
    """An indexed, warm workspace and the note just edited on disk (its writer never idles on its own)."""
    monkeypatch.setattr(upkeep, "DEFER_IDLE", 600.0)
    notes = tmp_path / "notes"
    shutil.copytree(workshop_notes, notes)
    with Workspace(notes, tmp_path / "store", lanes=LANES) as ws:
        ws.index()
        ws.query(QUESTIONS[0], as_of=AS_OF)  # the in-memory forms are loaded
        target = sorted(notes.glob("*.md"))[0]
        target.write_text(target.read_text(encoding="utf-8") + EDIT, encoding="utf-8")
        yield ws, target


def test_the_query_that_finds_an_edit_answers_first_and_says_what_is_behind(edited) -> None:
    ws, target = edited
    packet = ws.query(QUESTIONS[1], as_of=AS_OF)
    assert behind(ws) == {"lexical": 1, "dense": 1}  # nothing written to Whoosh or Chroma yet
    assert ws.writes_pending
    lexical, dense = lane(packet, "lexical"), lane(packet, "dense")
    assert (lexical.status, lexical.lag) == ("ok", 0)  # the compiled form holds the edit
    assert (dense.status, dense.lag) == ("stale", 1)  # its new passage is not embedded yet, and it says so
    assert dense.reason is not None and target.name in dense.reason
    assert packet.projection == "stale"
    assert any("not written to the lexical and dense projections" in text for text in packet.warnings)
    pager = f"{ws.records.documents()[target.name].module}#pager"
    assert pager in [hit.passage_id for hit in ws.lexical.search(QUESTIONS[1], 5)]  # the in-memory form has it
    assert pager not in [hit.passage_id for hit in ws.lexical.search_with_whoosh(QUESTIONS[1], 5)]  # Whoosh not yet
    for item in packet.evidence:  # every citation is the note's current text
        assert item.excerpt.strip() in (ws.notes_dir / item.path).read_text(encoding="utf-8")


def test_after_the_deferred_writes_packets_equal_a_fresh_workspaces(edited) -> None:
    ws, target = edited
    ws.query(QUESTIONS[1], as_of=AS_OF)
    ws.flush_writes()
    assert behind(ws) == {"lexical": 0, "dense": 0}
    kept = [ws.query(question, as_of=AS_OF) for question in QUESTIONS]
    assert all(packet.projection == "consistent" and not packet.warnings for packet in kept)
    with Workspace(ws.notes_dir, ws.store_dir, lanes=LANES) as fresh:
        assert [fresh.query(question, as_of=AS_OF).to_json() for question in QUESTIONS] == [
            packet.to_json() for packet in kept
        ]
    with Workspace(ws.notes_dir, ws.store_dir, lanes=LANES, defer_writes=False) as synchronous:
        target.write_text(target.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
        written = [synchronous.query(question, as_of=AS_OF).to_json() for question in QUESTIONS]
        assert behind(synchronous) == {"lexical": 0, "dense": 0}  # today's path: written before answering
    ws.query(QUESTIONS[0], as_of=AS_OF)  # the deferring workspace finds the same edit in the store
    ws.flush_writes()
    assert [ws.query(question, as_of=AS_OF).to_json() for question in QUESTIONS] == written


def test_the_writes_run_by_themselves_once_the_workspace_is_idle(edited, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, _ = edited
    monkeypatch.setattr(upkeep, "DEFER_IDLE", 0.2)
    ws._writer = None  # a writer with the short idle time
    ws.query(QUESTIONS[1], as_of=AS_OF)
    deadline = time.monotonic() + 60
    while ws.writes_pending and time.monotonic() < deadline:
        time.sleep(0.05)
    assert behind(ws) == {"lexical": 0, "dense": 0}
    dense = ws.dense
    reads: list[str] = []
    for name in ("_all_vectors", "_load_exact"):  # the writer published elsewhere: nothing is read again
        original = getattr(dense, name)
        counted = lambda *args, name=name, original=original: reads.append(name) or original(*args)  # noqa: E731
        monkeypatch.setattr(dense, name, counted)
    packet = ws.query(QUESTIONS[1], as_of=AS_OF)
    assert packet.projection == "consistent" and lane(packet, "dense").lag == 0 and not packet.warnings
    assert ws.lexical._compiled is not None and not reads
    target = sorted(ws.notes_dir.glob("*.md"))[1]
    target.write_text(target.read_text(encoding="utf-8") + "\n## Rota\n\nThe rota changes weekly.\n", encoding="utf-8")
    assert ws.query(QUESTIONS[1], as_of=AS_OF).projection == "stale" and not reads  # the next edit, in place


@pytest.mark.parametrize("explicit", ["index", "refresh", "close"])
def test_index_refresh_and_close_leave_every_projection_written(edited, explicit: str) -> None:
    ws, _ = edited
    ws.query(QUESTIONS[1], as_of=AS_OF)
    assert behind(ws) == {"lexical": 1, "dense": 1}
    if explicit == "index":
        ws.index()
    elif explicit == "refresh":
        assert ws.refresh(wait=True).state == "consistent"
    else:
        ws.close()
        ws.records = type(ws.records)(ws.store_dir)  # reopened to read what was left
    assert behind(ws) == {"lexical": 0, "dense": 0}


def test_an_idle_runner_waits_for_quiet_and_runs_once() -> None:
    ran: list[float] = []
    done = threading.Event()
    runner = IdleRunner(lambda: ran.append(time.monotonic()) or done.set(), idle=0.2)
    started = time.monotonic()
    runner.schedule()
    for _ in range(4):  # queries keep coming: it waits
        time.sleep(0.1)
        runner.postpone()
    assert not ran
    assert done.wait(5)
    assert len(ran) == 1 and ran[0] - started >= 0.6
    busy = IdleRunner(lambda: ran.append(time.monotonic()), idle=0.2, at_most=0.5)
    started = time.monotonic()
    busy.schedule()
    while len(ran) == 1 and time.monotonic() - started < 5:  # a query every 0.1 s: it runs anyway, once due
        busy.postpone()
        time.sleep(0.1)
    busy.stop()
    assert len(ran) == 2 and 0.5 <= ran[1] - started < 1.5
    runner.schedule()
    runner.cancel()  # cancelled before it was due: never runs
    time.sleep(0.4)
    runner.stop()
    assert len(ran) == 2 and runner.last_error is None


def test_context_with_refresh_answers_after_every_projection_is_written(
    tmp_path: Path, workshop_notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.getipython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    monkeypatch.setattr(upkeep, "DEFER_IDLE", 600.0)
    notes = tmp_path / "notes"
    shutil.copytree(workshop_notes, notes)
    ip = start_ipython() or get_ipython()
    monkeypatch.chdir(tmp_path)
    ip.run_line_magic("load_ext", "retrieval_kernel")
    options = f"--notes {notes} --store {tmp_path / 'store'} --lanes identity,lexical --as-of {AS_OF}"
    try:
        ip.run_line_magic("context", f"{options} {QUESTIONS[0]}")
        target = sorted(notes.glob("*.md"))[0]
        target.write_text(target.read_text(encoding="utf-8") + EDIT, encoding="utf-8")
        deferred = ip.run_line_magic("context", f"{options} {QUESTIONS[1]}")
        assert any("not written" in text for text in deferred.warnings)  # the default: answered first
        target.write_text(target.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
        packet = ip.run_line_magic("context", f"{options} --refresh {QUESTIONS[1]}")
        assert packet.projection == "consistent" and not packet.warnings  # written before it answered
        with Workspace(notes, tmp_path / "store", refresh="off") as observer:
            newest = observer.records.high_water()
            assert observer.records.projection("lexical").high_water == newest  # type: ignore[union-attr]
    finally:
        from retrieval_kernel.magics import ContextMagics

        for magics in [c for c in ip.configurables if isinstance(c, ContextMagics)]:
            for workspace in magics._workspaces.values():
                workspace.close()
            magics._workspaces.clear()


def test_many_changed_notes_are_written_before_the_answer(edited, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, _ = edited
    monkeypatch.setattr(upkeep, "DEFER_NOTES", 1)
    second = sorted(ws.notes_dir.glob("*.md"))[1]
    second.write_text(second.read_text(encoding="utf-8") + "\n## Rota\n\nThe rota changes weekly.\n", encoding="utf-8")
    packet = ws.query(QUESTIONS[1], as_of=AS_OF)  # two notes changed: past the limit, written as before
    assert behind(ws) == {"lexical": 0, "dense": 0} and not ws.writes_pending
    assert packet.projection == "consistent" and not packet.warnings


def test_the_writer_stops_between_its_steps_when_a_query_asks(edited) -> None:
    ws, _ = edited
    ws.query(QUESTIONS[1], as_of=AS_OF)
    ws.write_projections(stop=lambda: True)  # a query with an edit of its own is waiting: nothing
    assert behind(ws) == {"lexical": 1, "dense": 1}
    asked: list[int] = []
    ws.write_projections(stop=lambda: asked.append(1) or len(asked) > 1)  # asked again after Whoosh's step
    assert behind(ws) == {"lexical": 0, "dense": 1}
    ws.write_projections(stop=lambda: False)
    assert behind(ws) == {"lexical": 0, "dense": 0}
    packet = ws.query(QUESTIONS[1], as_of=AS_OF)
    assert packet.projection == "consistent" and not packet.warnings


def test_status_says_what_waits_to_be_written(edited) -> None:
    from retrieval_kernel.store.refresh import status_text

    ws, _ = edited
    ws.query(QUESTIONS[1], as_of=AS_OF)
    status = ws.status()
    assert status["deferred_writes"] == 1 and [p["lag"] for p in status["projections"]] == [1, 1]
    assert "1 change(s) answered from memory, written to disk once idle" in status_text(status)
    ws.flush_writes()
    assert ws.status()["deferred_writes"] == 0


def test_a_build_leaves_no_note_waiting_for_vectors(edited) -> None:
    """A dense build embeds every passage, and keeps them in memory: no note is named as waiting for its
    vectors afterwards, and the lane answers at the change log's newest entry."""
    ws, target = edited
    ws.query(QUESTIONS[1], as_of=AS_OF)
    projection = ws.dense_lane.projection
    assert target.name in " ".join(projection.lagging())  # answered first: not embedded yet
    ws.dense_lane.rebuild()
    state = ws.records.projection("dense")
    assert state is not None
    assert projection.lagging() == {}
    assert projection.answering_high_water(state) == ws.records.high_water()
