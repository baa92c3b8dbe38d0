"""The assembly policy, one rule per test: validity, supersession, authority, conflicts, dedup, intents.

Every corpus here is built in a temporary folder (identity + lexical lanes, which are
fast); only the ``below_threshold`` test loads the dense model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from retrieval_kernel import Workspace
from retrieval_kernel.errors import InputError
from retrieval_kernel.output.packet import Evidence, Packet
from retrieval_kernel.pipeline.answerability import Judgement
from retrieval_kernel.pipeline.live_sources import JsonSystemOfRecord
from retrieval_kernel.pipeline.policy import _answering_in_play

FAST = ("identity", "lexical")
AS_OF = "2026-11-30"

Build = Callable[..., Workspace]


def md(title: str, body: str, **front: Any) -> str:
    """A note: optional YAML front matter, a ``#`` title and one paragraph."""
    head = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n" if front else ""
    return f"{head}# {title}\n\n{body}\n"


@pytest.fixture
def build(tmp_path: Path) -> Iterator[Build]:
    """``build(files, lanes=..., live_checks=...)``: an indexed workspace over ``{path: text}``."""
    opened: list[Workspace] = []

    def make(files: Mapping[str, str], lanes: Sequence[str] = FAST, **options: Any) -> Workspace:
        folder = tmp_path / f"ws{len(opened)}"
        notes = folder / "notes"
        notes.mkdir(parents=True)
        for rel, text in files.items():
            (notes / rel).parent.mkdir(parents=True, exist_ok=True)
            (notes / rel).write_text(text, encoding="utf-8")
        ws = Workspace(notes, store_dir=folder / "store", lanes=lanes, **options)
        ws.index()
        opened.append(ws)
        return ws

    yield make
    for ws in opened:
        ws.close()


def lead(ws: Workspace, path: str) -> str:
    """The id of the first passage of the note at ``path``."""
    return ws.records.passages_of(path)[0].id


def ids(packet: Packet) -> list[str]:
    return [item.id for item in packet.evidence]


def item(packet: Packet, passage_id: str) -> Evidence:
    found = [e for e in packet.evidence if e.id == passage_id]
    assert len(found) == 1, f"{passage_id} not in {ids(packet)}"
    return found[0]


def excluded(packet: Packet) -> list[tuple[str, str]]:
    return [(e.id, e.reason) for e in packet.excluded]


def fused(ws: Workspace, packet: Packet) -> list[str]:
    """The lanes' fused order, before the policy (from the stored trace)."""
    trace = ws.trace(packet.trace_id)
    assert trace is not None
    return [pid for pid, _ in trace["fused"]]


# ---------------------------------------------------------------- the refund example (seed 003)

REFUND = {
    "forum.md": md(
        "Forum: refund window",
        "Someone on the forum says refunds are accepted within 60 days of purchase, refund window days.",
        id="forum-refunds",
        observed="2026-10-01",
        authority="informal",
        asserts={"refund_window_days": 60},
    ),
    "policy-a.md": md(
        "Refund policy (revision A)",
        "Customers may request a refund within 30 days of purchase.",
        id="refund-policy-a",
        observed="2026-01-10",
        revision="A",
        authority="authoritative",
        status="superseded",
        superseded_by=["refund-policy-b"],
        asserts={"refund_window_days": 30},
    ),
    "policy-b.md": md(
        "Refund policy (revision B)",
        "Customers may request a refund within 14 days of purchase.",
        id="refund-policy-b",
        observed="2026-11-28",
        revision="B",
        authority="authoritative",
        status="current",
        valid_from="2026-11-30",
        supersedes=["refund-policy-a@A"],
        asserts={"refund_window_days": 14},
    ),
    "order.md": md(
        "Order 4471",
        "Order 4471 was purchased 20 days ago; the customer asks for a refund.",
        id="order-4471",
        observed="2026-11-30",
        authority="reference",
        asserts={"order_4471.purchased_days_ago": 20},
    ),
}
REFUND_QUERY = "refund window days purchase"
FORUM = "forum-refunds#forum-refund-window"
REV_A = "refund-policy-a#refund-policy-revision-a"
REV_B = "refund-policy-b#refund-policy-revision-b"
ORDER = "order-4471#order-4471"


@pytest.fixture
def refund(build: Build) -> Workspace:
    ws = build(REFUND)
    assert {lead(ws, path) for path in REFUND} == {FORUM, REV_A, REV_B, ORDER}
    return ws


def test_refund_revision_b_governs_once_valid(refund: Workspace) -> None:
    packet = refund.query(REFUND_QUERY, as_of=AS_OF)
    assert not packet.abstained
    assert fused(refund, packet)[0] == FORUM  # the forum post is the best lexical match...
    b, forum, order = item(packet, REV_B), item(packet, FORUM), item(packet, ORDER)
    assert (b.role, b.status, b.authority) == ("current", "current", "authoritative")
    assert order.role == "current"
    assert (forum.role, forum.authority) == ("explanation", "informal")
    assert "lower authority" in forum.reason and REV_B in forum.reason
    assert ids(packet).index(REV_B) < ids(packet).index(FORUM)  # ...but it is ordered after the governing note
    assert [e.role for e in packet.evidence] == ["current", "current", "explanation"]
    assert REV_A not in ids(packet)
    assert excluded(packet) == [(REV_A, "superseded")]
    assert "policy-b.md" in packet.excluded[0].detail
    assert packet.exclusions["superseded"] == 1


