"""Refresh modes, projection states and lag, versioned projections, status, rebuild, and their adapters."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_kernel import Workspace
from retrieval_kernel.cli import main
from retrieval_kernel.errors import CorruptStoreError, InputError
from retrieval_kernel.evaluation.recovery import PROBES, fresh_snapshot, snapshot, write_corpus
from retrieval_kernel.store.indexing import refresh_lock
from retrieval_kernel.store.records import DATABASE_NAME
from retrieval_kernel.store.refresh import Debounce, RefreshPolicy, Watcher, status_text

AS_OF = "2026-11-30"
LANES = ("identity", "lexical")
OLD = "# Pumps\n\n## Impeller\n\nThe impeller balance is inspected quarterly.\n"
NEW = "# Pumps\n\n## Impeller\n\nThe impeller balance is inspected monthly since the recall.\n"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    write_corpus(notes, notes_count=8)
    (notes / "pumps.md").write_text(OLD, encoding="utf-8")
    return notes


def lane(packet, name):
    return next(report for report in packet.lanes if report.name == name)


def first_excerpt(packet) -> str:
    return packet.evidence[0].excerpt if packet.evidence else ""


# ---------------------------------------------------------------- policy values


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "sometimes"}, "refresh mode"),
        ({"debounce": -1}, "debounce"),
        ({"timeout": 0}, "timeout"),
        ({"interval": 0}, "interval"),
    ],
)
def test_bad_refresh_settings_are_specific_errors(kwargs, message) -> None:
    with pytest.raises(InputError, match=message):
        RefreshPolicy.checked(**kwargs)


def test_debounce_waits_until_no_note_has_been_saved_for_the_window() -> None:
    now = [100.0]
    debounce = Debounce(2.0, clock=lambda: now[0])
    first, second = (("a.md", 10, 1),), (("a.md", 12, 2),)
    assert not debounce.waiting(())
    assert debounce.waiting(first)
    now[0] += 1.9
    assert debounce.waiting(first)
    assert debounce.waiting(second)  # saved again: the window restarts
    now[0] += 1.9
    assert debounce.waiting(second)
    now[0] += 0.2
    assert not debounce.waiting(second)
    assert not debounce.waiting(())  # a clean check resets the window
    assert debounce.waiting(first)


# ---------------------------------------------------------------- modes and states


def test_on_query_with_debounce_answers_stale_from_the_last_good_index_then_catches_up(
    corpus: Path, tmp_path: Path
) -> None:
    now = [0.0]
    with Workspace(corpus, tmp_path / "store", lanes=LANES, debounce=5.0) as ws:
        ws._debounce.clock = lambda: now[0]
        ws.index()
        (corpus / "pumps.md").write_text(NEW, encoding="utf-8")
        packet = ws.query("impeller balance inspected", as_of=AS_OF)
        assert packet.projection == "stale"
        assert lane(packet, "lexical").status == "stale"
        assert lane(packet, "lexical").lag == 1  # one note changed on disk, not yet logged
        assert "quarterly" in first_excerpt(packet)  # the last good revision answers
        now[0] += 4.0
        assert ws.query("impeller balance inspected", as_of=AS_OF).projection == "stale"
        now[0] += 1.5
        packet = ws.query("impeller balance inspected", as_of=AS_OF)
        assert packet.projection == "consistent"
        assert (lane(packet, "lexical").status, lane(packet, "lexical").lag) == ("ok", 0)
        assert "monthly" in first_excerpt(packet)


def test_on_query_without_changes_does_not_take_the_lock_or_sync(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    with Workspace(corpus, tmp_path / "store", lanes=LANES) as ws:
        ws.index()
        monkeypatch.setattr(
            Workspace, "index", lambda self, wait=True, timeout=None: pytest.fail("refreshed with nothing to do")
        )
        assert ws.query("pump seal", as_of=AS_OF).projection == "consistent"


def test_off_mode_never_refreshes_but_says_stale(corpus: Path, tmp_path: Path) -> None:
    with Workspace(corpus, tmp_path / "store", lanes=LANES, refresh="off") as ws:
        ws.index()
        (corpus / "pumps.md").write_text(NEW, encoding="utf-8")
        (corpus / "ledger.md").unlink()
        for _ in range(2):
            packet = ws.query("impeller balance inspected", as_of=AS_OF)
            assert packet.projection == "stale"
            assert lane(packet, "lexical").lag == 2
            assert "quarterly" in first_excerpt(packet)
        assert ws.refresh(wait=True).state == "consistent"  # an explicit refresh still works
        assert "monthly" in first_excerpt(ws.query("impeller balance inspected", as_of=AS_OF))


def test_a_refresh_published_elsewhere_makes_queries_answer_refreshing(corpus: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Workspace(corpus, store, lanes=LANES) as ws:
        ws.index()
        (corpus / "pumps.md").write_text(NEW, encoding="utf-8")
        with refresh_lock(store):  # another publisher (another file description: as another process would)
            packet = ws.query("impeller balance inspected", as_of=AS_OF)
            assert packet.projection == "refreshing"
            assert any("being published" in warning for warning in packet.warnings)
            assert lane(packet, "lexical").lag == 1
            assert "quarterly" in first_excerpt(packet)
            assert ws.status()["state"] == "refreshing"
        packet = ws.query("impeller balance inspected", as_of=AS_OF)
        assert packet.projection == "consistent"
        assert "monthly" in first_excerpt(packet)


def test_watch_mode_refreshes_in_the_background_and_stops(corpus: Path, tmp_path: Path) -> None:
    with Workspace(corpus, tmp_path / "store", lanes=LANES, refresh="watch", watch_interval=0.1) as ws:
        ws.index()
        assert ws.watching
        watcher = ws._watcher
        assert watcher is not None
        (corpus / "pumps.md").write_text(NEW, encoding="utf-8")
        deadline = time.monotonic() + 20
        while ws.observe().state != "consistent" and time.monotonic() < deadline:
            time.sleep(0.05)
        packet = ws.query("impeller balance inspected", as_of=AS_OF)
        assert packet.projection == "consistent"
        assert "monthly" in first_excerpt(packet)
        assert ws.status()["last_refresh"]["updated"] == 1
    assert not watcher.running  # closing the workspace stopped the thread


def test_watcher_sleeps_between_polls_and_stops_at_once() -> None:
    calls: list[float] = []
    watcher = Watcher(lambda: calls.append(time.monotonic()), interval=0.2).start()
    time.sleep(1.0)
    started = time.monotonic()
    watcher.stop()
    assert time.monotonic() - started < 0.5  # woken by the stop event, not after a full sleep
    assert not watcher.running
    assert 3 <= len(calls) <= 7  # about one poll per interval: no busy loop


def test_watcher_keeps_going_after_a_failing_poll() -> None:
    calls = []

    def poll() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("notes folder unmounted")

    watcher = Watcher(poll, interval=0.05).start()
    time.sleep(0.4)
    watcher.stop()
    assert len(calls) >= 3
    assert watcher.last_error is None  # cleared by the next good poll


def test_two_workspaces_refreshing_at_once_in_threads_leave_one_consistent_store(corpus: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Workspace(corpus, store, lanes=LANES) as ws:
        ws.index()
    (corpus / "pumps.md").write_text(NEW, encoding="utf-8")
    states: list[str] = []

    def refresh() -> None:
        with Workspace(corpus, store, lanes=LANES, refresh="off") as mine:
            states.append(mine.refresh().state)

    threads = [threading.Thread(target=refresh) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert "consistent" in states
    assert set(states) <= {"consistent", "refreshing"}
    with Workspace(corpus, store, lanes=LANES, refresh="off") as ws:
        assert ws.observe().state == "consistent"
        assert snapshot(ws) == fresh_snapshot(corpus, tmp_path / "fresh")


# ---------------------------------------------------------------- clocks


def test_reindexing_never_changes_source_time_or_age(corpus: Path, tmp_path: Path) -> None:
    (corpus / "pumps.md").write_text("---\nobserved: 2026-10-01\n---\n" + OLD, encoding="utf-8")
    ws = Workspace(corpus, tmp_path / "store", lanes=LANES, index_clock=lambda: "2026-10-15T09:00:00Z")
    with ws:
        ws.index()
        before = ws.query("impeller balance inspected", as_of=AS_OF).evidence[0]
        assert (before.observed_at, before.indexed_at) == ("2026-10-01", "2026-10-15T09:00:00Z")
        ws.index_clock = lambda: "2026-11-20T09:00:00Z"
        (corpus / "ledger.md").write_text("# Ledger\n\nRounded half to even.\n", encoding="utf-8")
        ws.refresh(wait=True)
        after = ws.query("impeller balance inspected", as_of=AS_OF).evidence[0]
        assert (after.observed_at, after.source_age_days, after.indexed_at) == (
            before.observed_at,
            before.source_age_days,
            before.indexed_at,  # the pump note did not change, so its index time did not either
        )
        assert after.live_verified is False
        (corpus / "pumps.md").write_text("---\nobserved: 2026-10-01\n---\n" + NEW, encoding="utf-8")
        ws.refresh(wait=True)
        edited = ws.query("impeller balance inspected", as_of=AS_OF).evidence[0]
        assert "monthly" in edited.excerpt
        assert (edited.observed_at, edited.source_age_days) == (before.observed_at, before.source_age_days)
        assert edited.indexed_at == "2026-11-20T09:00:00Z"  # the projection is newer; the source is not


# ---------------------------------------------------------------- versioned projections


def test_rebuild_writes_the_next_version_beside_the_serving_one_then_switches(corpus: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with (
        Workspace(corpus, store, lanes=LANES) as writer,
        Workspace(corpus, store, lanes=LANES, refresh="off") as reader,
    ):
        writer.index()
        assert [h.passage_id for h in reader.lexical.search("zephyr quota", 3)]
        assert reader.lexical.version == 1
        seen_during: list[list[str]] = []
        original = writer.lexical._drop_other_versions

        def check_both_exist(keep: Path) -> None:
            seen_during.append(sorted(p.name for p in (store / "lexical").iterdir()))
            original(keep)

        writer.lexical._drop_other_versions = check_both_exist  # type: ignore[method-assign]
        writer.lexical.rebuild(writer.records, version=2)
        assert seen_during[-1] == ["v1", "v2"]  # the old version stayed until the switch
        assert sorted(p.name for p in (store / "lexical").iterdir()) == ["v2"]
        hits = reader.lexical.search("zephyr quota", 3)  # the reader follows the pointer to v2
        assert reader.lexical.version == 2
        assert hits and hits[0].passage_id.startswith("quota")


def test_a_failed_check_of_a_new_version_keeps_the_old_one_serving(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    from retrieval_kernel.errors import LaneUnavailableError
    from retrieval_kernel.projections import lexical

    with Workspace(corpus, tmp_path / "store", lanes=LANES) as ws:
        ws.index()

        def bad_check(folder, passages):
            raise LaneUnavailableError("the new lexical index holds 0 passages, the record store 8")

        monkeypatch.setattr(lexical, "_check_built", bad_check)
        with pytest.raises(LaneUnavailableError):
            ws.lexical.rebuild(ws.records, version=2)
        assert ws.records.projection("lexical").version == 1
        monkeypatch.undo()
        assert ws.query("zephyr quota", as_of=AS_OF).evidence[0].id.startswith("quota")


EDITS = st.lists(
    st.tuples(st.sampled_from(["add", "update", "delete"]), st.integers(0, 7), st.sampled_from(PROBES)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS)
def test_incremental_refresh_equals_a_full_rebuild(tmp_path_factory: pytest.TempPathFactory, edits) -> None:
    """Documents, passages and ranked results (ids and scores) after any edit sequence."""
    root = tmp_path_factory.mktemp("incremental")
    notes = root / "notes"
    write_corpus(notes, notes_count=8)
    with Workspace(notes, root / "store", lanes=LANES) as ws:
        ws.index()
        for step, (kind, which, words) in enumerate(edits):
            path = sorted(notes.glob("*.md"))[which % len(list(notes.glob("*.md")))]
            if kind == "add":
                (notes / f"added-{step}.md").write_text(f"# Added {step}\n\n## Body\n\n{words} {step}\n")
            elif kind == "update":
                path.write_text(path.read_text(encoding="utf-8") + f"\n## Step {step}\n\n{words} again.\n")
            elif len(list(notes.glob("*.md"))) > 1:
                path.unlink()
            ws.refresh(wait=True)
        assert snapshot(ws) == fresh_snapshot(notes, root / "fresh")


# ---------------------------------------------------------------- status, rebuild, adapters


def test_status_reports_versions_lag_and_the_last_refresh(corpus: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Workspace(corpus, store, lanes=LANES, refresh="off") as ws:
        assert ws.status()["projections"][0]["problem"].startswith("not built")
        ws.index()
        (corpus / "pumps.md").write_text(NEW, encoding="utf-8")
        status = ws.status()
    assert status["state"] == "stale"
    assert status["pending_notes"] == 1
    (lexical,) = status["projections"]
    assert (lexical["name"], lexical["version"], lexical["lag"], lexical["problem"]) == ("lexical", 1, 1, None)
    assert status["last_refresh"]["result"] == "ok"
    assert status["last_refresh"]["added"] == 8
    text = status_text(status)
    assert "lexical  v1" in text and "lag 1" in text and "1 note(s) changed on disk" in text
    with Workspace(corpus, store, lanes=LANES, refresh="off") as other:  # another process reads it from the store
        assert other.status()["last_refresh"]["added"] == 8


def test_a_corrupt_record_store_names_the_file_and_the_rebuild_command(corpus: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    with Workspace(corpus, store, lanes=LANES) as ws:
        ws.index()
    (store / DATABASE_NAME).write_bytes(b"not a database at all" * 500)
    with pytest.raises(CorruptStoreError) as info:
        Workspace(corpus, store, lanes=LANES)
    assert str(store / DATABASE_NAME) in str(info.value)
    assert f"retrieval-kernel rebuild {corpus}" in str(info.value)
    assert main(["status", str(corpus), "--store", str(store)]) == 2
    assert "retrieval-kernel rebuild" in capsys.readouterr().err
    assert main(["rebuild", str(corpus), "--store", str(store)]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == 8
    assert list(store.glob(f"{DATABASE_NAME}.damaged-*"))
    with Workspace(corpus, store, lanes=LANES) as ws:
        assert ws.query("zephyr quota", as_of=AS_OF).evidence[0].id.startswith("quota")


def test_a_page_damaged_inside_the_store_is_caught_at_open(corpus: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Workspace(corpus, store, lanes=LANES) as ws:
        ws.index()
        ws.records._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    database = store / DATABASE_NAME
    with sqlite3.connect(database) as db:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        pages = db.execute("PRAGMA page_count").fetchone()[0]
    with database.open("r+b") as handle:  # scribble over a page past the header
        handle.seek(page_size * (pages - 1))
        handle.write(b"\xff" * page_size)
    with pytest.raises(CorruptStoreError, match="rebuild"):
        Workspace(corpus, store, lanes=LANES)


def test_cli_status_and_index_report_lanes(corpus: Path, tmp_path: Path, capsys) -> None:
    store = tmp_path / "store"
    assert main(["index", str(corpus), "--store", str(store)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["lanes"]) == {"identity", "lexical", "dense"}
    assert main(["status", str(corpus), "--store", str(store), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [p["name"] for p in status["projections"]] == ["lexical", "dense"]
    assert all(p["lag"] == 0 for p in status["projections"])
    assert main(["status", str(corpus), "--store", str(store)]) == 0
    assert "state consistent" in capsys.readouterr().out


def test_cli_eval_recovery_writes_a_receipt(tmp_path: Path, capsys) -> None:
    output = tmp_path / "receipt.json"
    code = main(["eval-recovery", "--scenario", "note-changes-while-read", "--output", str(output)])
    receipt = json.loads(output.read_text())
    assert code == 0
    assert receipt["passed"] is True
    assert [s["name"] for s in receipt["scenarios"]] == ["note-changes-while-read"]
    assert main(["eval-recovery", "--scenario", "no-such-fault"]) == 2


def test_magics_status_and_refresh(corpus: Path, tmp_path: Path, monkeypatch) -> None:
    from IPython.core.getipython import get_ipython
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    ip = start_ipython() or get_ipython()
    monkeypatch.chdir(tmp_path)
    ip.run_line_magic("load_ext", "retrieval_kernel")
    store = tmp_path / "store"
    options = f"--notes {corpus} --store {store}"
    try:
        ip.run_line_magic("config", "ContextMagics.refresh_mode = 'off'")
        packet = ip.run_line_magic("context", f"{options} --as-of {AS_OF} impeller balance")
        assert packet.abstention_reason == "empty_store"  # off: not even a first build on a query
        with capture_output() as captured:
            ip.run_line_magic("context_refresh", options)
        assert captured.stdout.startswith("consistent: 8 added")
        (corpus / "pumps.md").write_text(NEW, encoding="utf-8")
        with capture_output() as captured:
            ip.run_line_magic("context_status", options)
        assert "state stale" in captured.stdout
        with capture_output() as captured:
            ip.run_line_magic("context_refresh", options)
        assert captured.stdout.startswith("consistent: 0 added, 1 updated")
        with capture_output() as captured:
            ip.run_line_magic("context_status", f"{options} --json")
        assert json.loads(captured.stdout)["state"] == "consistent"
    finally:
        del ip.config["ContextMagics"]
        from retrieval_kernel.magics import ContextMagics

        for magics in [c for c in ip.configurables if isinstance(c, ContextMagics)]:
            magics.refresh_mode = None
            for workspace in magics._workspaces.values():
                workspace.close()
            magics._workspaces.clear()
