"""Scope isolation: a note outside the caller's scopes never leaks, and never shapes what the caller sees.

The corpus has public notes, notes of tenant-a, of tenant-b and one shared by both.
For each caller, the hidden notes' ids, paths, aliases, titles and distinctive words
must be absent from every rendering of the packet, the stored trace, the conflicts
and the excluded list; only ``exclusions["scope"]`` may count them. A reference
workspace over the same notes with the hidden files deleted must give the same
admitted evidence and the same lane candidate counts.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_kernel import Workspace
from retrieval_kernel.output.packet import MAX_BUDGET, Packet
from retrieval_kernel.pipeline.answerability import JUDGED
from retrieval_kernel.pipeline.requests import MAX_TOP

FAST = ("identity", "lexical")
AS_OF = "2026-11-30"


def md(title: str, body: str, **front: Any) -> str:
    head = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n" if front else ""
    return f"{head}# {title}\n\n{body}\n"


SHIPPING = (
    "Parcels ship within two working days from the central warehouse; shipping costs are refunded on request "
    "when an order arrives damaged, and the courier collects returns from the front desk every weekday morning "
    "before the loading bay opens to the delivery vans."
)

PUBLIC = {
    "public/refunds.md": md(
        "Refund window",
        "Customers may request a refund within 30 days of purchase. Refunds go back to the original card.",
        id="refund-policy",
        authority="authoritative",
        asserts={"refund_window_days": 30},
    ),
    "public/shipping.md": md("Shipping times", SHIPPING, authority="reference"),
    "public/gearbox.md": md(
        "Gearbox maintenance", "Gearbox oil is changed every spring; spare parts are ordered through purchasing."
    ),
    "public/onboarding.md": md("Onboarding checklist", "New staff read the refund rules and the gearbox safety sheet."),
    "public/lamps.md": md("Lamp care", "Lantern wicks: each lantern is trimmed weekly."),
    "public/harbour.md": md("Harbour transport", "The ferry leaves hourly."),
}
TENANT_A = {
    "tenant-a/kestrel-memo.md": md(
        "Zephyrine acquisition memo",
        "The zephyrine merger grants quillfeather customers a refund within 90 days of purchase. "
        "The lantern in the lantern room stays lit.",
        id="kestrel-memo",
        aliases=["project-kestrel"],
        scope="tenant-a",
        authority="authoritative",
        asserts={"refund_window_days": 90},
        supersedes=["refund-policy"],
    ),
    "tenant-a/quarry.md": md(
        "Sorrelmoss quarry audit",
        "Lantern audit at the sorrelmoss quarry: gearbox oil of the crusher, lantern count, ferry schedule.",
        id="quarry-sorrelmoss",
        scope=["tenant-a"],
    ),
}
TENANT_B = {
    "tenant-b/obsidian-ledger.md": md(
        "Marrowstone ledger",
        "Tundrawick accounts: gearbox oil purchase ledger, refund within 30 days; lantern stock counted.",
        id="obsidian-ledger",
        aliases=["bluefinch"],
        scope=["tenant-b"],
        authority="authoritative",
        asserts={"refund_window_days": 45},
    ),
    # a near-copy of the public shipping note, more authoritative: it must never collapse the public one
    "tenant-b/brackenfold.md": md(
        "Brackenfold dispatch", SHIPPING, id="brackenfold-dispatch", scope="tenant-b", authority="authoritative"
    ),
}
SHARED = {
    "shared/wrenfield.md": md(
        "Wrenfield partnership terms",
        "Wrenfield partners may request a refund of lantern deposits; gearbox leases renew yearly.",
        id="partner-wrenfield",
        aliases=["wrenfield-terms"],
        scope=["tenant-a", "tenant-b"],
    ),
}
CORPUS = {**PUBLIC, **TENANT_A, **TENANT_B, **SHARED}

# What identifies each scoped note: id, path, alias, title, distinctive words.
SECRETS: dict[str, tuple[str, ...]] = {
    "tenant-a/kestrel-memo.md": ("kestrel", "Zephyrine acquisition memo", "zephyrine", "quillfeather"),
    "tenant-a/quarry.md": ("quarry-sorrelmoss", "tenant-a/quarry", "Sorrelmoss quarry audit", "sorrelmoss"),
    "tenant-b/obsidian-ledger.md": ("obsidian-ledger", "bluefinch", "Marrowstone", "tundrawick"),
    "tenant-b/brackenfold.md": ("brackenfold", "tenant-b/", "Brackenfold dispatch"),
    "shared/wrenfield.md": ("wrenfield", "shared/", "partnership terms"),
}
CALLERS: dict[str, tuple[str, ...]] = {"none": (), "tenant-a": ("tenant-a",), "tenant-b": ("tenant-b",), "all": ("*",)}
HIDDEN_FROM: dict[str, tuple[str, ...]] = {
    "none": (*TENANT_A, *TENANT_B, *SHARED),
    "tenant-a": tuple(TENANT_B),
    "tenant-b": tuple(TENANT_A),
    "all": (),
}


def write(folder: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Workspace]]:
    """``"full"``: the whole corpus; one reference per caller with that caller's hidden notes deleted."""
    opened: dict[str, Workspace] = {}
    for name, hidden in [("full", ()), *HIDDEN_FROM.items()]:
        root = tmp_path_factory.mktemp(f"scope-{name}")
        files = {path: text for path, text in CORPUS.items() if path not in hidden}
        ws = Workspace(write(root / "notes", files), store_dir=root / "store", lanes=FAST)
        ws.index()
        opened[name] = ws
    yield opened
    for ws in opened.values():
        ws.close()