def test_refund_conflicts_are_resolved_by_supersession_then_authority(refund: Workspace) -> None:
    packet = refund.query(REFUND_QUERY, as_of=AS_OF)
    b, forum = item(packet, REV_B), item(packet, FORUM)
    by_resolution = {conflict.resolution: conflict for conflict in packet.conflicts}
    assert set(by_resolution) == {f"superseded({REV_A}, by={b.ref})", f"authority({b.ref} over {forum.ref})"}
    superseded = by_resolution[f"superseded({REV_A}, by={b.ref})"]
    assert superseded.proposition == "refund_window_days"
    assert {(s.id, s.ref, s.value) for s in superseded.evidence} == {(REV_A, None, 30), (REV_B, b.ref, 14)}
    assert (superseded.winner, superseded.required_behavior) == (REV_B, "use_winner")
    authority = by_resolution[f"authority({b.ref} over {forum.ref})"]
    assert authority.proposition == "refund_window_days"
    assert {(s.id, s.ref, s.value) for s in authority.evidence} == {(FORUM, forum.ref, 60), (REV_B, b.ref, 14)}
    assert (authority.winner, authority.required_behavior) == (REV_B, "use_winner")


@pytest.mark.parametrize("how", [{"audit": True}, {"intent": "audit"}])
def test_refund_audit_shows_revision_a_as_history(refund: Workspace, how: dict[str, Any]) -> None:
    packet = refund.query(REFUND_QUERY, as_of=AS_OF, **how)
    assert not packet.abstained
    a, b = item(packet, REV_A), item(packet, REV_B)
    assert (a.role, a.status) == ("historical", "superseded")
    assert a.reason.startswith("superseded")
    assert packet.evidence[-1].id == REV_A  # history after every admitted item
    assert b.role == "current"
    (superseded,) = [c for c in packet.conflicts if c.resolution.startswith("superseded(")]
    assert superseded.resolution == f"superseded({a.ref}, by={b.ref})"
    assert {s.id: s.ref for s in superseded.evidence} == {REV_A: a.ref, REV_B: b.ref}
    assert excluded(packet) == [(REV_A, "superseded")]  # still excluded as current evidence


def test_refund_revision_a_is_current_before_b_is_valid(refund: Workspace) -> None:
    packet = refund.query(REFUND_QUERY, as_of="2026-11-29")  # the forum post is on file, the order not yet
    assert not packet.abstained
    a = item(packet, REV_A)
    assert (a.role, a.status) == ("current", "current")
    assert "no successor is valid" in a.reason
    assert REV_B not in ids(packet)
    assert sorted(excluded(packet)) == [(ORDER, "not_yet_observed"), (REV_B, "not_yet_valid")]
    assert packet.exclusions["not_yet_valid"] == 1
    assert "superseded" not in packet.exclusions
    assert item(packet, FORUM).role == "explanation"
    (conflict,) = packet.conflicts
    assert conflict.resolution == f"authority({a.ref} over {item(packet, FORUM).ref})"
    assert conflict.winner == REV_A


def test_notes_written_after_the_clock_are_not_evidence_then(refund: Workspace) -> None:
    packet = refund.query(REFUND_QUERY, as_of="2026-06-01")  # before the forum post and the order were written
    assert ids(packet) == [REV_A] and not packet.conflicts
    assert sorted(excluded(packet)) == [
        (FORUM, "not_yet_observed"),
        (ORDER, "not_yet_observed"),
        (REV_B, "not_yet_valid"),
    ]


def test_refund_conflict_side_status_matches_the_evidence_status(refund: Workspace) -> None:
    packet = refund.query(REFUND_QUERY, as_of="2026-11-29")
    a = item(packet, REV_A)
    sides = [side for conflict in packet.conflicts for side in conflict.evidence if side.id == REV_A]
    assert sides
    assert all(side.status == a.status == "current" for side in sides)


# ---------------------------------------------------------------- exclusion codes

GEARBOX_OTHER = md("Gearbox maintenance", "Gearbox oil is changed every spring by the plant crew.")


@pytest.mark.parametrize(
    ("front", "code"),
    [
        ({"valid_from": "2026-12-01"}, "not_yet_valid"),
        ({"valid_to": "2026-11-29"}, "expired"),
        ({"status": "draft"}, "draft"),
        ({"status": "Proposed"}, "draft"),
        ({"status": "deprecated"}, "deprecated"),
        ({"status": "rejected"}, "rejected"),
        ({"status": "superseded"}, "superseded"),
    ],
)
def test_each_validity_code_excludes_lists_and_counts(build: Build, front: dict[str, str], code: str) -> None:
    ws = build(
        {"target.md": md("Gearbox oil limits", "Gearbox oil pressure limits.", **front), "other.md": GEARBOX_OTHER}
    )
    target, other = lead(ws, "target.md"), lead(ws, "other.md")
    packet = ws.query("gearbox oil", as_of=AS_OF)
    assert ids(packet) == [other]
    assert excluded(packet) == [(target, code)]
    assert packet.exclusions[code] == 1
    assert packet.exclusions["budget"] == 0


def test_declared_superseded_without_a_successor_says_so(build: Build) -> None:
    ws = build({"target.md": md("Gearbox oil limits", "Gearbox oil pressure limits.", status="superseded")})
    packet = ws.query("gearbox oil", as_of=AS_OF)
    (gone,) = packet.excluded
    assert gone.reason == "superseded"
    assert "no successor" in gone.detail


