"""Traces: how a packet was built, kept in the record store by trace id, never holding note text."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.output.packet import Packet
from retrieval_kernel.pipeline.trace import TRACE_VERSION, trace_text
from retrieval_kernel.store import records

AS_OF = "2026-10-15"
QUESTION = "refund window and shipping days"

# Two authoritative revisions (A superseded by B), two same-authority notes that disagree
# (an unresolved conflict), and one note per tenant. Each excerpt holds one made-up word
# that no query below uses, so finding it in a trace means note text leaked into it.
NOTES = {
    "refund-a.md": (
        "---\nid: refund-policy-a\nrevision: A\nauthority: authoritative\nstatus: superseded\n"
        "superseded_by: [refund-policy-b]\nobserved: 2026-09-01\nasserts: {refund_window_days: 30}\n---\n"
        "# Refund window (old)\n\nRefunds are accepted within 30 days of purchase, says the marmalade ledger.\n"
    ),
    "refund-b.md": (
        "---\nid: refund-policy-b\nrevision: B\nauthority: authoritative\nsupersedes: [refund-policy-a@A]\n"
        "observed: 2026-10-01\nasserts: {refund_window_days: 14}\n---\n"
        "# Refund window\n\nRefunds are accepted within 14 days of purchase, says the quokka charter.\n"
    ),
    "ship-east.md": (
        "---\nid: shipping-east\nauthority: reference\nobserved: 2026-10-05\nasserts: {shipping_days: 3}\n---\n"
        "# Shipping time east\n\nShipping takes 3 days per the zeppelin roster.\n"
    ),
    "ship-west.md": (
        "---\nid: shipping-west\nauthority: reference\nobserved: 2026-10-06\nasserts: {shipping_days: 5}\n---\n"
        "# Shipping time west\n\nShipping takes 5 days per the gondola roster.\n"
    ),
    "tenant-a.md": (
        "---\nid: tenant-a-refunds\nscope: [tenant-a]\nobserved: 2026-10-02\n---\n"
        "# Tenant A refund exception\n\nRefunds for tenant A: the pangolin exception of purchase.\n"
    ),
    # Visible to tenant-b only; it asserts a third value and claims to supersede revision B.
    "tenant-b.md": (
        "---\nid: tenant-b-refunds\nscope: [tenant-b]\nauthority: authoritative\nsupersedes: [refund-policy-b]\n"
        "observed: 2026-10-02\nasserts: {refund_window_days: 60}\n---\n"
        "# Tenant B refund window\n\nRefunds for tenant B take 60 days of purchase: the armadillo window.\n"
    ),
}
EXCERPT_WORDS = ("marmalade", "quokka", "zeppelin", "gondola", "pangolin", "armadillo")
OLD, NEW = "refund-policy-a#refund-window-old", "refund-policy-b#refund-window"
EAST, WEST = "shipping-east#shipping-time-east", "shipping-west#shipping-time-west"
TENANT_A, TENANT_B = "tenant-a-refunds#tenant-a-refund-exception", "tenant-b-refunds#tenant-b-refund-window"


def traced(ws: Workspace, text: str = QUESTION, **kwargs: Any) -> tuple[Packet, dict[str, Any]]:
    """Query, and fetch the trace the query kept."""
    kwargs.setdefault("as_of", AS_OF)
    packet = ws.query(text, **kwargs)
    trace = ws.trace(packet.trace_id)
    assert trace is not None, f"no trace kept for {packet.trace_id}"
    return packet, trace


@pytest.fixture
def ws(ws_for) -> Workspace:
    return ws_for(NOTES)


@pytest.fixture
def audited(ws: Workspace) -> tuple[Packet, dict[str, Any]]:
    """Tenant A asks, to verify, under audit: a superseded revision, two conflicts, one hidden note."""
    return traced(ws, scopes="tenant-a", intent="verify", audit=True)


# ---------------------------------------------------------------- what a trace holds


def test_trace_is_kept_under_the_packet_trace_id(audited) -> None:
    packet, trace = audited
    assert len(packet.trace_id) == 16
    assert trace["trace_version"] == TRACE_VERSION
    assert trace["trace_id"] == packet.trace_id
    assert trace["as_of"] == AS_OF
    assert trace["scopes"] == ["tenant-a"]
    assert trace["intent"] == "verify"
    assert trace["audit"] is True
    assert trace["budget"] == {"unit": "chars", "limit": 20_000, "used": packet.budget.used}
    assert trace["projection"] == packet.projection == "consistent"


def test_unknown_trace_id_is_none(ws: Workspace) -> None:
    ws.query(QUESTION, as_of=AS_OF)
    assert ws.trace("0123456789abcdef") is None
    assert ws.trace("") is None


def test_trace_outlives_the_workspace(ws: Workspace, audited) -> None:
    packet, trace = audited
    ws.close()
    with Workspace(ws.notes_dir, ws.store_dir, lanes=("lexical",)) as again:
        assert again.trace(packet.trace_id) == trace


def test_lanes_hold_config_and_ranked_candidates(audited) -> None:
    packet, trace = audited
    [lane] = trace["lanes"]
    [report] = packet.lanes
    assert lane["name"] == report.name == "lexical"
    assert lane["status"] == report.status == "ok"
    assert (lane["index_version"], lane["high_water"], lane["lag"]) == (report.index_version, report.high_water, 0)
    assert lane["config"] == {"candidate_pool": 50, "score_basis": report.score_basis}
    assert "min_cosine" not in lane["config"]  # no dense lane ran
    candidates = lane["candidates"]
    assert len(candidates) == report.candidates == 5
    assert [rank for _, rank, _ in candidates] == [1, 2, 3, 4, 5]
    scores = [score for _, _, score in candidates]
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 for score in scores)
    assert {pid for pid, _, _ in candidates} == {OLD, NEW, EAST, WEST, TENANT_A}
    # fused order covers the same candidates, and each evidence item's lane rank agrees with the lane
    assert {pid for pid, _ in trace["fused"]} == {pid for pid, _, _ in candidates}
    lane_rank = {pid: rank for pid, rank, _ in candidates}
    for item in packet.evidence:
        assert [(hit.lane, hit.rank) for hit in item.retrieved_by] == [("lexical", lane_rank[item.id])]


def test_eligibility_records_admissions_and_exclusions(audited) -> None:
    _, trace = audited
    decisions = {d["id"]: d for d in trace["eligibility"]}
    assert set(decisions) == {OLD, NEW, EAST, WEST, TENANT_A}
    for pid in (NEW, EAST, WEST, TENANT_A):
        assert decisions[pid]["decision"] == "admitted"
        assert decisions[pid]["role"] == "current"
        assert decisions[pid]["lanes"][0][0] == "lexical" and decisions[pid]["lanes"][0][1] >= 1
        assert decisions[pid]["successor_of"] is None
        assert "code" not in decisions[pid]
    assert decisions[OLD] == {
        "id": OLD,
        "decision": "excluded",
        "code": "superseded",
        "detail": "superseded by refund-b.md",
    }


def test_freshness_is_checked_per_evidence_item(audited) -> None:
    packet, trace = audited
    checks = trace["freshness"]
    assert [c["id"] for c in checks] == [item.id for item in packet.evidence]
    for check, item in zip(checks, packet.evidence, strict=True):
        assert check == {
            "id": item.id,
            "observed_at": item.observed_at,
            "age_days": item.source_age_days,
            "fresh_for_days": item.fresh_for_days,
            "freshness": item.freshness,
            "live_verified": item.live_verified,
            "live_status": item.live_status,
            "verify_live_before_acting": item.verify_live is not None,
        }
    by_id = {c["id"]: c for c in checks}
    assert (by_id[OLD]["observed_at"], by_id[OLD]["age_days"], by_id[OLD]["freshness"]) == ("2026-09-01", 44, "stale")
    assert by_id[NEW]["age_days"] == 14
    assert by_id[NEW]["live_verified"] is False


def test_conflicts_carry_their_resolution(audited) -> None:
    packet, trace = audited
    conflicts = {c["proposition"]: c for c in trace["conflicts"]}
    assert set(conflicts) == {"refund_window_days", "shipping_days"}
    refs = {item.id: item.ref for item in packet.evidence}
    refund = conflicts["refund_window_days"]
    assert refund["sides"] == [OLD, NEW]
    assert refund["resolution"] == f"superseded({refs[OLD]}, by={refs[NEW]})"
    assert refund["required_behavior"] == "use_winner"
    shipping = conflicts["shipping_days"]
    assert sorted(shipping["sides"]) == [EAST, WEST]
    assert shipping["resolution"] == "unresolved"
    assert shipping["required_behavior"] == "abstain_or_escalate"
    assert [(c["id"], c["resolution"]) for c in trace["conflicts"]] == [(c.id, c.resolution) for c in packet.conflicts]


def test_final_order_exclusions_and_abstention(audited) -> None:
    packet, trace = audited
    assert trace["final_order"] == [[item.ref, item.id, item.role] for item in packet.evidence]
    roles = {pid: role for _, pid, role in trace["final_order"]}
    assert roles[OLD] == "historical"  # audit shows it, as history only
    assert trace["exclusions"] == dict(packet.exclusions)
    assert trace["exclusions"]["scope"] == 1  # tenant-b's note: counted, never named
    assert trace["exclusions"]["superseded"] == 1
    assert trace["abstained"] is packet.abstained is True
    assert trace["abstention_reason"] == packet.abstention_reason == "unresolved_conflict"


def test_no_match_abstention_is_traced(ws: Workspace) -> None:
    packet, trace = traced(ws, "xylophone quasar")
    assert packet.abstained
    assert trace["abstained"] is True
    assert trace["abstention_reason"] == "no_match"
    assert trace["final_order"] == []
    assert trace["eligibility"] == []
    assert trace["lanes"][0]["candidates"] == []


def test_budget_decisions_name_truncated_and_left_out_items(ws_for) -> None:
    lines = "\n".join(f"Line {n} of the walrus tariff schedule and its many rules." for n in range(60))
    ws = ws_for(
        {
            "long.md": f"# Walrus tariff\n\n{lines}\n",
            "long2.md": f"# Walrus tariff two\n\n{lines.replace('Line', 'Row')}\n",
            "short.md": "# Walrus tariff short\n\nThe walrus tariff is 7 coins.\n",
        }
    )
    packet, trace = traced(ws, "walrus tariff", max_chars=1800)  # room for the packet's frame and one cut item
    decisions = trace["budget_decisions"]
    assert decisions["admitted"] == [item.id for item in packet.evidence]
    assert decisions["truncated"] == [item.id for item in packet.evidence if item.truncated]
    assert decisions["truncated"], "the first passage is longer than the budget: it must be cut"
    assert decisions["left_out"], "nothing fits after the cut first passage"
    assert set(decisions["left_out"]).isdisjoint(decisions["admitted"])
    assert "short#walrus-tariff-short" in decisions["left_out"]
    assert len(decisions["left_out"]) == packet.exclusions["budget"]
    roomy, roomy_trace = traced(ws, "walrus tariff", max_chars=100_000)
    assert roomy_trace["budget_decisions"]["truncated"] == []
    assert roomy_trace["budget_decisions"]["left_out"] == []
    assert len(roomy_trace["budget_decisions"]["admitted"]) == len(roomy.evidence) == 5


@pytest.mark.slow
def test_dense_lane_config_records_min_cosine(make_notes, tmp_path: Path) -> None:
    notes = make_notes(
        {
            "vehicle.md": "# Automobile maintenance\n\nService the vehicle engine: change the motor oil.\n",
            "garden.md": "# Gardening\n\nPlant tomatoes in spring and water the seedlings daily.\n",
        }
    )
    with Workspace(notes, tmp_path / "dense-store", lanes=("lexical", "dense"), dense_min_cosine=0.27) as ws:
        ws.index()
        packet, trace = traced(ws, "car repair engine")
    lanes = {lane["name"]: lane for lane in trace["lanes"]}
    assert set(lanes) == {"lexical", "dense"}
    dense_report = next(lane for lane in packet.lanes if lane.name == "dense")
    assert dense_report.status == "ok", dense_report.reason
    assert lanes["dense"]["config"] == {
        "candidate_pool": 50,
        "score_basis": dense_report.score_basis,
        "min_cosine": 0.27,
    }
    assert "min_cosine" not in lanes["lexical"]["config"]
    assert lanes["dense"]["candidates"], "the paraphrase must reach the dense lane"
    assert all(score >= 0.27 for _, _, score in lanes["dense"]["candidates"])


# ---------------------------------------------------------------- what a trace never holds


def test_trace_holds_no_note_text_and_only_a_query_digest(ws: Workspace) -> None:
    for scopes in (None, "tenant-a", "tenant-b", "*"):
        packet, trace = traced(ws, scopes=scopes, audit=True)
        assert packet.evidence  # the excerpts are there, in the packet
        dumped = json.dumps(trace, ensure_ascii=False)
        shown = " ".join(item.excerpt for item in packet.evidence)
        for word in EXCERPT_WORDS:
            assert word not in dumped.lower(), (scopes, word)
        assert any(word in shown for word in EXCERPT_WORDS)
        for item in packet.evidence:
            assert item.excerpt not in dumped
        assert QUESTION not in dumped
        assert trace["query_sha256"] == hashlib.sha256(QUESTION.encode("utf-8")).hexdigest()
        assert trace["query_terms"] == len(QUESTION.split())
        assert "query" not in trace


@pytest.mark.parametrize("scopes", [None, "tenant-a"])
@pytest.mark.parametrize("text", [QUESTION, "tenant-b-refunds", "refund window purchase tenant-b-refunds"])
def test_trace_never_names_notes_outside_the_callers_scopes(ws: Workspace, scopes, text: str) -> None:
    packet, trace = traced(ws, text, scopes=scopes, audit=True)
    dumped = json.dumps(trace)
    assert TENANT_B not in dumped
    assert "tenant-b.md" not in dumped
    assert all(item.id != TENANT_B for item in packet.evidence)
    if scopes is None:
        assert TENANT_A not in dumped
    # tenant-b's claim to supersede revision B is invisible to these callers
    superseded = {d["id"] for d in trace["eligibility"] if d["decision"] == "excluded" and d["code"] == "superseded"}
    assert NEW not in superseded


def test_the_owner_of_a_scope_does_see_its_note_in_the_trace(ws: Workspace) -> None:
    _, trace = traced(ws, scopes="tenant-b", audit=True)
    ids = {d["id"]: d for d in trace["eligibility"]}
    assert ids[TENANT_B]["decision"] == "admitted"
    assert ids[NEW] == {"id": NEW, "decision": "excluded", "code": "superseded", "detail": "superseded by tenant-b.md"}


# ---------------------------------------------------------------- trace ids


def test_trace_id_is_deterministic_for_the_same_query_caller_clock_and_state(ws: Workspace) -> None:
    first = ws.query(QUESTION, as_of=AS_OF, scopes="tenant-a", intent="verify", audit=True)
    second = ws.query(f"  {QUESTION}  ", as_of=AS_OF, scopes=["tenant-a"], intent="verify", audit=True)
    assert first.trace_id == second.trace_id
    with Workspace(ws.notes_dir, ws.store_dir, lanes=("lexical",)) as again:
        assert again.query(QUESTION, as_of=AS_OF, scopes=" tenant-a ", intent="verify", audit=True).trace_id == (
            first.trace_id
        )
    # scope order does not matter
    a_b = ws.query(QUESTION, as_of=AS_OF, scopes="tenant-a,tenant-b").trace_id
    assert a_b == ws.query(QUESTION, as_of=AS_OF, scopes=["tenant-b", "tenant-a"]).trace_id


def test_trace_id_changes_with_scopes_intent_audit_as_of_and_query(ws: Workspace) -> None:
    base = {"as_of": AS_OF, "scopes": "tenant-a", "intent": "verify", "audit": False}
    variants = {
        "base": base,
        "no scopes": base | {"scopes": None},
        "other scope": base | {"scopes": "tenant-b"},
        "all scopes": base | {"scopes": "*"},
        "orient": base | {"intent": "orient"},
        "plan": base | {"intent": "plan"},
        "audit intent": base | {"intent": "audit"},
        "audit": base | {"audit": True},
        "as_of": base | {"as_of": "2026-10-16"},
    }
    ids = {name: ws.query(QUESTION, **kwargs).trace_id for name, kwargs in variants.items()}
    ids["query"] = ws.query("refund window", **base).trace_id
    ids["top"] = ws.query(QUESTION, top=3, **base).trace_id
    ids["budget"] = ws.query(QUESTION, max_bytes=20_000, **base).trace_id
    assert len(set(ids.values())) == len(ids), ids
    for trace_id in ids.values():
        assert ws.trace(trace_id) is not None


def test_only_the_newest_traces_are_kept(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records, "MAX_TRACES", 2)
    ids = [ws.query(QUESTION, as_of=f"2026-10-{day}").trace_id for day in (15, 16, 17)]
    assert ws.trace(ids[0]) is None
    assert [ws.trace(trace_id)["as_of"] for trace_id in ids[1:]] == ["2026-10-16", "2026-10-17"]  # type: ignore[index]
    ws.query(QUESTION, as_of="2026-10-16")  # asked again: its trace is the newest now
    ws.query(QUESTION, as_of="2026-10-18")
    assert ws.trace(ids[1]) is not None
    assert ws.trace(ids[2]) is None


def test_trace_id_changes_when_the_notes_change_and_old_traces_stay(ws: Workspace) -> None:
    before, before_trace = traced(ws)
    note = ws.notes_dir / "ship-west.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nWest also ships on Sundays.\n", encoding="utf-8")
    after, after_trace = traced(ws)
    assert after.trace_id != before.trace_id
    assert after_trace["lanes"][0]["high_water"] > before_trace["lanes"][0]["high_water"]
    assert ws.trace(before.trace_id) == before_trace


# ---------------------------------------------------------------- trace_text


def test_trace_text_renders_every_section(audited) -> None:
    packet, trace = audited
    text = trace_text(trace)
    lines = text.split("\n")
    assert lines[0].startswith(f"trace {packet.trace_id}  as of {AS_OF}  intent verify  scopes tenant-a  audit True")
    assert lines[1].startswith(f"query sha256 {trace['query_sha256'][:16]}")
    assert "projection consistent" in lines[1]
    assert f"budget {packet.budget.used:,}/20,000 chars" in lines[1]
    versions = trace["versions"]
    assert lines[2].startswith(f"versions: retrieval_kernel {versions['package']}, packet v5, all-MiniLM-L6-v2:")
    assert f"answerability {versions['answerability_model']['sha256'][:12]}" in lines[2]
    assert lines[3] == "lanes:"
    assert lines[4].startswith("  lexical: ok v1 hw ")
    assert "5 candidates" in lines[4]
    assert f"{NEW} #1 (" in lines[4]
    assert "eligibility:" in lines
    lanes = next(d["lanes"] for d in trace["eligibility"] if d["id"] == NEW)
    assert f"  + {NEW} [current] " + ", ".join(f"{lane} #{rank}" for lane, rank in lanes) in lines
    assert f"  - {OLD} [superseded] superseded by refund-b.md" in lines
    refs = {item.id: item.ref for item in packet.evidence}
    assert f"conflict c1 on refund_window_days: superseded({refs[OLD]}, by={refs[NEW]}) -> use_winner" in lines
    assert "conflict c2 on shipping_days: unresolved -> abstain_or_escalate" in lines
    assert f"budget: admitted {len(packet.evidence)}, truncated [], left out []" in lines
    final = ", ".join(f"{item.ref}={item.id}" for item in packet.evidence)
    assert f"final: {final}" in lines
    assert f"exclusions: {json.dumps(dict(packet.exclusions))}" in lines
    assert lines[-1] == "abstained: unresolved_conflict"
    for word in EXCERPT_WORDS:
        assert word not in text


def test_trace_text_of_an_empty_answer(ws: Workspace) -> None:
    _, trace = traced(ws, "xylophone quasar")
    text = trace_text(trace)
    assert "scopes (none)" in text.split("\n")[0]
    assert "  lexical: empty v1" in text
    assert "0 candidates" in text
    assert "final: (none)" in text
    assert text.split("\n")[-1] == "abstained: no_match"


def test_trace_text_shows_each_items_freshness_check(audited) -> None:
    """The freshness section is part of the trace; its readable form shows it too."""
    _, trace = audited
    text = trace_text(trace)
    for check in trace["freshness"]:
        assert any(check["id"] in line and check["freshness"] in line for line in text.split("\n")), check["id"]
    assert "2026-09-01" in text  # the superseded revision's observed date


# ---------------------------------------------------------------- a store that cannot be written


def _read_only(ws: Workspace) -> None:
    """Swap the store's connection for a read-only one (chmod does not stop root)."""
    ws.records.close()
    ws.records._db = sqlite3.connect(f"file:{ws.records.path}?mode=ro", uri=True, isolation_level=None, timeout=1)