def hidden_passages(ws: Workspace, caller: str) -> dict[str, str]:
    """Passage id -> sha256 of every passage the caller may not see."""
    return {p.id: p.sha256 for path in HIDDEN_FROM[caller] for p in ws.records.passages_of(path)}


def surfaces(ws: Workspace, packet: Packet) -> dict[str, str]:
    """Every text a caller can get from a packet, with the caller's own query blanked out."""
    own = dataclasses.replace(packet, query="QUERY")
    trace = ws.trace(packet.trace_id)
    assert trace is not None
    return {
        "json": own.to_json(),
        "html": own._repr_html_(),
        "markdown": own._repr_markdown_(),
        "text": str(own),
        "repr": repr(own),
        "csv": own.to_frame().to_csv(),
        "trace": json.dumps(trace, ensure_ascii=False),
        "conflicts": json.dumps([dataclasses.asdict(c) for c in packet.conflicts], ensure_ascii=False),
        "excluded": json.dumps([dataclasses.asdict(e) for e in packet.excluded], ensure_ascii=False),
    }


def assert_no_leak(ws: Workspace, packet: Packet, caller: str) -> None:
    hidden = hidden_passages(ws, caller)
    needles = {needle.lower() for path in HIDDEN_FROM[caller] for needle in (path, *SECRETS[path])}
    needles |= {pid.lower() for pid in hidden} | {sha[:12] for sha in hidden.values()}
    for where, text in surfaces(ws, packet).items():
        lowered = text.lower()
        leaked = sorted(needle for needle in needles if needle in lowered)
        assert not leaked, f"{caller!r} sees {leaked} in the packet's {where}"
    assert not {e.id for e in packet.evidence} & set(hidden)
    assert not {d for e in packet.evidence for d in e.duplicates} & set(hidden)
    assert not {s.id for c in packet.conflicts for s in c.evidence} & set(hidden)
    assert not {e.id for e in packet.excluded} & set(hidden)


def lane_hits(ws: Workspace, packet: Packet) -> set[str]:
    trace = ws.trace(packet.trace_id)
    assert trace is not None
    return {pid for lane in trace["lanes"] for pid, _, _ in lane["candidates"]}


def conflict_keys(packet: Packet) -> list[tuple[Any, ...]]:
    """Conflicts without their evidence refs (which follow the packet order)."""
    keys = [
        (c.proposition, c.resolution.split("(")[0], c.winner, c.required_behavior, sorted(s.id for s in c.evidence))
        for c in packet.conflicts
    ]
    return sorted(keys)


def without_scope(counts: Mapping[str, int]) -> dict[str, int]:
    return {code: count for code, count in counts.items() if code != "scope"}