@pytest.mark.parametrize("front", [{"valid_from": AS_OF}, {"valid_to": AS_OF}, {"status": "current"}, {}])
def test_validity_window_is_inclusive_at_the_clock(build: Build, front: dict[str, str]) -> None:
    ws = build({"target.md": md("Gearbox oil limits", "Gearbox oil pressure limits.", **front)})
    packet = ws.query("gearbox oil", as_of=AS_OF)
    assert ids(packet) == [lead(ws, "target.md")]
    assert packet.excluded == ()


def supersession_corpus(reference: str, old_revision: str = "B", new_front: dict[str, Any] | None = None) -> dict:
    return {
        "old.md": md(
            "Gearbox oil schedule (old)",
            "Gearbox oil is changed yearly.",
            id="oil-schedule",
            revision=old_revision,
            authority="reference",
        ),
        "new.md": md(
            "Gearbox oil schedule (new)",
            "Gearbox oil is changed twice a year.",
            id="oil-schedule-2",
            authority="reference",
            supersedes=[reference],
            **(new_front or {}),
        ),
    }


@pytest.mark.parametrize("reference", ["oil-schedule", "oil-schedule@B"])
def test_a_successors_supersedes_excludes_the_old_note(build: Build, reference: str) -> None:
    ws = build(supersession_corpus(reference))
    old, new = lead(ws, "old.md"), lead(ws, "new.md")
    packet = ws.query("gearbox oil schedule", as_of=AS_OF)
    assert ids(packet) == [new]
    assert excluded(packet) == [(old, "superseded")]
    assert packet.excluded[0].detail == "superseded by new.md"
    (conflict,) = packet.conflicts
    assert (conflict.proposition, conflict.winner) == ("supersession", new)


def test_supersedes_at_another_revision_does_not_supersede(build: Build) -> None:
    ws = build(supersession_corpus("oil-schedule@A", old_revision="B"))
    old, new = lead(ws, "old.md"), lead(ws, "new.md")
    packet = ws.query("gearbox oil schedule", as_of=AS_OF)
    assert set(ids(packet)) == {old, new}
    assert item(packet, old).role == "current"
    assert packet.excluded == ()
    assert packet.conflicts == ()


@pytest.mark.parametrize("new_front", [{"status": "draft"}, {"valid_from": "2027-01-01"}])
def test_a_successor_that_is_not_valid_yet_supersedes_nothing(build: Build, new_front: dict[str, str]) -> None:
    ws = build(supersession_corpus("oil-schedule", new_front=new_front))
    old, new = lead(ws, "old.md"), lead(ws, "new.md")
    packet = ws.query("gearbox oil schedule", as_of=AS_OF)
    assert ids(packet) == [old]
    assert [gone_id for gone_id, _ in excluded(packet)] == [new]


def test_a_supersession_chain_leads_to_its_current_head(build: Build) -> None:
    ws = build(
        {
            "a.md": md("Kiln schedule v1", "The xylokiln burner is relit weekly.", id="kiln-1"),
            "b.md": md("Kiln schedule v2", "Relight every ten days.", id="kiln-2", supersedes=["kiln-1"]),
            "c.md": md("Kiln schedule v3", "Relight every fortnight.", id="kiln-3", supersedes=["kiln-2"]),
        }
    )
    packet = ws.query("xylokiln burner", as_of=AS_OF)
    assert fused(ws, packet) == [lead(ws, "a.md")]
    assert ids(packet) == [lead(ws, "c.md")]
    assert {reason for _, reason in excluded(packet)} == {"superseded"}


LUBRICATION = (
    "The gearbox oil on line three must be changed every {months} months by a certified technician "
    "using the approved synthetic lubricant, and the drain plug gasket is replaced during the same visit "
    "so that no leaks appear between services; the technician records the batch of the lubricant, "
    "the torque applied to the drain plug and the colour of the old oil in the maintenance log."
)


def dedup_corpus(copy_months: int, **copy_front: Any) -> dict[str, str]:
    return {
        "handbook.md": md("Line three lubrication", LUBRICATION.format(months=12), authority="authoritative"),
        # the chat copy repeats the query words in its title, so the lanes rank it first
        "chat.md": md("Gearbox oil gearbox oil", LUBRICATION.format(months=copy_months), **copy_front),
    }


def test_near_duplicate_collapses_into_the_more_authoritative_copy(build: Build) -> None:
    ws = build(dedup_corpus(12, authority="informal"))
    handbook, chat = lead(ws, "handbook.md"), lead(ws, "chat.md")
    packet = ws.query("gearbox oil", as_of=AS_OF)
    assert fused(ws, packet) == [chat, handbook]
    assert ids(packet) == [handbook]
    assert item(packet, handbook).duplicates == (chat,)
    assert excluded(packet) == [(chat, "duplicate")]
    assert packet.exclusions["duplicate"] == 1


def test_near_copy_with_a_changed_number_is_not_collapsed(build: Build) -> None:
    ws = build(dedup_corpus(18, authority="informal"))
    handbook, chat = lead(ws, "handbook.md"), lead(ws, "chat.md")
    packet = ws.query("gearbox oil", as_of=AS_OF)
    assert set(ids(packet)) == {handbook, chat}
    assert all(e.duplicates == () for e in packet.evidence)
    assert "duplicate" not in packet.exclusions
    assert packet.excluded == ()


