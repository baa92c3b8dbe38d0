"""Reciprocal rank fusion on hand-made rankings, and identity-first ordering in Workspace.rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.output.packet import LaneHit, LaneReport
from retrieval_kernel.pipeline.fusion import RRF_K, Fused, reciprocal_rank_fusion
from retrieval_kernel.pipeline.lanes import LaneRun


def rrf(*ranks: int) -> float:
    return round(sum(1 / (RRF_K + rank) for rank in ranks), 6)


def by_id(fused: list[Fused]) -> dict[str, Fused]:
    return {item.passage_id: item for item in fused}


# ---------------------------------------------------------------- reciprocal_rank_fusion


def test_rrf_k_is_the_published_constant() -> None:
    assert RRF_K == 60


def test_fused_scores_are_exact_reciprocal_rank_sums() -> None:
    fused = by_id(
        reciprocal_rank_fusion(
            {
                "lexical": [("a", 9.0), ("b", 7.0), ("c", 1.5)],
                "dense": [("c", 0.9), ("a", 0.8)],
            }
        )
    )
    assert fused["a"].score == rrf(1, 2) == round(1 / 61 + 1 / 62, 6)
    assert fused["b"].score == rrf(2) == round(1 / 62, 6)
    assert fused["c"].score == rrf(3, 1) == round(1 / 63 + 1 / 61, 6)
    assert set(fused) == {"a", "b", "c"}


def test_scores_are_rounded_to_six_decimals() -> None:
    (item,) = reciprocal_rank_fusion({"lexical": [("a", 1.0)]})
    assert item.score == 0.016393  # 1/61 = 0.0163934426...
    assert item.score != 1 / 61


def test_custom_k_changes_the_scores() -> None:
    fused = by_id(reciprocal_rank_fusion({"lexical": [("a", 1.0), ("b", 0.5)]}, k=0))
    assert fused["a"].score == 1.0
    assert fused["b"].score == 0.5


def test_found_by_two_lanes_beats_rank_one_in_a_single_lane() -> None:
    # "both" is only 1st and 2nd; "solo" is 1st in one lane: 1/61 + 1/62 > 1/61.
    fused = reciprocal_rank_fusion(
        {
            "lexical": [("solo", 50.0), ("both", 40.0)],
            "dense": [("both", 0.7)],
        }
    )
    assert [item.passage_id for item in fused] == ["both", "solo"]
    assert fused[0].score == rrf(2, 1)
    assert fused[1].score == rrf(1)


def test_ties_break_by_passage_id_not_insertion_order() -> None:
    # "dense" is processed first (lanes sorted by name), so "zeta" is seen before "alpha".
    fused = reciprocal_rank_fusion({"lexical": [("alpha", 3.0)], "dense": [("zeta", 0.5)]})
    assert [item.passage_id for item in fused] == ["alpha", "zeta"]
    assert fused[0].score == fused[1].score == rrf(1)


def test_ties_at_lower_ranks_also_break_by_id() -> None:
    fused = reciprocal_rank_fusion({"lexical": [("top", 9.0), ("m", 2.0)], "dense": [("top", 0.9), ("d", 0.2)]})
    assert [item.passage_id for item in fused] == ["top", "d", "m"]


def test_raw_lane_scores_and_ranks_are_kept_in_lane_hits() -> None:
    fused = by_id(
        reciprocal_rank_fusion(
            {
                "lexical": [("a", 12.5), ("b", 3.25)],
                "dense": [("b", 0.8125), ("a", -0.125)],
            }
        )
    )
    assert fused["a"].hits == (LaneHit("dense", 2, -0.125), LaneHit("lexical", 1, 12.5))
    assert fused["b"].hits == (LaneHit("dense", 1, 0.8125), LaneHit("lexical", 2, 3.25))


def test_lane_hits_are_ordered_by_lane_name_whatever_the_input_order() -> None:
    rankings = {
        "lexical": [("p", 4.0)],
        "identity": [("p", 1.0)],
        "dense": [("p", 0.6)],
    }
    (item,) = reciprocal_rank_fusion(rankings)
    assert [hit.lane for hit in item.hits] == ["dense", "identity", "lexical"]
    assert item.score == rrf(1, 1, 1)


def test_empty_rankings_fuse_to_nothing() -> None:
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"lexical": [], "dense": []}) == []


# ---------------------------------------------------------------- Workspace.rank

NOTES = {
    "alpha.md": "# Alpha\n\nGearbox oil level checks happen weekly.\n",
    "bravo.md": "# Bravo\n\nConveyor belt tension is adjusted monthly.\n",
    "charlie.md": "# Charlie\n\nThe spindle bearings are greased daily.\n",
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("fusion")
    notes = root / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    ws = Workspace(notes, root / "store", lanes=("identity", "lexical"))
    ws.index()
    yield ws
    ws.close()


def run(name: str, ranking: list[tuple[str, float]]) -> LaneRun:
    report = LaneReport(name, "ok" if ranking else "empty", len(ranking), 1, 1, "test")
    return LaneRun(report, ranking)


def test_rank_puts_identity_hits_first_despite_a_higher_fused_score(workspace: Workspace) -> None:
    runs = {
        "identity": run("identity", [("charlie#charlie", 1.0)]),
        "lexical": run("lexical", [("alpha#alpha", 8.0), ("bravo#bravo", 4.0)]),
        "dense": run("dense", [("alpha#alpha", 0.9), ("bravo#bravo", 0.5)]),
    }
    ranked = workspace.rank(runs)
    ids = [candidate.stored.passage.id for candidate in ranked]
    assert ids == ["charlie#charlie", "alpha#alpha", "bravo#bravo"]
    # the identity hit leads although its fused score is the lowest
    assert ranked[0].score == rrf(1) < ranked[1].score == rrf(1, 1)
    assert ranked[0].retrieved_by == (LaneHit("identity", 1, 1.0),)


def test_rank_puts_identity_hits_first_in_fused_order_and_a_passage_named_by_its_id_before_them(
    workspace: Workspace,
) -> None:
    runs = {
        "identity": run("identity", [("bravo#bravo", 1.0), ("alpha#alpha", 1.0)]),
        "lexical": run("lexical", [("charlie#charlie", 5.0), ("alpha#alpha", 4.0)]),
    }
    ids = [candidate.stored.passage.id for candidate in workspace.rank(runs)]
    assert ids == ["alpha#alpha", "bravo#bravo", "charlie#charlie"]  # alpha is also found by its words
    named = [candidate.stored.passage.id for candidate in workspace.rank(runs, "what does bravo#bravo say?")]
    assert named == ["bravo#bravo", "alpha#alpha", "charlie#charlie"]


def test_rank_without_identity_is_plain_fusion(workspace: Workspace) -> None:
    runs = {
        "lexical": run("lexical", [("charlie#charlie", 5.0), ("alpha#alpha", 4.0)]),
        "dense": run("dense", [("alpha#alpha", 0.7)]),
    }
    ranked = workspace.rank(runs)
    assert [c.stored.passage.id for c in ranked] == ["alpha#alpha", "charlie#charlie"]
    assert [c.score for c in ranked] == [rrf(2, 1), rrf(1)]


def test_rank_drops_ids_missing_from_the_record_store(workspace: Workspace) -> None:
    runs = {"lexical": run("lexical", [("ghost#gone", 9.0), ("alpha#alpha", 1.0)])}
    assert [c.stored.passage.id for c in workspace.rank(runs)] == ["alpha#alpha"]


def test_query_identity_hit_leads_over_a_stronger_lexical_match(tmp_path: Path, make_notes) -> None:
    notes = make_notes(
        {
            "target.md": "# Target\n\nA short line about valves.\n",
            "noise.md": "# Valves\n\nValves valves valves: valves everywhere, valve seats and valve springs.\n",
        }
    )
    with Workspace(notes, tmp_path / "store", lanes=("identity", "lexical")) as ws:
        ws.index()
        digest = ws.records.passages(["target#target"])["target#target"].passage.sha256
        query = f"{digest[:10]} valves"
        packet = ws.query(query, as_of="2026-10-15")
        assert [item.id for item in packet.evidence] == ["target#target"]
        assert LaneHit("identity", 1, 1.0) in packet.evidence[0].retrieved_by
        # the noisy note matches only "valves", not the named identifier: judged not to answer
        assert [(e.id, e.reason) for e in packet.excluded] == [("noise#valves", "weak_match")]
        # without the identity lane the lexical lane prefers the noisy note
        lexical_only = ws.query(query, as_of="2026-10-15", lanes=["lexical"])
        trace = ws.trace(lexical_only.trace_id)
        assert trace is not None and [pid for pid, _ in trace["fused"]] == ["noise#valves", "target#target"]