def check_caller(workspaces: dict[str, Workspace], query: str, caller: str) -> Packet:
    """The packet for ``caller``; asserts no leak and that only the scope count notices hidden notes."""
    full = workspaces["full"]
    packet = full.query(query, as_of=AS_OF, scopes=CALLERS[caller], top=MAX_TOP, max_chars=MAX_BUDGET)
    assert_no_leak(full, packet, caller)
    hidden = hidden_passages(full, caller)
    everyone = full.query(query, as_of=AS_OF, scopes=["*"], top=MAX_TOP, max_chars=MAX_BUDGET)
    assert packet.exclusions["scope"] == len(lane_hits(full, everyone) & set(hidden))
    reference = workspaces[caller].query(query, as_of=AS_OF, scopes=CALLERS[caller], top=MAX_TOP, max_chars=MAX_BUDGET)
    assert reference.exclusions["scope"] == 0
    assert [(lane.name, lane.status, lane.candidates) for lane in packet.lanes] == [
        (lane.name, lane.status, lane.candidates) for lane in reference.lanes
    ]
    assert lane_hits(full, packet) == lane_hits(workspaces[caller], reference)
    assert leading(full, query, caller) == leading(workspaces[caller], query, caller)  # hidden notes reorder nothing
    assert packet.confidence == reference.confidence  # judged from what the caller sees only
    if packet.abstention_reason == "filtered_by_scope":
        # Out of reach: notes outside the caller's scopes answer far better than anything visible, so
        # the packet shows nothing and says so; no hidden note is named (assert_no_leak above).
        assert packet.evidence == ()
        return packet
    assert without_scope(packet.exclusions) == without_scope(reference.exclusions)
    assert {e.id for e in packet.evidence} == {e.id for e in reference.evidence}
    assert {(e.id, e.role) for e in packet.evidence} == {(e.id, e.role) for e in reference.evidence}
    assert conflict_keys(packet) == conflict_keys(reference)
    assert sorted(map(dataclasses.astuple, packet.excluded)) == sorted(map(dataclasses.astuple, reference.excluded))
    if packet.abstention_reason != "filtered_by_scope":
        assert packet.abstention_reason == reference.abstention_reason
    return packet


def leading(ws: Workspace, query: str, caller: str) -> list[str]:
    """The caller's leading candidates in fused order (what the answerability judgement reads)."""
    return [candidate.id for candidate in ws.retrieve(query, scopes=CALLERS[caller])][:JUDGED]


def identity_queries(ws: Workspace) -> list[str]:
    """Queries that name a scoped note exactly: id, alias, path, path stem, passage id, hash prefix."""
    out: list[str] = []
    for path in (*TENANT_A, *TENANT_B, *SHARED):
        document = ws.records.documents()[path]
        aliases = document.metadata.get("aliases") or []
        passages = ws.records.passages_of(path)
        out += [document.module, path, path.removesuffix(".md"), *aliases, passages[0].id, passages[0].sha256[:12]]
    return out


FIXED_QUERIES = [
    "refund purchase days",
    "refund window",
    "gearbox oil",
    "lantern ferry",
    "shipping costs refunded damaged",
    "parcels courier warehouse",
    "zephyrine merger",
    "marrowstone tundrawick ledger",
    "wrenfield partners deposits",
    "kestrel-memo refund",
    "project-kestrel gearbox",
    "bluefinch shipping",
    "refund_window_days",
]


# ---------------------------------------------------------------- no leak, fixed queries


@pytest.mark.parametrize("caller", ["none", "tenant-a", "tenant-b"])
def test_fixed_and_identity_queries_never_leak(workspaces: dict[str, Workspace], caller: str) -> None:
    for query in [*FIXED_QUERIES, *identity_queries(workspaces["full"])]:
        check_caller(workspaces, query, caller)


@pytest.mark.parametrize("caller", ["none", "tenant-a", "tenant-b"])
def test_naming_a_hidden_note_finds_nothing_and_only_counts_it(workspaces: dict[str, Workspace], caller: str) -> None:
    full = workspaces["full"]
    for path in HIDDEN_FROM[caller]:
        for query in [full.records.documents()[path].module, path]:
            packet = check_caller(workspaces, query, caller)
            assert (packet.abstained, packet.abstention_reason) == (True, "filtered_by_scope"), query
            assert packet.exclusions["scope"] >= 1
            assert packet.evidence == packet.excluded == packet.conflicts == ()
            identity = next(lane for lane in packet.lanes if lane.name == "identity")
            assert (identity.status, identity.candidates) == ("empty", 0)


def test_callers_see_their_own_scoped_notes(workspaces: dict[str, Workspace]) -> None:
    full = workspaces["full"]
    for caller, scopes in CALLERS.items():
        for path in (*TENANT_A, *TENANT_B, *SHARED):
            note_id = full.records.documents()[path].module
            packet = full.query(note_id, as_of=AS_OF, scopes=scopes)
            visible = path not in HIDDEN_FROM[caller]
            assert any(e.path == path for e in packet.evidence) == visible, (caller, path)
            assert packet.exclusions["scope"] == (0 if visible else len(full.records.passages_of(path)))