def test_copies_that_assert_different_values_are_not_collapsed(build: Build) -> None:
    ws = build(
        {
            "a.md": md("Line three lubrication", LUBRICATION.format(months=12), asserts={"oil_grade": "5W-30"}),
            "b.md": md("Line three lubrication", LUBRICATION.format(months=12), asserts={"oil_grade": "10W-40"}),
        }
    )
    packet = ws.query("gearbox oil", as_of=AS_OF)
    assert set(ids(packet)) == {lead(ws, "a.md"), lead(ws, "b.md")}
    assert "duplicate" not in packet.exclusions


def test_beyond_top_is_counted(build: Build) -> None:
    ws = build({f"n{i}.md": md(f"Gearbox {i}", f"Gearbox seal {i} is inspected by crew {i}.") for i in range(5)})
    packet = ws.query("gearbox seal", as_of=AS_OF, top=2)
    assert len(packet.evidence) == 2
    assert packet.exclusions["beyond_top"] == 3
    assert packet.exclusions["budget"] == 0
    assert ws.query("gearbox seal", as_of=AS_OF, top=5).exclusions.get("beyond_top", 0) == 0


def test_budget_left_outs_are_counted(build: Build) -> None:
    files = {f"n{i}.md": md(f"Gearbox {i}", f"Gearbox seal number {i} was inspected. " * 10) for i in range(5)}
    ws = build(files)
    packet = ws.query("gearbox seal", as_of=AS_OF, max_chars=2_500)
    assert not packet.abstained
    assert 1 <= len(packet.evidence) < 5
    assert packet.exclusions["budget"] == 5 - len(packet.evidence)
    assert packet.budget.used <= 2_500
    roomy = ws.query("gearbox seal", as_of=AS_OF)
    assert (len(roomy.evidence), roomy.exclusions["budget"]) == (5, 0)


# ---------------------------------------------------------------- abstention reasons


def test_empty_store_abstains(build: Build) -> None:
    packet = build({}).query("gearbox oil", as_of=AS_OF)
    assert (packet.abstained, packet.abstention_reason, packet.evidence) == (True, "empty_store", ())


POLICY_NOTES = {
    "returns.md": md("Returns", "Our returns policy: every policy change is announced."),
    "shipping.md": md("Shipping", "Shipping policy and status updates for parcels."),
}


@pytest.mark.parametrize("query", ["the of and", "?!", "policy", "Policy?", "status", "  policies  "])
def test_stopwords_or_one_generic_word_is_underspecified(build: Build, query: str) -> None:
    ws = build(POLICY_NOTES)
    packet = ws.query(query, as_of=AS_OF)
    assert (packet.abstained, packet.abstention_reason) == (True, "underspecified_query")
    assert packet.evidence == ()
    assert not ws.query("returns policy", as_of=AS_OF).abstained  # the notes do answer a real question


@pytest.mark.parametrize(("query", "path"), [("policy", "policy.md"), ("summary", "q3.md"), ("policy.md", "policy.md")])
def test_an_exact_note_id_is_not_underspecified(build: Build, query: str, path: str) -> None:
    ws = build(
        {
            **POLICY_NOTES,
            "policy.md": md("House rules", "Be kind to the couriers."),
            "q3.md": md("Third quarter", "Revenue grew.", id="summary"),
        }
    )
    packet = ws.query(query, as_of=AS_OF)
    assert not packet.abstained
    assert packet.evidence[0].id == lead(ws, path)
    assert packet.evidence[0].retrieved_by[0].lane == "identity"


def test_a_word_in_most_passages_is_generic(build: Build) -> None:
    common = {f"n{i}.md": md(f"Note {i}", f"The gearbox of press {i} is serviced.") for i in range(8)}
    packet = build(common).query("gearbox", as_of=AS_OF)
    assert packet.abstention_reason == "underspecified_query"
    few = {f"n{i}.md": md(f"Note {i}", f"The gearbox of press {i} is serviced.") for i in range(3)}
    rare = {f"r{i}.md": md(f"Other {i}", f"The conveyor {i} is serviced.") for i in range(5)}
    packet = build({**few, **rare}).query("gearbox", as_of=AS_OF)
    assert not packet.abstained
    assert len(packet.evidence) == 3


def test_unknown_words_are_no_match(build: Build) -> None:
    packet = build({"g.md": GEARBOX_OTHER}).query("xylophone quasar", as_of=AS_OF)
    assert (packet.abstained, packet.abstention_reason) == (True, "no_match")


def test_only_out_of_scope_matches_is_filtered_by_scope(build: Build) -> None:
    ws = build({"g.md": GEARBOX_OTHER, "t.md": md("Tenant kiln", "The kiln burner is relit.", scope="tenant-a")})
    packet = ws.query("kiln burner", as_of=AS_OF)
    assert (packet.abstained, packet.abstention_reason) == (True, "filtered_by_scope")
    assert packet.exclusions["scope"] == 1
    assert (packet.evidence, packet.excluded) == ((), ())
    assert ids(ws.query("kiln burner", as_of=AS_OF, scopes=["tenant-a"])) == [lead(ws, "t.md")]


def test_only_invalid_matches_is_filtered_by_validity(build: Build) -> None:
    ws = build({"g.md": GEARBOX_OTHER, "k.md": md("Kiln", "The kiln burner is relit.", valid_to="2026-01-01")})
    packet = ws.query("kiln burner", as_of=AS_OF)
    assert (packet.abstained, packet.abstention_reason) == (True, "filtered_by_validity")
    assert excluded(packet) == [(lead(ws, "k.md"), "expired")]
    assert not ws.query("kiln burner", as_of="2025-12-31").abstained


