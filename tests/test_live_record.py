"""The system of record wins (seed 000: the owner changed yesterday in the Ledger, the note still says the old one).

Real sources throughout: the fixture's JSON file, a Python command printing it, and an HTTP
server on 127.0.0.1; a source that hangs (a sleeping command, a server that never answers)
must leave an honest, unverified packet within its time limit.
"""

from __future__ import annotations

import base64
import http.server
import json
import shutil
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_kernel import Packet, Workspace, verify_packet
from retrieval_kernel.cli import main
from retrieval_kernel.errors import LiveSourceError, LiveTimeoutError
from retrieval_kernel.pipeline.live_sources import (
    CommandSystemOfRecord,
    HttpSystemOfRecord,
    JsonSystemOfRecord,
    SystemOfRecord,
)

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "live-owner"
LEDGER = FIXTURE / "system-of-record" / "ledger.json"
LEDGER_CLI = FIXTURE / "system-of-record" / "ledger_cli.py"
AS_OF = "2026-10-15"
QUESTION = "Who owns record PB-1042?"
OWNER = "ledger-record-pb-1042#owner"
KEY = "record.pb_1042.owner"
SLACK = 2.0  # seconds a packet may take beyond a hanging source's time limit (the query itself, lexical only)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    target = tmp_path / "notes"
    shutil.copytree(FIXTURE / "notes", target)
    return target


@pytest.fixture
def ws(notes: Path, tmp_path: Path) -> Iterator[Workspace]:
    with Workspace(notes, tmp_path / "store", lanes=("lexical",)) as workspace:
        workspace.index()
        yield workspace


def ask(ws: Workspace, *sources: SystemOfRecord, question: str = QUESTION) -> Packet:
    return ws.query(question, as_of=AS_OF, live_checks=sources)


def item(packet: Packet, pid: str = OWNER) -> Any:
    return next(e for e in packet.evidence if e.id == pid)


def ledger_command(*flags: str, timeout: float = 5.0) -> CommandSystemOfRecord:
    return CommandSystemOfRecord([sys.executable, str(LEDGER_CLI), *flags], name="ledger", timeout=timeout)


def assert_record_wins(packet: Packet) -> None:
    """The note is never governing; the record's value and source lead the packet."""
    owner = item(packet)
    assert owner.role == "contradicted"
    assert owner.live_status == "contradicted" and owner.live_verified is False
    assert all(e.role != "current" for e in packet.evidence if e.module == "ledger-record-pb-1042")
    assert packet.evidence[0].id != OWNER  # contradicted items come after every other admitted item
    lead = packet.record_values[0]
    assert (lead.proposition, lead.value, lead.source) == (KEY, "Maren Oduya", "ledger")
    assert OWNER in lead.contradicts
    conflict = next(c for c in packet.conflicts if c.proposition == KEY)
    assert conflict.resolution == f"live(live:ledger over {owner.ref})"
    assert conflict.winner == "live:ledger"
    assert [(s.id, s.value, s.status) for s in conflict.evidence] == [
        (OWNER, "Rafi Demir", "contradicted"),
        ("live:ledger", "Maren Oduya", "live"),
    ]
    data = packet.to_dict()
    keys = list(data)
    assert keys.index("record_values") < keys.index("evidence")
    assert data["record_values"][0]["value"] == "Maren Oduya"
    assert not packet.verify_live_before_acting  # the live read happened: nothing left to verify
    assert not packet.abstained


# ---------------------------------------------------------------- seed 000: before and after


def test_without_a_live_check_the_stale_state_note_says_verify_live_before_acting(ws: Workspace) -> None:
    packet = ask(ws)
    owner = item(packet)
    assert owner.role == "current" and owner.live_status == "not_checked"
    assert packet.record_values == () and packet.live_sources == ()
    reads = {read.id: read for read in packet.verify_live_before_acting}
    assert OWNER in reads
    assert reads[OWNER].keys == (KEY,)
    assert "past its fresh_for of 7 d" in reads[OWNER].reason
    assert owner.verify_live == reads[OWNER].reason
    assert "workshop-record-ownership#deciding-the-owner" not in reads  # it asserts no state: no live demand
    assert packet.to_dict()["verify_live_before_acting"][0]["ref"] == reads[OWNER].ref
    as_json = {e["id"]: e for e in packet.to_dict()["evidence"]}
    assert as_json[OWNER]["verify_live_before_acting"] is True
    assert as_json["workshop-record-ownership#deciding-the-owner"]["verify_live_before_acting"] is False