def test_a_hidden_successor_does_not_supersede_a_public_note(workspaces: dict[str, Workspace]) -> None:
    full = workspaces["full"]
    public = full.query("refund purchase days", as_of=AS_OF)
    refund = next(e for e in public.evidence if e.path == "public/refunds.md")
    assert (refund.role, refund.status) == ("current", None)
    assert "superseded" not in public.exclusions
    assert not [c for c in public.conflicts if c.proposition == "refund_window_days"]
    tenant_a = full.query("refund purchase days", as_of=AS_OF, scopes=["tenant-a"])
    assert [(e.path, e.reason) for e in tenant_a.excluded] == [("public/refunds.md", "superseded")]
    assert any(c.resolution.startswith("superseded(") for c in tenant_a.conflicts)


def test_a_hidden_near_copy_never_collapses_a_visible_note(workspaces: dict[str, Workspace]) -> None:
    full = workspaces["full"]
    public = full.query("parcels courier warehouse", as_of=AS_OF)
    (shipping,) = [e for e in public.evidence if e.path == "public/shipping.md"]
    assert shipping.duplicates == ()
    tenant_b = full.query("parcels courier warehouse", as_of=AS_OF, scopes=["tenant-b"])
    assert [e.path for e in tenant_b.evidence] == ["tenant-b/brackenfold.md"]
    assert [(e.path, e.reason) for e in tenant_b.excluded] == [("public/shipping.md", "duplicate")]


def test_scope_star_sees_everything(workspaces: dict[str, Workspace]) -> None:
    full = workspaces["full"]
    packet = full.query("lantern refund gearbox", as_of=AS_OF, scopes="*", top=MAX_TOP)
    assert packet.exclusions["scope"] == 0
    seen = {e.path for e in packet.evidence} | {e.path for e in packet.excluded}
    assert {"tenant-a/kestrel-memo.md", "tenant-a/quarry.md", "tenant-b/obsidian-ledger.md"} <= seen
    assert "shared/wrenfield.md" in seen
    assert packet.scopes == ("*",)
    assert any("zephyrine" in e.excerpt for e in packet.evidence)


# ---------------------------------------------------------------- no leak, generated queries

VOCABULARY = sorted(
    {word for text in CORPUS.values() for word in re.findall(r"[A-Za-z0-9][\w\-./#@]*[\w]", text)}
    | {path for path in CORPUS}
)
queries = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4).map(" ".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=queries, caller=st.sampled_from(["none", "tenant-a", "tenant-b"]))
def test_generated_queries_never_leak(workspaces: dict[str, Workspace], query: str, caller: str) -> None:
    full = workspaces["full"]
    packet = full.query(query, as_of=AS_OF, scopes=CALLERS[caller])
    assert_no_leak(full, packet, caller)
    assert packet.exclusions["scope"] <= len(hidden_passages(full, caller))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=queries, caller=st.sampled_from(["none", "tenant-a", "tenant-b"]))
def test_generated_queries_admit_the_same_set_as_without_the_hidden_notes(
    workspaces: dict[str, Workspace], query: str, caller: str
) -> None:
    check_caller(workspaces, query, caller)


# ---------------------------------------------------------------- ranking and bugs


# An xfail until 2026-12-04: the lexical lane scored with BM25 statistics of the whole index, hidden notes
# included ('lantern' is frequent in hidden notes, which lowered its idf for everyone). They are the
# caller's statistics now (CompiledLexicon._counted).
def test_hidden_notes_never_change_the_visible_order(workspaces: dict[str, Workspace]) -> None:
    full = workspaces["full"]
    reordered = []
    for caller in ("none", "tenant-a", "tenant-b"):
        for query in [*FIXED_QUERIES, *identity_queries(full)]:
            packet = full.query(query, as_of=AS_OF, scopes=CALLERS[caller])
            if packet.abstention_reason == "filtered_by_scope":  # said on purpose: the answer is out of reach
                continue
            got = [e.id for e in packet.evidence]
            want = [e.id for e in workspaces[caller].query(query, as_of=AS_OF, scopes=CALLERS[caller]).evidence]
            if got != want:
                reordered.append((caller, query, got, want))
    assert reordered == []


# An xfail until 2026-12-04 (as above): hidden notes swapped the caller's first two candidates for this
# query (found by the generated-queries test), so the judgement, which reads its top candidate's coverage
# and agreement, gave another confidence (0.7955 against 0.7729).
def test_hidden_notes_never_change_the_confidence(workspaces: dict[str, Workspace]) -> None:
    query, scopes = "Gearbox partnership purchase", CALLERS["tenant-a"]
    got = workspaces["full"].query(query, as_of=AS_OF, scopes=scopes)
    want = workspaces["tenant-a"].query(query, as_of=AS_OF, scopes=scopes)
    assert {e.id for e in got.evidence} == {e.id for e in want.evidence}  # holds: only the order moves
    assert got.confidence == want.confidence