def unresolved_corpus(authority: str | None) -> dict[str, str]:
    extra = {"authority": authority} if authority else {}
    return {
        "a.md": md("Oil interval (plant A)", "The gearbox oil interval is fixed.", asserts={"oil_months": 12}, **extra),
        "b.md": md("Oil interval (plant B)", "The gearbox oil interval is fixed.", asserts={"oil_months": 18}, **extra),
        "c.md": md("Gearbox oil gearbox oil", "Gearbox oil gearbox oil interval notes without a value."),
    }


@pytest.mark.parametrize("authority", ["authoritative", "informal", None])
def test_same_authority_disagreement_is_unresolved(build: Build, authority: str | None) -> None:
    ws = build(unresolved_corpus(authority))
    a, b, c = lead(ws, "a.md"), lead(ws, "b.md"), lead(ws, "c.md")
    packet = ws.query("gearbox oil interval", as_of=AS_OF, top=2)
    assert fused(ws, packet)[0] == c  # ranked first, yet both sides keep their slots
    assert set(ids(packet)) == {a, b}
    assert (packet.abstained, packet.abstention_reason) == (True, "unresolved_conflict")
    (conflict,) = packet.conflicts
    assert conflict.proposition == "oil_months"
    assert (conflict.resolution, conflict.winner, conflict.required_behavior) == (
        "unresolved",
        None,
        "abstain_or_escalate",
    )
    assert {(s.ref, s.id, s.value) for s in conflict.evidence} == {
        (item(packet, a).ref, a, 12),
        (item(packet, b).ref, b, 18),
    }


@pytest.mark.parametrize(
    ("failure", "reason"),
    [(None, "not been built"), ("RuntimeError: boom: weights are corrupt", "boom: weights are corrupt")],
)
def test_dense_lane_that_cannot_run_is_index_unavailable(build: Build, failure: str | None, reason: str) -> None:
    ws = build({"g.md": GEARBOX_OTHER})  # identity + lexical only: no dense index was ever built
    if failure is not None:
        ws.lane_errors["dense"] = failure  # what indexing records when the embedder fails to load
    packet = ws.query("gearbox oil", as_of=AS_OF, lanes=["dense"])
    assert (packet.abstained, packet.abstention_reason) == (True, "index_unavailable")
    (dense,) = packet.lanes
    assert (dense.name, dense.status, dense.candidates) == ("dense", "unavailable", 0)
    assert dense.reason and reason in dense.reason
    assert not ws.query("gearbox oil", as_of=AS_OF).abstained


def test_nothing_fits_the_budget(build: Build) -> None:
    ws = build({"long.md": md("Gearbox", "gearbox oil " * 200)})
    packet = ws.query("gearbox oil", as_of=AS_OF, max_chars=1_000)
    assert (packet.abstained, packet.abstention_reason) == (True, "no_evidence_fits_budget")
    assert packet.exclusions["budget"] == 1
    assert packet.budget.used <= 1_000


@pytest.mark.slow
def test_dense_hits_under_the_cosine_threshold_are_below_threshold(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "bread.md").write_text(md("Baking", "Knead sourdough with flour, water and salt overnight."))
    with Workspace(notes, tmp_path / "store", lanes=("dense",), dense_min_cosine=0.9) as ws:
        ws.index()
        packet = ws.query("how to bake sourdough bread", as_of=AS_OF)
        (dense,) = packet.lanes
        assert (packet.abstained, packet.abstention_reason) == (True, "below_threshold")
        assert (dense.status, dense.candidates) == ("empty", 0)
        assert dense.reason and "below the threshold 0.90" in dense.reason
        ws.dense_min_cosine = 0.2
        assert not ws.query("how to bake sourdough bread", as_of=AS_OF).abstained


# ---------------------------------------------------------------- intents

ROLES = {
    "rule.md": md("Oil rule", "Gearbox oil interval in months.", authority="authoritative", asserts={"oil_months": 12}),
    "chat.md": md(
        "Oil chat", "Gearbox oil interval in months, says chat.", authority="informal", asserts={"oil_months": 6}
    ),
    "incident.md": md("Oil incident", "Gearbox oil interval missed: the bearing seized.", kind="failure"),
}


@pytest.mark.parametrize(
    ("intent", "roles"),
    [
        ("orient", ["current", "explanation", "counter"]),
        ("audit", ["current", "explanation", "counter"]),
        ("verify", ["current", "counter", "explanation"]),
        ("plan", ["current", "counter", "explanation"]),
    ],
)
def test_intent_orders_the_roles(build: Build, intent: str, roles: list[str]) -> None:
    ws = build(ROLES)
    packet = ws.query("gearbox oil interval", as_of=AS_OF, intent=intent)
    assert packet.intent == intent
    assert [e.role for e in packet.evidence] == roles
    assert [e.path for e in packet.evidence if e.role == "current"] == ["rule.md"]
    assert [e.path for e in packet.evidence if e.role == "counter"] == ["incident.md"]