def test_read_only_store_still_answers_without_keeping_the_trace(ws: Workspace) -> None:
    kept, kept_trace = traced(ws)
    _read_only(ws)
    packet = ws.query(QUESTION, as_of="2026-10-20", scopes="tenant-a")
    assert packet.evidence
    assert packet.abstention_reason == "unresolved_conflict"
    assert packet.projection == "consistent"
    assert packet.trace_id and packet.trace_id != kept.trace_id
    assert ws.trace(packet.trace_id) is None  # not kept, and no error
    assert ws.trace(kept.trace_id) == kept_trace  # what was kept is still readable


def test_read_only_store_with_changed_notes_serves_the_last_good_index(ws: Workspace) -> None:
    _read_only(ws)
    note = ws.notes_dir / "ship-east.md"
    note.write_text(note.read_text(encoding="utf-8").replace("3 days", "4 days"), encoding="utf-8")
    packet = ws.query(QUESTION, as_of=AS_OF)
    assert packet.projection == "failed-with-last-good"
    assert any("refresh failed" in warning for warning in packet.warnings)
    assert EAST in {item.id for item in packet.evidence}
    assert ws.trace(packet.trace_id) is None


# ---------------------------------------------------------------- bugs


def test_trace_holds_no_text_of_a_written_status_line(ws_for) -> None:
    ws = ws_for(
        {
            "adr-7.md": "# ADR 7: Use pangolin queues\n\n## Status\n\nRejected because the wombat budget vanished\n\n"
            "## Decision\n\nWe use pangolin queues for the ledger.\n",
        }
    )
    _, trace = traced(ws, "pangolin queues ledger", audit=True)
    assert {d["code"] for d in trace["eligibility"] if d["decision"] == "excluded"} == {"rejected"}
    assert "wombat" not in json.dumps(trace)  # the trace must not


def test_trace_does_not_reveal_the_query_words(ws: Workspace) -> None:
    packet, trace = traced(ws, "pangolin exception", scopes="tenant-a")
    assert packet.evidence[0].id == TENANT_A
    assert "pangolin" not in json.dumps(trace)
