"""Workspace end to end: freshness, abstention, input errors, projection state, determinism."""

from __future__ import annotations

import datetime as dt
import os
import re
import sqlite3
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.errors import (
    DateError,
    EmptyQueryError,
    InputError,
    NotesDirError,
    QueryTooLongError,
    StoreError,
)
from retrieval_kernel.store.records import DATABASE_NAME

AS_OF = "2026-10-15"


def note(observed: str | None = None, body: str = "gearbox oil level checks", **meta: str) -> str:
    front = {**({"observed": observed} if observed else {}), **meta}
    head = "---\n" + "".join(f"{k}: {v}\n" for k, v in front.items()) + "---\n" if front else ""
    return f"{head}# Gearbox\n\n{body}\n"


def bump_mtime(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 7_000_000_000))


# ---------------------------------------------------------------- freshness


def test_observed_date_gives_age_and_stale_by_default(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    (item,) = ws.query("gearbox", as_of=AS_OF).evidence
    assert item.observed_at == "2026-10-01"
    assert item.source_age_days == 14
    assert item.fresh_for_days == 7
    assert item.freshness == "stale"


@pytest.mark.parametrize(
    ("fresh_for", "days", "label"), [("30d", 30, "fresh"), ("2w", 14, "fresh"), ("10", 10, "stale")]
)
def test_fresh_for_sets_the_window(ws_for, fresh_for: str, days: int, label: str) -> None:
    ws = ws_for({"g.md": note("2026-10-01", fresh_for=fresh_for)})
    (item,) = ws.query("gearbox", as_of=AS_OF).evidence
    assert (item.source_age_days, item.fresh_for_days, item.freshness) == (14, days, label)


@pytest.mark.parametrize(("observed", "age", "label"), [("2026-10-08", 7, "fresh"), ("2026-10-07", 8, "stale")])
def test_freshness_boundary_is_inclusive(ws_for, observed: str, age: int, label: str) -> None:
    ws = ws_for({"g.md": note(observed)})
    (item,) = ws.query("gearbox", as_of=AS_OF).evidence
    assert (item.source_age_days, item.freshness) == (age, label)


def test_observed_datetime_counts_whole_days(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01T23:30:00Z")})
    (item,) = ws.query("gearbox", as_of=dt.date(2026, 10, 15)).evidence
    assert item.observed_at == "2026-10-01T23:30:00+00:00"
    assert item.source_age_days == 14


def test_missing_observed_is_unknown_never_the_file_mtime(ws_for) -> None:
    ws = ws_for({"g.md": note(None)})
    (item,) = ws.query("gearbox", as_of=AS_OF).evidence
    assert item.observed_at is None
    assert item.source_age_days is None
    assert item.freshness == "unknown"


def test_reindexing_does_not_make_facts_younger(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    bump_mtime(ws.notes_dir / "g.md")
    (ws.notes_dir / "g.md").write_text(note("2026-10-01", body="gearbox oil level checks, reworded"))
    (item,) = ws.query("gearbox", as_of=AS_OF).evidence
    assert "reworded" in item.excerpt
    assert (item.observed_at, item.source_age_days, item.freshness) == ("2026-10-01", 14, "stale")


def test_live_verified_is_false_without_a_live_check_and_metadata_is_carried(ws_for) -> None:
    ws = ws_for(
        {
            "a.md": note("2026-10-14", authority="reference", status="disputed"),
            "b.md": note(None, body="gearbox seals"),
        }
    )
    packet = ws.query("gearbox", as_of=AS_OF)
    assert len(packet.evidence) == 2
    assert all(item.live_verified is False for item in packet.evidence)
    assert '"live_verified":true' not in packet.to_json()
    by_path = {item.path: item for item in packet.evidence}
    assert (by_path["a.md"].authority, by_path["a.md"].status, by_path["a.md"].role) == (
        "reference",
        "disputed",
        "counter",
    )
    assert (by_path["b.md"].authority, by_path["b.md"].status) == (None, None)


def test_indexed_at_is_an_iso_utc_timestamp(ws_for) -> None:
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    ws = ws_for({"g.md": note("2026-10-01")})
    after = dt.datetime.now(dt.UTC)
    (item,) = ws.query("gearbox", as_of=AS_OF).evidence
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", item.indexed_at)
    when = dt.datetime.fromisoformat(item.indexed_at.replace("Z", "+00:00"))
    assert before <= when <= after


# ---------------------------------------------------------------- abstention


def test_empty_notes_dir_abstains_with_empty_store(ws_for) -> None:
    ws = ws_for({})
    packet = ws.query("anything at all", as_of=AS_OF)
    assert packet.abstained
    assert packet.abstention_reason == "empty_store"
    assert packet.evidence == ()


def test_only_stop_words_is_underspecified(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    packet = ws.query("the of and", as_of=AS_OF)
    assert (packet.abstained, packet.abstention_reason) == (True, "underspecified_query")


def test_unknown_words_are_no_match(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    packet = ws.query("xylophone quasar", as_of=AS_OF)
    assert (packet.abstained, packet.abstention_reason) == (True, "no_match")
    assert packet.lanes[0].status == "empty"
    assert packet.lanes[0].candidates == 0


def test_answered_query_does_not_abstain(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    packet = ws.query("  gearbox oil  ", as_of=AS_OF)
    assert packet.query == "gearbox oil"
    assert (packet.abstained, packet.abstention_reason) == (False, None)
    assert packet.lanes[0].status == "ok"
    assert packet.projection == "consistent"
    assert packet.as_of == AS_OF


# ---------------------------------------------------------------- input errors


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_empty_query_is_rejected(ws_for, text: str) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    with pytest.raises(EmptyQueryError):
        ws.query(text, as_of=AS_OF)


def test_query_length_limit(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    with pytest.raises(QueryTooLongError):
        ws.query("gearbox " * 12_500, as_of=AS_OF)  # 100,000 characters
    with pytest.raises(QueryTooLongError):
        ws.query("x" * 4_001, as_of=AS_OF)
    packet = ws.query("x" * 4_000, as_of=AS_OF)  # at the limit: accepted (and finds nothing)
    assert packet.abstention_reason == "no_match"


def test_missing_or_non_directory_notes_dir(tmp_path: Path) -> None:
    with pytest.raises(NotesDirError):
        Workspace(tmp_path / "missing", store_dir=tmp_path / "store")
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(NotesDirError):
        Workspace(tmp_path / "file.md", store_dir=tmp_path / "store")
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("as_of", ["yesterday", "2026-13-01", "15/10/2026", ""])
def test_unparseable_as_of_is_a_date_error(ws_for, as_of: str) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    with pytest.raises(DateError):
        ws.query("gearbox", as_of=as_of)


def test_input_errors_are_value_errors() -> None:
    for exc in (EmptyQueryError, QueryTooLongError, DateError, NotesDirError):
        assert issubclass(exc, InputError)
        assert issubclass(exc, ValueError)


def test_as_of_accepts_datetime_text_and_date_objects(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    a = ws.query("gearbox", as_of="2026-10-15T08:00:00Z")
    b = ws.query("gearbox", as_of=dt.date(2026, 10, 15))
    c = ws.query("gearbox", as_of=dt.datetime(2026, 10, 15, 23, 59))
    assert a.as_of == b.as_of == c.as_of == "2026-10-15"
    assert a.to_json() == b.to_json() == c.to_json()


# ---------------------------------------------------------------- projection state


def test_refresh_false_after_an_edit_reports_stale(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01"), "h.md": note("2026-10-01", body="hydraulic press")})
    assert ws.query("gearbox", as_of=AS_OF, refresh=False).projection == "consistent"
    (ws.notes_dir / "g.md").write_text(note("2026-10-01", body="gearbox oil level checks and new words"))
    bump_mtime(ws.notes_dir / "g.md")
    packet = ws.query("gearbox", as_of=AS_OF, refresh=False)
    assert packet.projection == "stale"
    assert packet.lanes[0].status == "stale"
    assert "new words" not in packet.evidence[0].excerpt  # served from the last index
    refreshed = ws.query("gearbox", as_of=AS_OF)
    assert refreshed.projection == "consistent"
    assert refreshed.lanes[0].status == "ok"
    assert "new words" in refreshed.evidence[0].excerpt


def test_refresh_false_notices_added_and_deleted_notes(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    (ws.notes_dir / "new.md").write_text(note(None, body="gearbox new"))
    assert ws.query("gearbox", as_of=AS_OF, refresh=False).projection == "stale"
    ws.index()
    (ws.notes_dir / "new.md").unlink()
    assert ws.query("gearbox", as_of=AS_OF, refresh=False).projection == "stale"


def test_failed_refresh_serves_the_last_good_index(ws_for, monkeypatch) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})

    def read_only(self, wait=True, timeout=None, only=None, defer=False):
        raise StoreError(f"attempt to write a readonly database at {self.store_dir / DATABASE_NAME}")

    monkeypatch.setattr(Workspace, "index", read_only)
    assert ws.query("gearbox", as_of=AS_OF).projection == "consistent"  # nothing changed: nothing to refresh
    (ws.notes_dir / "h.md").write_text(note(None, body="a new note about the gearbox"))
    packet = ws.query("gearbox", as_of=AS_OF)
    assert packet.projection == "failed-with-last-good"
    assert all(lane.lag == 1 for lane in packet.lanes if lane.name != "identity")
    assert any("refresh failed" in w and "readonly" in w for w in packet.warnings)
    assert not packet.abstained
    assert packet.evidence[0].path == "g.md"
    assert packet.budget.used <= packet.budget.limit


def test_store_that_became_read_only_serves_the_last_good_index(ws_for, monkeypatch) -> None:
    """records.sqlite3 no longer writable (chmod 444 for a non-root user, or any SQLite write
    failure such as a full disk): simulated with a genuine read-only connection (mode=ro), since
    root ignores file modes. The write during refresh fails inside SQLite; the query must still
    answer from the last good index and say so, not crash with sqlite3.OperationalError."""
    ws = ws_for({"g.md": note("2026-10-01")})
    ws.records._db.close()
    ws.records._db = sqlite3.connect(f"file:{ws.records.path}?mode=ro", uri=True, isolation_level=None)
    (ws.notes_dir / "g.md").write_text(note("2026-10-01", body="gearbox oil level checks, edited"))
    bump_mtime(ws.notes_dir / "g.md")
    packet = ws.query("gearbox", as_of=AS_OF)
    assert packet.projection == "failed-with-last-good"
    assert any("refresh failed" in w for w in packet.warnings)
    assert packet.evidence and "edited" not in packet.evidence[0].excerpt


def test_problems_during_refresh_become_packet_warnings(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    (ws.notes_dir / "bad.md").write_text("---\ntitle: [oops\n---\nbody\n")
    packet = ws.query("gearbox", as_of=AS_OF)
    assert packet.projection == "consistent"
    assert any("bad.md" in w and "not indexed" in w for w in packet.warnings)


# ---------------------------------------------------------------- determinism


def test_same_query_twice_is_identical(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01"), "h.md": note("2026-10-02", body="gearbox seals and gearbox oil")})
    first = ws.query("gearbox oil", as_of=AS_OF, max_bytes=5_000, top=3)
    second = ws.query("gearbox oil", as_of=AS_OF, max_bytes=5_000, top=3)
    assert first.to_json() == second.to_json()
    assert first.trace_id == second.trace_id
    assert re.fullmatch(r"[0-9a-f]{16}", first.trace_id)


def test_same_query_from_a_reopened_workspace_is_identical(ws_for, tmp_path: Path) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    first = ws.query("gearbox", as_of=AS_OF)
    with Workspace(ws.notes_dir, store_dir=tmp_path / "store", lanes=("lexical",)) as again:
        assert again.query("gearbox", as_of=AS_OF).to_json() == first.to_json()


def test_trace_id_depends_on_query_budget_and_index_state(ws_for) -> None:
    ws = ws_for({"g.md": note("2026-10-01")})
    base = ws.query("gearbox", as_of=AS_OF).trace_id
    assert ws.query("gearbox oil", as_of=AS_OF).trace_id != base
    assert ws.query("gearbox", as_of="2026-10-16").trace_id != base
    assert ws.query("gearbox", as_of=AS_OF, max_chars=19_999).trace_id != base
    assert ws.query("gearbox", as_of=AS_OF, top=3).trace_id != base
    (ws.notes_dir / "g.md").write_text(note("2026-10-01", body="gearbox changed"))
    bump_mtime(ws.notes_dir / "g.md")
    assert ws.query("gearbox", as_of=AS_OF).trace_id != base