def test_verify_puts_higher_authority_first_among_current_items(build: Build) -> None:
    ws = build(
        {
            "chat.md": md("Gearbox oil gearbox oil", "Gearbox oil: synthetic works.", authority="informal"),
            "wiki.md": md("Gearbox oil notes", "Gearbox oil: synthetic recommended.", authority="reference"),
            "spec.md": md("Lubrication spec", "Gearbox oil shall be synthetic.", authority="authoritative"),
        }
    )
    orient = ws.query("gearbox oil", as_of=AS_OF)
    assert [e.path for e in orient.evidence] == ["chat.md", "wiki.md", "spec.md"]  # relevance order
    verify = ws.query("gearbox oil", as_of=AS_OF, intent="verify")
    assert [e.path for e in verify.evidence] == ["spec.md", "wiki.md", "chat.md"]
    assert {e.role for e in verify.evidence} == {"current"}


@pytest.mark.parametrize("top", [1, 2])
def test_counter_evidence_keeps_a_reserved_slot(build: Build, top: int) -> None:
    files = {f"n{i}.md": md(f"Gearbox oil {i}", f"Gearbox oil gearbox oil change {i}.") for i in range(3)}
    files["incident.md"] = md("Seized bearing", "After an oil change the bearing seized.", kind="failure")
    ws = build(files)
    incident = lead(ws, "incident.md")
    packet = ws.query("gearbox oil change", as_of=AS_OF, top=top)
    assert fused(ws, packet)[-1] == incident  # ranked last
    assert len(packet.evidence) == top
    assert packet.evidence[0].id == fused(ws, packet)[0]
    assert packet.evidence[0].role == "current"
    if top == 1:  # a single slot goes to the best evidence, never to counter-evidence
        assert incident not in [e.id for e in packet.evidence]
    else:
        assert item(packet, incident).role == "counter"
        assert packet.evidence[-1].id == incident


@pytest.mark.parametrize("intent", ["Verify", "debug", "", "orient "])
def test_unknown_intent_is_an_input_error(build: Build, intent: str) -> None:
    ws = build({"g.md": GEARBOX_OTHER})
    with pytest.raises(InputError, match="intent"):
        ws.query("gearbox oil", as_of=AS_OF, intent=intent)


# ---------------------------------------------------------------- live checks


def orders_file(folder: Path, values: Any) -> Path:
    path = folder / "orders-api.json"
    path.write_text(json.dumps({"name": "orders-api", "checked_at": "2026-11-30T09:00:00Z", "values": values}))
    return path


def test_live_check_that_agrees_verifies_the_item(build: Build, tmp_path: Path) -> None:
    check = JsonSystemOfRecord(orders_file(tmp_path, {"order_4471.purchased_days_ago": 20}))
    ws = build(REFUND, live_checks=[check])
    packet = ws.query(REFUND_QUERY, as_of=AS_OF)
    order = item(packet, ORDER)
    assert order.live_verified is True
    assert "verified live against orders-api" in order.reason
    assert "order_4471.purchased_days_ago" in order.reason
    assert [e.id for e in packet.evidence if e.live_verified] == [ORDER]  # the check knows nothing else
    assert '"live_verified":true' in packet.to_json()


def test_live_check_that_disagrees_says_contradicted(build: Build, tmp_path: Path) -> None:
    path = orders_file(tmp_path, {"order_4471.purchased_days_ago": 20})
    ws = build(REFUND, live_checks=[JsonSystemOfRecord(path)])
    assert item(ws.query(REFUND_QUERY, as_of=AS_OF), ORDER).live_verified is True
    orders_file(tmp_path, {"order_4471.purchased_days_ago": 45})  # read afresh at every check
    order = item(ws.query(REFUND_QUERY, as_of=AS_OF), ORDER)
    assert order.live_verified is False
    assert "contradicted by orders-api" in order.reason
    assert "45" in order.reason