def test_the_owner_changed_yesterday_in_the_json_file_record(ws: Workspace) -> None:
    assert_record_wins(ask(ws, JsonSystemOfRecord(LEDGER)))


def test_the_owner_changed_yesterday_in_a_command_record(ws: Workspace) -> None:
    assert_record_wins(ask(ws, ledger_command()))


@pytest.fixture
def ledger_server() -> Iterator[str]:
    """The ledger JSON served over HTTP on 127.0.0.1 (a real server on a free port)."""
    body = LEDGER.read_bytes()
    basic = "Basic " + base64.b64encode(b"reader:s3cret").decode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/private" and self.headers.get("Authorization") != basic:
                self.send_response(401)
                self.end_headers()
                return
            self.send_response(200 if self.path in ("/values", "/private") else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body if self.path in ("/values", "/private") else b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_owner_changed_yesterday_in_an_http_record(ws: Workspace, ledger_server: str) -> None:
    assert_record_wins(ask(ws, HttpSystemOfRecord(f"{ledger_server}/values", name="ledger")))


def test_an_http_error_is_a_clear_unavailable_check(ws: Workspace, ledger_server: str) -> None:
    packet = ask(ws, HttpSystemOfRecord(f"{ledger_server}/nothing-here", name="ledger"))
    assert item(packet).live_status == "unavailable"
    assert "answered HTTP 404" in packet.live_sources[0].detail


def test_an_http_source_never_shows_a_password_in_the_packet(ws: Workspace, ledger_server: str) -> None:
    refused = ask(ws, HttpSystemOfRecord(f"{ledger_server}/private", name="ledger"))
    assert "answered HTTP 401" in refused.live_sources[0].detail
    secret = ledger_server.replace("http://", "http://reader:s3cret@") + "/private"
    packet = ask(ws, HttpSystemOfRecord(secret, name="ledger"))
    assert item(packet).live_status == "contradicted"  # the request itself carried the credentials
    assert "s3cret" not in packet.to_json() and "reader:***@" in packet.live_sources[0].location


def test_a_record_that_agrees_verifies_and_confirms(ws: Workspace) -> None:
    packet = ask(ws, JsonSystemOfRecord(LEDGER), question="Who owns supplier record S-118?")
    supplier = item(packet, "ledger-record-s-118#owner")
    assert supplier.role == "current" and supplier.live_status == "verified" and supplier.live_verified
    value = next(v for v in packet.record_values if v.proposition == "record.s_118.owner")
    assert value.confirms == ("ledger-record-s-118#owner",) and value.contradicts == ()
    assert not any(c.resolution.startswith("live(") for c in packet.conflicts)


def test_grounding_flags_an_answer_that_repeats_the_contradicted_note(ws: Workspace) -> None:
    from retrieval_kernel import check_grounding

    packet = ask(ws, JsonSystemOfRecord(LEDGER))
    ref = item(packet).ref
    report = check_grounding(packet, f"Record PB-1042 is owned by Rafi Demir [{ref}]")
    assert "contradicts_resolution" in report.claims[0].codes
    assert "the winner says Maren Oduya" in str(report)


# ---------------------------------------------------------------- sources that hang or talk nonsense


def assert_honest_unavailable(packet: Packet, elapsed: float, limit: float) -> None:
    assert elapsed < limit + SLACK, f"took {elapsed:.2f} s for a {limit} s limit"
    owner = item(packet)
    assert owner.role == "current"  # nothing contradicted it: the notes' answer stands, unverified
    assert owner.live_status == "unavailable" and owner.live_verified is False
    assert packet.record_values == ()
    (source,) = packet.live_sources
    assert source.status == "unavailable" and f"within {limit:g} s" in (source.detail or "")
    assert any("live check ledger unavailable" in w and "nothing here is live-verified" in w for w in packet.warnings)
    read = next(r for r in packet.verify_live_before_acting if r.id == OWNER)
    assert "the live check was unavailable" in read.reason
    assert "not live-verified (live check unavailable)" in str(packet)


def test_a_command_that_hangs_gives_an_unverified_packet_within_the_limit(ws: Workspace) -> None:
    ask(ws)  # warm: the first query opens the index
    source = ledger_command("--sleep", "30", timeout=1.0)
    started = time.monotonic()
    packet = ask(ws, source)
    assert_honest_unavailable(packet, time.monotonic() - started, 1.0)


@pytest.fixture
def stalling_server() -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/values"
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    listener.close()


def test_an_http_source_that_stalls_gives_an_unverified_packet_within_the_limit(
    ws: Workspace, stalling_server: str
) -> None:
    ask(ws)
    started = time.monotonic()
    packet = ask(ws, HttpSystemOfRecord(stalling_server, name="ledger", timeout=1.0))
    assert_honest_unavailable(packet, time.monotonic() - started, 1.0)


def test_a_hanging_source_costs_one_limit_per_packet_not_one_per_item(ws: Workspace) -> None:
    ask(ws)
    source = ledger_command("--sleep", "30", timeout=0.5)
    started = time.monotonic()
    packet = ask(ws, source)
    elapsed = time.monotonic() - started
    asserting = [e for e in packet.evidence if e.asserts]
    assert len(asserting) >= 2  # the owner and revisions passages both assert the owner
    assert elapsed < 0.5 + SLACK


def test_the_timeouts_raise_clear_errors_when_fetched_directly(stalling_server: str) -> None:
    with pytest.raises(LiveTimeoutError, match=r"gave no answer within 0\.5 s \(killed\)"):
        ledger_command("--sleep", "30", timeout=0.5).fetch()
    with pytest.raises(LiveTimeoutError, match=r"no answer within 0\.5 s"):
        HttpSystemOfRecord(stalling_server, timeout=0.5).fetch()


def test_malformed_json_is_a_clear_error_and_the_notes_answer_with_a_warning(ws: Workspace) -> None:
    source = ledger_command("--garbage")
    with pytest.raises(LiveSourceError, match=r"system of record .*ledger_cli\.py --garbage cannot be read as JSON"):
        source.fetch()
    packet = ask(ws, source)
    owner = item(packet)
    assert not packet.abstained
    assert owner.role == "current" and owner.live_status == "unavailable"
    assert "Rafi Demir" in owner.excerpt  # the notes' answer, as the notes have it
    warning = next(w for w in packet.warnings if w.startswith("live check ledger unavailable"))
    assert "cannot be read as JSON" in warning


def test_a_failing_command_says_its_status_and_stderr(ws: Workspace) -> None:
    source = CommandSystemOfRecord([sys.executable, "-c", "import sys; sys.exit('ledger down')"], name="ledger")
    with pytest.raises(LiveSourceError, match="exited with status 1: ledger down"):
        source.fetch()
    assert item(ask(ws, source)).live_status == "unavailable"


# ---------------------------------------------------------------- every renderer shows it


def test_every_renderer_shows_the_contradicted_item_and_leads_with_the_record(ws: Workspace) -> None:
    packet = ask(ws, JsonSystemOfRecord(LEDGER))
    lead = "system of record ledger (checked 2026-10-15T08:00:00Z): record.pb_1042.owner = Maren Oduya"
    text, markdown, html = str(packet), packet._repr_markdown_(), packet._repr_html_()
    for rendered in (text, html):
        assert lead in rendered
        assert rendered.index(lead) < rendered.index("Rafi Demir")
        assert "CONTRADICTED by the system of record" in rendered
    assert "record.pb\\_1042.owner = Maren Oduya" in markdown
    assert "CONTRADICTED by the system of record" in markdown
    assert 'class="rk-item rk-contradicted"' in html
    frame = packet.to_frame()
    assert frame.set_index("ref").loc[item(packet).ref, "live_status"] == "contradicted"


# ---------------------------------------------------------------- source versions and verify


def test_each_item_carries_its_note_sha256_and_revision(ws: Workspace, notes: Path) -> None:
    import hashlib

    owner = item(ask(ws))
    assert owner.source_sha256 == hashlib.sha256((notes / "record-pb-1042.md").read_bytes()).hexdigest()
    assert owner.source_revision == 1
    (notes / "record-pb-1042.md").write_text(
        (notes / "record-pb-1042.md").read_text().replace("revision C", "revision D"), encoding="utf-8"
    )
    again = item(ask(ws))
    assert again.source_revision == 2 and again.source_sha256 != owner.source_sha256


def test_verify_passes_on_unchanged_notes_and_detects_an_edited_one(ws: Workspace, notes: Path) -> None:
    packet = ask(ws)
    report = verify_packet(packet)  # the packet knows the folder it was answered from
    assert report.all_match and {c.status for c in report.checks} == {"unchanged"}
    assert len(report.checks) == len(packet.evidence)
    note = notes / "record-pb-1042.md"
    original = note.read_text(encoding="utf-8")
    note.write_text(original.replace("is Rafi Demir", "is Maren Oduya"), encoding="utf-8")
    report = verify_packet(packet.to_dict(), notes)
    by_id = {c.id: c for c in report.checks}
    assert not report.all_match
    assert by_id[OWNER].status == "changed"
    assert by_id["ledger-record-pb-1042#revisions"].status == "lines_match"  # same note, untouched lines
    assert by_id["workshop-record-ownership#deciding-the-owner"].status == "unchanged"
    assert [c.id for c in report.changed] == [OWNER]
    note.write_text("# Moved down\n\nA new first section.\n\n" + original, encoding="utf-8")
    moved = {c.id: c for c in verify_packet(packet, notes).checks}[OWNER]
    assert moved.status == "moved" and moved.now_at == (moved.line_start + 4, moved.line_end + 4)
    note.unlink()
    assert {c.id: c for c in verify_packet(packet, notes).checks}[OWNER].status == "missing"


def test_verify_from_the_cli(ws: Workspace, notes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "packet.json"
    saved.write_text(ask(ws).to_json(), encoding="utf-8")
    assert main(["verify", str(saved), "--notes", str(notes)]) == 0
    assert "citations still match" in capsys.readouterr().out
    note = notes / "record-pb-1042.md"
    note.write_text(note.read_text(encoding="utf-8").replace("Rafi Demir", "R. Demir"), encoding="utf-8")
    assert main(["verify", str(saved), "--notes", str(notes), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["all_match"] is False
    assert [c["id"] for c in report["citations"] if not c["matches"]] == [OWNER]
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    assert main(["verify", str(tmp_path / "bad.json"), "--notes", str(notes)]) == 2
    assert "is not JSON" in capsys.readouterr().err


def test_the_trace_records_source_versions_live_outcome_and_component_versions(ws: Workspace) -> None:
    packet = ask(ws, JsonSystemOfRecord(LEDGER))
    trace = ws.trace(packet.trace_id)
    assert trace is not None
    sources = {s["id"]: s for s in trace["sources"]}
    assert sources[OWNER]["source_sha256"] == item(packet).source_sha256
    assert sources[OWNER]["source_revision"] == 1
    assert trace["live"]["sources"][0]["status"] == "answered"
    assert OWNER in trace["live"]["contradicted"]
    versions = trace["versions"]
    assert versions["package"] == __import__("retrieval_kernel").__version__
    assert versions["packet_version"] == 5
    assert versions["embedding_model"]["name"].startswith("all-MiniLM-L6-v2:")
    assert len(versions["answerability_model"]["sha256"]) == 64
    assert len(versions["selector_calibration"]["sha256"]) == 64
    freshness = {f["id"]: f for f in trace["freshness"]}
    assert freshness[OWNER]["live_status"] == "contradicted"
