"""The identity lane: exact identifiers resolve first and lead the packet."""

from __future__ import annotations

import hashlib

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.output.packet import LaneHit, Packet
from retrieval_kernel.pipeline.identity import MIN_HASH_PREFIX, resolve

AS_OF = "2026-10-15"

DEPLOY = (
    "---\n"
    "id: deploy-runbook\n"
    "aliases: [foo-alias, Release Guide]\n"
    "---\n"
    "# Deploy runbook\n"
    "\n"
    "## Window\n"
    "\n"
    "Changes ship on Tuesday mornings.\n"
    "\n"
    "## Rollback\n"
    "\n"
    "Redeploy the previous tag to undo a bad release.\n"
)
TEAM = "---\naliases: team-alias\n---\n# Team\n\nThe platform crew owns the pipeline tooling.\n"
# Lexically this note beats the named ones for every word that appears in their identifiers.
NOISE = (
    "# Deploy rollback window runbook\n\n"
    "Deploy deploy rollback rollback window window runbook runbook team team ops ops alias alias "
    "foo foo release release guide guide tuesday tuesday.\n"
)
DEPLOY_IDS = ["deploy-runbook#window", "deploy-runbook#rollback"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("identity")
    notes = root / "notes"
    (notes / "ops").mkdir(parents=True)
    (notes / "ops" / "deploy.md").write_text(DEPLOY, encoding="utf-8")
    (notes / "team.md").write_text(TEAM, encoding="utf-8")
    (notes / "noise.md").write_text(NOISE, encoding="utf-8")
    ws = Workspace(notes, root / "store", lanes=("identity", "lexical"))
    ws.index()
    yield ws
    ws.close()


def sha_of(ws: Workspace, passage_id: str) -> str:
    stored = ws.records.passages([passage_id])[passage_id]
    assert stored.passage.sha256 == hashlib.sha256(stored.passage.text.encode("utf-8")).hexdigest()
    return stored.passage.sha256


def lane(packet: Packet, name: str):
    return next(report for report in packet.lanes if report.name == name)


def test_fixture_passages_are_as_expected(workspace: Workspace) -> None:
    assert sorted(workspace.records.passages()) == sorted(
        [*DEPLOY_IDS, "team#team", "noise#deploy-rollback-window-runbook"]
    )


@pytest.mark.parametrize(
    ("query", "expected", "kind"),
    [
        ("deploy-runbook#rollback", ["deploy-runbook#rollback"], "passage id"),
        ("deploy-runbook", DEPLOY_IDS, "note id"),
        ("DEPLOY-RUNBOOK", DEPLOY_IDS, "note id"),
        ("foo-alias", DEPLOY_IDS, "alias"),
        ("Release Guide", DEPLOY_IDS, "alias"),
        ("team-alias", ["team#team"], "alias"),
        ("ops/deploy.md", DEPLOY_IDS, "path"),
        ("ops/deploy", DEPLOY_IDS, "path"),
        ("team.md", ["team#team"], "path"),
    ],
)
def test_identifier_resolves_and_leads_the_packet(
    workspace: Workspace, query: str, expected: list[str], kind: str
) -> None:
    hits = resolve(query, workspace.records, 50)
    assert [hit.passage_id for hit in hits] == expected
    assert {hit.kind for hit in hits} == {kind}

    packet = workspace.query(query, as_of=AS_OF)
    assert not packet.abstained
    ids = [item.id for item in packet.evidence]
    # the named passages lead; a whole note's passages in the order the query fits them
    assert sorted(ids[: len(expected)]) == sorted(expected)
    identity_ranks = [
        hit.rank for item in packet.evidence[: len(expected)] for hit in item.retrieved_by if hit.lane == "identity"
    ]
    assert sorted(identity_ranks) == list(range(1, len(expected) + 1))
    assert LaneHit("identity", 1, 1.0) in packet.evidence[ids.index(expected[0])].retrieved_by
    identity = lane(packet, "identity")
    assert (identity.status, identity.candidates) == ("ok", len(expected))


def test_identity_beats_the_lexically_stronger_note(workspace: Workspace) -> None:
    packet = workspace.query("deploy-runbook#rollback", as_of=AS_OF, lanes=["lexical"])
    assert packet.evidence[0].id == "noise#deploy-rollback-window-runbook"  # lexical alone prefers the noise
    packet = workspace.query("deploy-runbook#rollback", as_of=AS_OF)
    assert packet.evidence[0].id == "deploy-runbook#rollback"


def test_content_hash_prefix_of_ten_hex_digits_resolves(workspace: Workspace) -> None:
    prefix = sha_of(workspace, "deploy-runbook#rollback")[:10]
    hits = resolve(prefix, workspace.records, 50)
    assert [(hit.passage_id, hit.kind, hit.matched) for hit in hits] == [
        ("deploy-runbook#rollback", "content hash", prefix)
    ]
    packet = workspace.query(prefix, as_of=AS_OF)
    assert packet.evidence[0].id == "deploy-runbook#rollback"
    assert LaneHit("identity", 1, 1.0) in packet.evidence[0].retrieved_by


def test_hash_prefix_boundary_is_eight_hex_digits(workspace: Workspace) -> None:
    assert MIN_HASH_PREFIX == 8
    digest = sha_of(workspace, "team#team")
    assert [hit.passage_id for hit in resolve(digest[:8], workspace.records, 50)] == ["team#team"]
    assert resolve(digest[:7], workspace.records, 50) == []
    packet = workspace.query(digest[:7], as_of=AS_OF)
    assert lane(packet, "identity").status == "empty"
    assert all(LaneHit("identity", 1, 1.0) not in item.retrieved_by for item in packet.evidence)


def test_full_hash_resolves(workspace: Workspace) -> None:
    digest = sha_of(workspace, "deploy-runbook#window")
    assert [hit.passage_id for hit in resolve(digest, workspace.records, 50)] == ["deploy-runbook#window"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("`deploy-runbook#rollback`", "deploy-runbook#rollback"),
        ('"deploy-runbook#rollback"', "deploy-runbook#rollback"),
        ("'foo-alias'", "deploy-runbook#window"),
        ("team-alias?", "team#team"),
        ('"team-alias"?', "team#team"),
        ("ops/deploy.md?", "deploy-runbook#window"),
        ("what does `team.md` say?", "team#team"),
        ("show me deploy-runbook#rollback, please", "deploy-runbook#rollback"),
    ],
)
def test_wrapped_identifiers_still_resolve(workspace: Workspace, query: str, expected: str) -> None:
    packet = workspace.query(query, as_of=AS_OF)
    assert packet.evidence[0].id == expected
    assert packet.evidence[0].retrieved_by[0] == LaneHit("identity", 1, 1.0)


