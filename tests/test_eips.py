"""The Ethereum Improvement Proposals (../shared/corpora/ethereum-eips, 949 files, CC0), read in place.

Parse-only checks against metadata.jsonl on every file (status, created date, ``requires`` links), and
eligibility before the pool on a lexical-only index (never the dense model: 949 long files would take
many minutes to embed on CI's two cores).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.corpus.inventory import inventory
from retrieval_kernel.pipeline.eligibility import Eligibility

REPO_ROOT = Path(__file__).resolve().parents[1]
AS_OF = "2026-12-01"


def eip_root() -> Path:
    folder = Path(os.environ.get("RETRIEVAL_KERNEL_SHARED", REPO_ROOT.parent / "shared")) / "corpora" / "ethereum-eips"
    if not (folder / "notes").is_dir() or not (folder / "metadata.jsonl").is_file():
        pytest.skip(f"shared corpus ethereum-eips not found at {folder} (set RETRIEVAL_KERNEL_SHARED)")
    return folder


@functools.cache
def _load(folder: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    rows = [json.loads(line) for line in (folder / "metadata.jsonl").read_text(encoding="utf-8").splitlines()]
    return {row["file"]: row for row in rows if row}, inventory(folder / "notes")


@pytest.fixture(scope="module")
def eips() -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    return _load(eip_root())


def test_every_eip_is_parsed_without_problems(eips) -> None:
    metadata, listing = eips
    assert sorted(entry["path"] for entry in listing["notes"]) == sorted(metadata)
    assert listing["problems"] == []


def test_eip_statuses_agree_with_metadata_on_every_file(eips) -> None:
    metadata, listing = eips
    wrong = {
        entry["path"]: (entry["status"], entry["status_as_written"], metadata[entry["path"]]["status_normalized"])
        for entry in listing["notes"]
        if (entry["status"], entry["status_as_written"])
        != (metadata[entry["path"]]["status_normalized"], metadata[entry["path"]]["status_as_written"])
    }
    assert wrong == {}
    counts: dict[str, int] = {}
    for entry in listing["notes"]:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    assert counts == {"current": 141, "draft": 408, "withdrawn": 35, "moved": 365}  # SOURCE.md's counts


def test_eip_created_dates_agree_with_metadata_on_every_file(eips) -> None:
    metadata, listing = eips
    wrong = {
        entry["path"]: (entry["observed"], metadata[entry["path"]]["created"])
        for entry in listing["notes"]
        if entry["observed"] != metadata[entry["path"]]["created"]
    }
    assert wrong == {}


def test_eip_requires_links_resolve_to_the_proposals_they_name(eips) -> None:
    metadata, listing = eips
    expected = {path: sorted(f"eip-{number}.md" for number in row["requires"]) for path, row in metadata.items()}
    found = {entry["path"]: sorted(entry["requires"]) for entry in listing["notes"]}
    assert found == expected
    assert sum(map(len, found.values())) == 769  # every stated requirement, none missed
    assert listing["unresolved_links"] == [] and listing["ambiguous_links"] == []


# ---------------------------------------------------------------- eligibility before the pool (lexical only)


@pytest.fixture(scope="module")
def eip_ws(tmp_path_factory: pytest.TempPathFactory):
    store = tmp_path_factory.mktemp("eip-store")
    ws = Workspace(
        eip_root() / "notes",
        store,
        lanes=("identity", "lexical"),
        index_clock=lambda: "2026-12-01T00:00:00Z",
    )
    ws.index()
    yield ws
    ws.close()


QUESTION = "transactions senders"  # EIP-3607 (Final) rejects transactions from senders with deployed code
FINAL = "eip-3607.md"


@pytest.mark.slow
def test_stale_revisions_no_longer_push_the_final_proposal_out_of_the_pool(eip_ws) -> None:
    view = eip_ws._scope_view(frozenset())
    eligibility = eip_ws._eligibility(view, dt.date.fromisoformat(AS_OF))
    module = eip_ws.records.documents()[FINAL].module
    everything = eip_ws.run_lanes(QUESTION, ["lexical"])["lexical"].ranking
    screened = eip_ws.run_lanes(QUESTION, ["lexical"], hidden=eligibility.screen(view.hidden))["lexical"].ranking
    assert len(everything) == len(screened) == eip_ws.candidate_pool
    assert module not in {pid.split("#")[0] for pid, _ in everything}  # drafts and moved stubs filled the pool
    assert module in {pid.split("#")[0] for pid, _ in screened}
    assert not {pid for pid, _ in screened} & eligibility.ineligible


@pytest.mark.slow
def test_a_question_about_a_final_proposal_is_answered_from_it(eip_ws) -> None:
    packet = eip_ws.query(QUESTION, as_of=AS_OF, top=3)
    assert not packet.abstained
    assert packet.evidence[0].path == FINAL and packet.evidence[0].status == "current"
    assert all(item.status == "current" for item in packet.evidence)
    assert packet.exclusions.get("draft", 0) > 0  # the set-aside revisions are still named and counted
    trace = eip_ws.trace(packet.trace_id)
    assert trace["set_aside"] and not set(trace["set_aside"]) & {pid for pid, _, _ in trace["lanes"][1]["candidates"]}


@pytest.mark.slow
def test_without_eligibility_before_the_pool_the_same_question_abstains(eip_ws, monkeypatch) -> None:
    """What the pool looked like before: the lanes' 50 were stale revisions, and the packet abstained."""
    monkeypatch.setattr(eip_ws, "_eligibility", lambda view, as_of: Eligibility())
    packet = eip_ws.query(QUESTION, as_of=AS_OF, top=3)
    assert packet.abstained and packet.abstention_reason == "filtered_by_validity"


@pytest.mark.slow
def test_audit_still_sees_the_revisions_that_were_set_aside(eip_ws) -> None:
    packet = eip_ws.query(QUESTION, as_of=AS_OF, top=3, audit=True)
    history = [item for item in packet.evidence if item.role == "historical"]
    assert history and all(item.status in {"draft", "withdrawn", "moved", "superseded"} for item in history)