@pytest.mark.parametrize("content", [None, "{not json", '{"values": 3}', "[1, 2]"])
def test_unreadable_system_of_record_leaves_items_unverified(build: Build, tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "orders-api.json"
    if content is not None:
        path.write_text(content)
    ws = build(REFUND, live_checks=[JsonSystemOfRecord(path)])
    packet = ws.query(REFUND_QUERY, as_of=AS_OF)
    assert not packet.abstained
    assert all(e.live_verified is False for e in packet.evidence)
    assert "live check orders-api failed" in item(packet, ORDER).reason


# ---------------------------------------------------------------- ADR status lines

OLD_ADR = """# 4. Use Xylograph for diagrams

Date: 2020-11-19

## Status

⌛️ Superseded [0019](0019-use-yarrowplot.md)

## Context

We draw architecture diagrams with xylograph because it renders quickly.
"""
NEW_ADR = """# 19. Use Yarrowplot for diagrams

Date: 2021-03-02

## Status

✅ Accepted

## Context

Architecture diagrams are now drawn with yarrowplot, which supports layers.
"""


def test_adr_status_line_supersession(build: Build) -> None:
    ws = build({"adr/0004-use-xylograph.md": OLD_ADR, "adr/0019-use-yarrowplot.md": NEW_ADR})
    old_ids = {p.id for p in ws.records.passages_of("adr/0004-use-xylograph.md")}
    packet = ws.query("xylograph", as_of=AS_OF)
    assert not set(fused(ws, packet)) - old_ids  # the lanes found only the old ADR
    assert not packet.abstained
    (successor,) = packet.evidence
    assert successor.path == "adr/0019-use-yarrowplot.md"
    assert (successor.role, successor.status) == ("current", "current")
    assert "current successor of superseded" in successor.reason
    assert {pid for pid, _ in excluded(packet)} <= old_ids
    assert {reason for _, reason in excluded(packet)} == {"superseded"}
    assert packet.exclusions["superseded"] == len(packet.excluded) >= 1
    assert all("adr/0019-use-yarrowplot.md" in e.detail for e in packet.excluded)
    (conflict,) = packet.conflicts
    assert conflict.proposition == "supersession"
    assert conflict.winner == successor.id
    assert conflict.resolution.endswith(f", by={successor.ref})")
    assert conflict.required_behavior == "use_winner"
    assert {s.id for s in conflict.evidence} - {successor.id} <= old_ids


def test_naming_exclusions_never_displaces_evidence(build: Build) -> None:
    """Excluded items are named only with the budget the evidence left; the counts stay complete."""
    files = {
        f"r{i:02}.md": md(f"Gearbox proposal {i}", f"Gearbox oil proposal number {i}, rejected.", status="rejected")
        for i in range(20)
    }
    files["current.md"] = md("Gearbox oil", "Change the gearbox oil every 500 hours. " * 20)
    ws = build(files)
    wide = ws.query("gearbox oil", as_of=AS_OF, max_chars=20_000)
    assert [e.id for e in wide.evidence] == [lead(ws, "current.md")]
    assert len(wide.excluded) == 20 and wide.exclusions["rejected"] == 20
    tight_limit = wide.budget.used - 1_000  # enough for the evidence, not for every name
    tight = ws.query("gearbox oil", as_of=AS_OF, max_chars=tight_limit)
    assert [e.id for e in tight.evidence] == [lead(ws, "current.md")]
    assert not tight.evidence[0].truncated
    assert 0 < len(tight.excluded) < 20 and tight.exclusions["rejected"] == 20
    assert [e.id for e in tight.excluded] == [e.id for e in wide.excluded][: len(tight.excluded)]
    assert tight.size() == tight.budget.used <= tight_limit


def test_the_governing_passage_of_a_resolved_conflict_keeps_a_slot(build: Build) -> None:
    """With top=2: the best item, then the winner's passage that states the value, before counter-evidence."""
    ws = build(
        {
            "order.md": md("Order 9 gearbox refund", "Order 9 gearbox refund requested; bought 20 days ago."),
            "forum.md": md(
                "Forum", "Gearbox refund: we allow 60 days.", authority="informal", asserts={"refund_days": 60}
            ),
            "policy.md": "---\nauthority: authoritative\nasserts: {refund_days: 14}\n---\n# Policy\n\n"
            "## Scope\n\nThis policy covers every gearbox order refund and return.\n\n"
            "## Window\n\nA refund is possible up to 14 days after purchase.\n",
            "incident.md": md("Gearbox refund incident", "A gearbox refund job paid twice.", kind="failure"),
        }
    )
    packet = ws.query("gearbox order refund", as_of=AS_OF, top=2, intent="verify")
    ids = [e.id for e in packet.evidence]
    assert len(ids) == 2 and "policy#window" in ids  # the passage stating 14, not just the best-ranked one
    assert "incident#gearbox-refund-incident" not in ids
    (conflict,) = packet.conflicts
    assert conflict.resolution.startswith(f"authority({item(packet, 'policy#window').ref} over ")


def stock_report(day: str, units: int, **front: Any) -> str:
    return md(
        f"Stock report {day}",
        f"Gearbox oil stock counted on {day}: {units} drums in the store.",
        observed=day,
        kind="record",
        asserts={f"stock_{day.replace('-', '_')}.oil_drums": units},
        **front,
    )


def test_a_later_observation_of_the_same_series_replaces_an_older_one(build: Build) -> None:
    ws = build({"old.md": stock_report("2026-11-20", 40), "new.md": stock_report("2026-11-27", 31)})
    old, new = lead(ws, "old.md"), lead(ws, "new.md")
    packet = ws.query("gearbox oil stock drums", as_of=AS_OF)
    assert ids(packet) == [new]
    (gone,) = packet.excluded
    assert (gone.id, gone.reason) == (old, "superseded")
    assert gone.detail == "a later observation of the same series: new.md (observed 2026-11-27)"


def test_an_observation_is_current_until_the_next_one_is_observed(build: Build) -> None:
    ws = build({"old.md": stock_report("2026-11-20", 40), "new.md": stock_report("2026-11-27", 31)})
    packet = ws.query("gearbox oil stock drums", as_of="2026-11-24")
    assert lead(ws, "old.md") in ids(packet)  # the 27 November count is not observed yet at this clock
    assert packet.exclusions.get("superseded", 0) == 0


@pytest.mark.parametrize(
    "front",
    [{"kind": "policy"}, {"asserts": {"store.oil_drums_minimum": 10}}],
    ids=["not an observation", "another series"],
)
def test_only_the_same_series_of_observations_replaces(build: Build, front: dict[str, Any]) -> None:
    newer = (
        stock_report("2026-11-27", 31)
        if "asserts" not in front
        else md("Stock rule", "Gearbox oil stock: keep 10 drums.", observed="2026-11-27", kind="record", **front)
    )
    if "kind" in front:
        newer = newer.replace("kind: record", "kind: policy")
    ws = build({"old.md": stock_report("2026-11-20", 40), "new.md": newer})
    packet = ws.query("gearbox oil stock drums", as_of=AS_OF)
    assert lead(ws, "old.md") in ids(packet)
    assert packet.exclusions.get("superseded", 0) == 0


def daily_status(day: str, lines: dict[str, Any]) -> str:
    stamp = day.replace("-", "_")
    body = " ".join(f"{name.replace('_', ' ')}: {value}." for name, value in lines.items())
    return md(
        f"Daily status {day}",
        f"Gearbox bay status: {body}",
        observed=day,
        kind="record",
        asserts={f"{stamp}.{name}": value for name, value in lines.items()},
    )


@pytest.mark.parametrize(
    ("newer", "replaced"),
    [
        ({"bay_open": True, "oil_drums": 31, "crane_route": "B"}, True),  # the same lines
        ({"bay_reopens": "2026-11-30", "oil_drums": 31, "crane_route": "B"}, True),  # one line changed
        ({"oil_drums": 31, "forklift_hours": 3, "paint_stock": 2, "welder_free": True}, False),  # one line shared
    ],
    ids=["same lines", "a line changed", "another report"],
)
def test_a_daily_status_whose_lines_change_is_still_one_series(
    build: Build, newer: dict[str, Any], replaced: bool
) -> None:
    older = daily_status("2026-11-20", {"bay_open": False, "oil_drums": 40, "crane_route": "A"})
    ws = build({"status-1.md": older, "status-2.md": daily_status("2026-11-27", newer)})
    packet = ws.query("gearbox bay status oil drums", as_of=AS_OF)
    assert (lead(ws, "status-1.md") in ids(packet)) is not replaced
    assert packet.exclusions.get("superseded", 0) == int(replaced)


def test_a_dated_log_whose_lines_change_more_than_half_is_still_one_series(build: Build) -> None:
    # A harbour log records what happened that day: only two of its five lines are in both logs.
    older = daily_status("2026-11-20", {"oil_drums": 40, "crane_route": "A", "gate_fobs_issued": 7})
    newer = daily_status("2026-11-27", {"oil_drums": 31, "crane_route": "B", "pump_outs": 6, "incidents": 1})
    ws = build({"logs/bay-log-2026-11-20.md": older, "logs/bay-log-2026-11-27.md": newer})
    packet = ws.query("gearbox bay status oil drums", as_of=AS_OF)
    assert lead(ws, "logs/bay-log-2026-11-20.md") not in ids(packet)
    assert packet.exclusions.get("superseded", 0) == 1
    other_names = build({"status-1.md": older, "status-2.md": newer})  # no date in the names: two reports
    assert lead(other_names, "status-1.md") in ids(other_names.query("gearbox bay status oil drums", as_of=AS_OF))


def test_a_note_sharing_a_fact_brings_only_the_passage_that_states_it(build: Build) -> None:
    rule = md("Gearbox oil", "Change the gearbox oil every 500 hours.", asserts={"gearbox.oil_change_hours": 500})
    handbook = (
        "---\nasserts:\n  gearbox.oil_change_hours: 500\n---\n# Workshop handbook\n\n"
        "## Service intervals\n\nThe gearbox gets fresh oil at 500 hours.\n\n"
        "## Canteen\n\nThe canteen opens at noon; gearbox fitters eat first.\n"
    )
    ws = build({"rule.md": rule, "handbook.md": handbook})
    intervals, canteen = (p.id for p in ws.records.passages_of("handbook.md")[-2:])
    packet = ws.query("how often is the gearbox oil changed", as_of=AS_OF)
    assert intervals in ids(packet)
    assert canteen not in ids(packet)


def test_a_superseded_note_set_aside_before_the_pool_still_shows_its_supersession(build: Build) -> None:
    old = md(
        "Hydrant records",
        "Crews record every new hydrant they install in the GIS, the hydrant register of record.",
        status="superseded",
        superseded_by=["cmms.md"],
    )
    new = md(
        "Asset registry",
        "Asset records now live in the maintenance system. The finance register and the drawings follow it. "
        "Field teams update it from tablets after each job; crews get read access.",
        supersedes=["gis.md"],
    )
    fillers = {
        f"shift-{n}.md": md(f"Shift {n}", f"Crews record each new hydrant they install on shift {n} in the shift log.")
        for n in range(10)
    }
    ws = build({"gis.md": old, "cmms.md": new, **fillers})  # ten current notes fill the conflict window first
    packet = ws.query("Where do crews record a new hydrant they install?", as_of=AS_OF)
    assert fused(ws, packet)[-1] == lead(ws, "gis.md")  # set aside: never current, ranked after the pool
    supersessions = [c for c in packet.to_dict()["conflicts"] if c["proposition"] == "supersession"]
    assert [c["resolution"] for c in supersessions] == [f"superseded({lead(ws, 'gis.md')}, by=e8)"]


def test_the_notes_that_answer_best_are_in_play_wherever_fusion_ranked_them() -> None:
    eligible = [SimpleNamespace(id=f"note-{i}#section", path=f"note-{i}.md") for i in range(12)]
    judged = Judgement(0.9, 0.5, {"note-11#section": 0.9, "note-0#section": 0.5, "note-5#section": 0.01}, 0.3)
    assert _answering_in_play(eligible, judged, top=8) == {"note-11.md", "note-0.md"}  # ranked 12th, answers best
    assert _answering_in_play(eligible, judged, top=1) == {"note-11.md"}
    assert _answering_in_play(eligible, Judgement(0.1, 0.5, {"note-11#section": 0.9}, 0.3), top=8) == set()
