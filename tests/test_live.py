"""Live checks: a JSON system of record, ``run_checks``, and their effect on packet evidence."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.errors import InputError
from retrieval_kernel.output.render import freshness_text
from retrieval_kernel.pipeline.live import LiveCheck, LiveResult, run_checks
from retrieval_kernel.pipeline.live_sources import JsonSystemOfRecord

AS_OF = "2026-10-15"
ORDER = "order-4471#order-4471"
OLD = "refund-policy-a#refund-window-old"

NOTES = {
    "order.md": (
        "---\nid: order-4471\nobserved: 2026-10-10\n"
        "asserts: {order_4471.purchased_days_ago: 20, order_4471.channel: Web Shop}\n---\n"
        "# Order 4471\n\nOrder 4471 was bought 20 days ago through the web shop.\n"
    ),
    "plain.md": "# Order handling\n\nOrders ship from the north warehouse.\n",
    "refund-a.md": (
        "---\nid: refund-policy-a\nrevision: A\nstatus: superseded\nsuperseded_by: [refund-policy-b]\n"
        "asserts: {refund_window_days: 30}\n---\n# Refund window (old)\n\nOrder refunds within 30 days.\n"
    ),
    "refund-b.md": (
        "---\nid: refund-policy-b\nrevision: B\nsupersedes: [refund-policy-a@A]\n"
        "asserts: {refund_window_days: 14}\n---\n# Refund window\n\nOrder refunds within 14 days.\n"
    ),
}


def write_record(path: Path, values: Any, checked_at: str | None = "2026-10-15T09:00:00Z", **extra: Any) -> Path:
    data: dict[str, Any] = {"values": values, **extra}
    if checked_at is not None:
        data["checked_at"] = checked_at
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


class Spy:
    """A live check that records what it was asked and answers as told."""

    def __init__(self, name: str, answer: LiveResult | Exception | None) -> None:
        self.name = name
        self.answer = answer
        self.asked: list[dict[str, Any]] = []

    def check(self, asserts: Mapping[str, Any]) -> LiveResult | None:
        self.asked.append(dict(asserts))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


# ---------------------------------------------------------------- JsonSystemOfRecord


def test_agreeing_values_are_verified(tmp_path: Path) -> None:
    source = JsonSystemOfRecord(write_record(tmp_path / "orders-api.json", {"order.age": 20, "refund.days": "14"}))
    assert source.name == "orders-api"
    result = source.check({"order.age": 20, "refund.days": 14, "unknown.key": "x"})
    assert result is not None
    assert result.check == "orders-api"
    assert result.verified is True
    assert result.detail == "verified live against orders-api (checked 2026-10-15T09:00:00Z): order.age, refund.days"


def test_values_compare_as_text_ignoring_case_and_surrounding_space(tmp_path: Path) -> None:
    source = JsonSystemOfRecord(write_record(tmp_path / "sor.json", {"channel": "  Web Shop ", "active": True}))
    result = source.check({"channel": "web shop", "active": "TRUE"})
    assert result is not None and result.verified


def test_a_disagreeing_value_contradicts_and_says_what_the_source_holds(tmp_path: Path) -> None:
    source = JsonSystemOfRecord(write_record(tmp_path / "sor.json", {"a": 1, "b": 21}, checked_at=None), name="ledger")
    result = source.check({"a": 1, "b": 20})
    assert result is not None
    assert result.check == "ledger"
    assert result.verified is False
    assert result.detail == "contradicted by ledger: b: note says 20, ledger says 21"


def test_knowing_none_of_the_assertions_is_none(tmp_path: Path) -> None:
    source = JsonSystemOfRecord(write_record(tmp_path / "sor.json", {"other": 1}))
    assert source.check({"order.age": 20}) is None
    assert source.check({}) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot be read as JSON"),
        ("{not json", "cannot be read as JSON"),
        (b"\xff\xfe\x00garbage", "cannot be read as JSON"),
        ("[1, 2]", "needs a 'values' object"),
        ('{"checked_at": "2026-10-15"}', "needs a 'values' object"),
        ('{"values": [["a", 1]]}', "needs a 'values' object"),
    ],
    ids=["missing", "bad-json", "not-utf8", "list", "no-values", "values-not-object"],
)
def test_an_unreadable_source_raises_input_error(tmp_path: Path, content: str | bytes | None, message: str) -> None:
    path = tmp_path / "sor.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message) as caught:
        JsonSystemOfRecord(path).check({"a": 1})
    assert str(path) in str(caught.value)


def test_the_file_is_read_again_on_every_check(tmp_path: Path) -> None:
    path = write_record(tmp_path / "sor.json", {"a": 1})
    source = JsonSystemOfRecord(path)
    assert source.check({"a": 1}).verified  # type: ignore[union-attr]
    write_record(path, {"a": 2})
    assert not source.check({"a": 1}).verified  # type: ignore[union-attr]
    write_record(path, {"b": 2})
    assert source.check({"a": 1}) is None
    path.unlink()
    with pytest.raises(InputError):
        source.check({"a": 1})


def test_json_system_of_record_satisfies_the_protocol(tmp_path: Path) -> None:
    check: LiveCheck = JsonSystemOfRecord(tmp_path / "sor.json")
    assert check.name == "sor"


# ---------------------------------------------------------------- run_checks


def test_run_checks_turns_a_raising_check_into_an_unverified_result(tmp_path: Path) -> None:
    broken = JsonSystemOfRecord(tmp_path / "missing.json")
    agreeing = Spy("good", LiveResult("good", True, "ok"))
    results = run_checks((broken, agreeing), {"a": 1})
    assert [r.check for r in results] == ["missing", "good"]
    failed = results[0]
    assert failed.verified is False
    assert failed.detail.startswith("live check missing failed: system of record ")
    assert "cannot be read as JSON" in failed.detail
    assert results[1] == LiveResult("good", True, "ok")
    assert agreeing.asked == [{"a": 1}]


def test_run_checks_survives_any_exception_and_drops_none() -> None:
    crashing = Spy("flaky", RuntimeError("connection reset"))
    silent = Spy("silent", None)
    results = run_checks((silent, crashing), {"a": 1})
    assert results == [LiveResult("flaky", False, "live check flaky failed: connection reset")]
    assert silent.asked == crashing.asked == [{"a": 1}]
    assert run_checks((), {"a": 1}) == []


# ---------------------------------------------------------------- through the workspace


@pytest.fixture
def notes(make_notes) -> Path:
    return make_notes(NOTES)


def query(notes: Path, store: Path, checks, text: str = "order 4471 bought", **kwargs: Any):
    with Workspace(notes, store, lanes=("lexical",), live_checks=checks) as ws:
        packet = ws.query(text, as_of=AS_OF, **kwargs)
        return packet, ws.trace(packet.trace_id)


def item(packet, pid: str):
    return next(e for e in packet.evidence if e.id == pid)


def test_verified_source_marks_the_item_live_verified(notes: Path, tmp_path: Path) -> None:
    record = write_record(tmp_path / "orders.json", {"order_4471.purchased_days_ago": 20})
    packet, trace = query(notes, tmp_path / "store", [JsonSystemOfRecord(record)])
    order = item(packet, ORDER)
    assert order.live_verified is True
    assert "verified live against orders (checked 2026-10-15T09:00:00Z): order_4471.purchased_days_ago" in order.reason
    assert next(c for c in trace["freshness"] if c["id"] == ORDER)["live_verified"] is True
    assert freshness_text(order).endswith(" · live-verified")
    assert freshness_text(order) in str(packet)


def test_contradicting_source_leaves_it_unverified_with_the_reason(notes: Path, tmp_path: Path) -> None:
    record = write_record(tmp_path / "orders.json", {"order_4471.purchased_days_ago": 25})
    packet, trace = query(notes, tmp_path / "store", [JsonSystemOfRecord(record)])
    order = item(packet, ORDER)
    assert order.live_verified is False
    assert order.role == "contradicted" and order.live_status == "contradicted"
    assert "contradicted by orders" in order.reason
    assert "order_4471.purchased_days_ago: note says 20, orders says 25" in order.reason
    assert next(c for c in trace["freshness"] if c["id"] == ORDER)["live_verified"] is False
    assert freshness_text(order).endswith(" · CONTRADICTED by the system of record")


def test_a_source_that_knows_nothing_of_the_note_changes_nothing(notes: Path, tmp_path: Path) -> None:
    record = write_record(tmp_path / "orders.json", {"something.else": 1})
    checked, _ = query(notes, tmp_path / "store", [JsonSystemOfRecord(record)])
    unchecked, _ = query(notes, tmp_path / "store", [])
    assert item(checked, ORDER).live_verified is False
    assert item(checked, ORDER).reason == item(unchecked, ORDER).reason


def test_an_unreadable_source_does_not_break_the_packet(notes: Path, tmp_path: Path) -> None:
    (tmp_path / "orders.json").write_text("{oops", encoding="utf-8")
    packet, _ = query(notes, tmp_path / "store", [JsonSystemOfRecord(tmp_path / "orders.json")])
    order = item(packet, ORDER)
    assert order.live_verified is False
    assert "live check orders failed" in order.reason
    assert "cannot be read as JSON" in order.reason


def test_every_check_that_knows_a_value_must_agree(notes: Path, tmp_path: Path) -> None:
    agree = write_record(tmp_path / "a.json", {"order_4471.purchased_days_ago": 20})
    disagree = write_record(tmp_path / "b.json", {"order_4471.channel": "phone"})
    unknowing = write_record(tmp_path / "c.json", {"x": 1})
    store = tmp_path / "store"
    both, _ = query(notes, store, [JsonSystemOfRecord(agree), JsonSystemOfRecord(unknowing)])
    assert item(both, ORDER).live_verified is True
    split, _ = query(notes, store, [JsonSystemOfRecord(agree), JsonSystemOfRecord(disagree)])
    order = item(split, ORDER)
    assert order.live_verified is False
    assert "verified live against a" in order.reason
    assert "contradicted by b" in order.reason


def test_only_notes_with_assertions_and_no_historical_item_are_checked(notes: Path, tmp_path: Path) -> None:
    spy = Spy("spy", LiveResult("spy", True, "spy agrees"))
    packet, _ = query(notes, tmp_path / "store", [spy], text="refunds window warehouse", audit=True)
    roles = {e.id: e.role for e in packet.evidence}
    assert roles[OLD] == "historical"
    assert "plain#order-handling" in roles
    assert spy.asked == [{"refund_window_days": 14}]  # not the historical revision, not the plain note
    assert item(packet, "refund-policy-b#refund-window").live_verified is True
    assert item(packet, OLD).live_verified is False
    assert item(packet, "plain#order-handling").live_verified is False


def test_changing_the_file_between_queries_changes_the_verdict(notes: Path, tmp_path: Path) -> None:
    record = write_record(tmp_path / "orders.json", {"order_4471.purchased_days_ago": 20})
    with Workspace(notes, tmp_path / "store", lanes=("lexical",), live_checks=[JsonSystemOfRecord(record)]) as ws:
        first = ws.query("order 4471 bought", as_of=AS_OF)
        write_record(record, {"order_4471.purchased_days_ago": 21})
        second = ws.query("order 4471 bought", as_of=AS_OF)
        record.unlink()
        third = ws.query("order 4471 bought", as_of=AS_OF)
    assert item(first, ORDER).live_verified is True
    assert item(second, ORDER).live_verified is False
    assert "orders says 21" in item(second, ORDER).reason
    assert item(third, ORDER).live_verified is False
    assert "live check orders failed" in item(third, ORDER).reason


def test_the_trace_of_a_packet_describes_that_packet(notes: Path, tmp_path: Path) -> None:
    record = write_record(tmp_path / "orders.json", {"order_4471.purchased_days_ago": 20})
    with Workspace(notes, tmp_path / "store", lanes=("lexical",), live_checks=[JsonSystemOfRecord(record)]) as ws:
        first = ws.query("order 4471 bought", as_of=AS_OF)
        write_record(record, {"order_4471.purchased_days_ago": 21})
        second = ws.query("order 4471 bought", as_of=AS_OF)
        assert item(first, ORDER).live_verified != item(second, ORDER).live_verified
        trace = ws.trace(first.trace_id)
    assert trace is not None
    assert next(c for c in trace["freshness"] if c["id"] == ORDER)["live_verified"] is True


# ---------------------------------------------------------------- a contradicted note never stays a winner

NEW = "refund-policy-b#refund-window"


def test_a_note_conflict_won_by_a_contradicted_note_folds_into_the_records_conflict(
    notes: Path, tmp_path: Path
) -> None:
    record = write_record(tmp_path / "policy-api.json", {"refund_window_days": 21})
    packet, _ = query(notes, tmp_path / "store", [JsonSystemOfRecord(record)], text="refunds window")
    assert item(packet, NEW).role == "contradicted"
    about = [c for c in packet.conflicts if c.proposition == "refund_window_days"]
    assert len(about) == 1  # the superseded(A, by=B) conflict no longer names B the winner
    (conflict,) = about
    assert conflict.winner == "live:policy-api"
    assert conflict.resolution == f"live(live:policy-api over {item(packet, NEW).ref}, {OLD})"
    assert {side.id: side.value for side in conflict.evidence} == {NEW: 14, OLD: 30, "live:policy-api": 21}
    assert all(c.winner not in (NEW, OLD) for c in packet.conflicts)


def test_a_record_that_agrees_with_the_winner_leaves_the_note_conflict_alone(notes: Path, tmp_path: Path) -> None:
    record = write_record(tmp_path / "policy-api.json", {"refund_window_days": 14})
    packet, _ = query(notes, tmp_path / "store", [JsonSystemOfRecord(record)], text="refunds window")
    assert item(packet, NEW).live_status == "verified"
    (conflict,) = [c for c in packet.conflicts if c.proposition == "refund_window_days"]
    assert conflict.resolution.startswith("superseded(") and conflict.winner == NEW


def test_two_records_that_contradict_keep_a_conflict_each(notes: Path, tmp_path: Path) -> None:
    first = write_record(tmp_path / "policy-api.json", {"refund_window_days": 21})
    second = write_record(tmp_path / "billing.json", {"refund_window_days": 28})
    packet, _ = query(
        notes, tmp_path / "store", [JsonSystemOfRecord(first), JsonSystemOfRecord(second)], text="refunds window"
    )
    live = [c for c in packet.conflicts if c.resolution.startswith("live(")]
    assert [c.winner for c in live] == ["live:policy-api", "live:billing"]
    assert OLD in {side.id for side in live[0].evidence}  # the note conflict folded into the first source's
    assert [v.value for v in packet.record_values] == [28, 21]  # sorted by source name, both contradicting