# Failed (a known limitation, marked xfail) until the eighteenth attempt's refit: the passage model read
# signals that hidden notes' lexical statistics moved, so 7 candidates were judged weak against 5. With the
# refit (the "rarest word missed" weight at 0) they agree for this query.
def test_hidden_notes_never_change_which_candidates_are_weak(workspaces: dict[str, Workspace]) -> None:
    query, scopes = "45 oil refund", CALLERS["tenant-b"]
    got = workspaces["full"].query(query, as_of=AS_OF, scopes=scopes, top=MAX_TOP, max_chars=MAX_BUDGET)
    want = workspaces["tenant-b"].query(query, as_of=AS_OF, scopes=scopes, top=MAX_TOP, max_chars=MAX_BUDGET)
    assert lane_hits(workspaces["full"], got) == lane_hits(workspaces["tenant-b"], want)  # holds
    assert got.exclusions["weak_match"] == want.exclusions["weak_match"]


def test_hidden_notes_do_not_make_a_one_word_query_generic(workspaces: dict[str, Workspace]) -> None:
    reference = workspaces["none"].query("refund", as_of=AS_OF)
    assert not reference.abstained
    packet = workspaces["full"].query("refund", as_of=AS_OF)
    assert packet.abstention_reason == reference.abstention_reason
    assert [e.id for e in packet.evidence] == [e.id for e in reference.evidence]


@pytest.mark.parametrize(
    "secret",
    [
        md("Kestrel memo", "Zephyrine terms.", scope="tenant-a", authority="top-secret"),
        md("Kestrel memo", "Zephyrine terms.", scope="tenant-a", id="refund-policy"),
    ],
    ids=["unknown-authority", "id-already-used"],
)
def test_index_warnings_about_hidden_notes_do_not_reach_other_callers(tmp_path: Path, secret: str) -> None:
    notes = write(tmp_path / "notes", {**PUBLIC, "tenant-a/kestrel-memo.md": secret})
    with Workspace(notes, store_dir=tmp_path / "store", lanes=FAST) as ws:
        packet = ws.query("refund purchase days", as_of=AS_OF)  # this query indexes the notes
        assert not packet.abstained
        text = packet.to_json().lower() + str(packet).lower()
        assert "kestrel" not in text
        assert "tenant-a" not in text


# ---------------------------------------------------------------- the dense lane filters too


@pytest.fixture(scope="module")
def dense_ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """The whole corpus with the default lanes (identity, lexical, dense); loads the embedding model."""
    root = tmp_path_factory.mktemp("scope-dense")
    with Workspace(write(root / "notes", CORPUS), store_dir=root / "store") as ws:
        ws.index()
        yield ws


@pytest.mark.slow
def test_dense_lane_drops_hidden_notes_before_counting_and_ranking(dense_ws: Workspace) -> None:
    ws = dense_ws
    assert ws.lanes == ("identity", "lexical", "dense")
    query = "company acquisition and merger agreement"
    everyone = ws.query(query, as_of=AS_OF, scopes="*", lanes=["dense"], top=MAX_TOP)
    star_dense = lane_hits(ws, everyone)
    assert star_dense & set(hidden_passages(ws, "none")), "the hidden memo should be a dense hit for '*'"
    for caller in ("none", "tenant-b"):
        hidden = hidden_passages(ws, caller)
        packet = ws.query(query, as_of=AS_OF, scopes=CALLERS[caller], lanes=["dense"], top=MAX_TOP)
        assert_no_leak(ws, packet, caller)
        (dense,) = packet.lanes
        assert dense.name == "dense"
        assert dense.candidates == len(star_dense - set(hidden))
        assert lane_hits(ws, packet) == star_dense - set(hidden)
        assert packet.exclusions["scope"] >= 1
        everything = ws.query(query, as_of=AS_OF, scopes=CALLERS[caller], top=MAX_TOP)
        assert_no_leak(ws, everything, caller)
        assert {lane.name for lane in everything.lanes} == {"identity", "lexical", "dense"}


@pytest.mark.slow
def test_dense_scope_count_only_counts_hidden_hits_that_pass_the_threshold(dense_ws: Workspace) -> None:
    packet = dense_ws.query("zebra quantum physics", as_of=AS_OF, lanes=["dense"])
    everyone = dense_ws.query("zebra quantum physics", as_of=AS_OF, scopes="*", lanes=["dense"])
    assert everyone.abstention_reason == "below_threshold"
    assert packet.abstention_reason == "below_threshold"
    assert packet.exclusions["scope"] == 0