def test_wrapped_hash_prefix_resolves(workspace: Workspace) -> None:
    prefix = sha_of(workspace, "team#team")[:12]
    packet = workspace.query(f"`{prefix}`?", as_of=AS_OF)
    assert packet.evidence[0].id == "team#team"
    assert lane(packet, "identity").status == "ok"


@pytest.mark.parametrize("query", ["pipeline tooling", "deploy-runbook#nothing-here", "foo alias", "ops/deploy.txt"])
def test_query_naming_nothing_leaves_identity_empty(workspace: Workspace, query: str) -> None:
    assert resolve(query, workspace.records, 50) == []
    packet = workspace.query(query, as_of=AS_OF)
    identity = lane(packet, "identity")
    assert identity.status == "empty"
    assert identity.candidates == 0
    assert identity.reason
    for item in packet.evidence:
        assert all(hit.lane != "identity" for hit in item.retrieved_by)


def test_limit_caps_identity_hits(workspace: Workspace) -> None:
    assert [hit.passage_id for hit in resolve("deploy-runbook", workspace.records, 1)] == DEPLOY_IDS[:1]


def test_a_named_notes_passages_lead_in_the_order_the_question_fits_them(tmp_path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "climate.md").write_text(
        "---\nid: climate-standard\naliases: [Palm House]\n---\n# Glasshouse climate standard\n\n"
        "## Temperatures\n\nThe Palm House is run at 20 to 28 degrees by day.\n\n"
        "## Misting\n\nThe Palm House misting lines come on at 11:00 and at 15:00.\n",
        encoding="utf-8",
    )
    (notes / "other.md").write_text("# Opening hours\n\nThe garden opens at 10:00.\n", encoding="utf-8")
    with Workspace(notes, tmp_path / "store", lanes=("identity", "lexical")) as ws:
        ws.index()
        named = [c.id for c in ws.retrieve("At what times do the Palm House misting lines come on?")]
        by_id = [c.id for c in ws.retrieve("climate-standard#temperatures and the misting lines")]
    assert named[:2] == ["climate-standard#misting", "climate-standard#temperatures"]  # both named, misting fits
    assert by_id[0] == "climate-standard#temperatures"  # a passage named by its own id still comes first
