"""Optional reranking with a deterministic fake, and the CrossEncoder loader's refusal to download."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.errors import LaneUnavailableError
from retrieval_kernel.output.packet import LaneHit
from retrieval_kernel.pipeline.rerank import DEFAULT_DEPTH, CrossEncoderReranker, rerank

AS_OF = "2026-10-15"
QUERY = "pump"

# Five passages that all mention "pump"; the most mentions rank first lexically,
# while the longest text is a different one.
NOTES = {
    "a.md": "# A\n\nPump pump pump pump.\n",
    "b.md": "# B\n\nPump pump pump and a valve.\n",
    "c.md": "# C\n\nThe pump, the pump, and then a very long description of the housing, seals and flanges.\n",
    "d.md": "# D\n\nOne pump here with a medium sized sentence.\n",
    "e.md": "# E\n\nA pump.\n",
}


class LengthReranker:
    """Scores a passage by its length (longer is 'more relevant'); records every call."""

    name = "fake-length"

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.calls.append((query, list(texts)))
        return [float(len(text)) for text in texts]


class ReverseReranker:
    """Gives the last candidate the highest score: reverses the fused order."""

    name = "fake-reverse"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(i) for i in range(len(texts))]


class ConstantReranker:
    name = "fake-constant"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [0.5] * len(texts)


@pytest.fixture(scope="module")
def notes_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rerank")
    notes = root / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    with Workspace(notes, root / "store", lanes=("lexical",)) as ws:
        ws.index()
    return notes


def open_ws(notes_dir: Path, reranker=None) -> Workspace:
    return Workspace(notes_dir, notes_dir.parent / "store", lanes=("lexical",), reranker=reranker)


def fused_order(notes_dir: Path) -> list[str]:
    with open_ws(notes_dir) as ws:
        return [item.id for item in ws.query(QUERY, as_of=AS_OF, refresh=False).evidence]


def test_without_reranker_there_is_no_rerank_hit(notes_dir: Path) -> None:
    with open_ws(notes_dir) as ws:
        packet = ws.query(QUERY, as_of=AS_OF, refresh=False)
    assert len(packet.evidence) == 5
    assert all(hit.lane != "rerank" for item in packet.evidence for hit in item.retrieved_by)


def test_fake_reranker_reorders_the_packet_head(notes_dir: Path) -> None:
    before = fused_order(notes_dir)
    fake = LengthReranker()
    with open_ws(notes_dir, fake) as ws:
        packet = ws.query(QUERY, as_of=AS_OF, refresh=False)
    after = [item.id for item in packet.evidence]
    expected = sorted(before, key=lambda pid: -len(next(i for i in packet.evidence if i.id == pid).excerpt))
    assert after == expected
    assert after != before  # the fake really changed the order
    assert after[0] == "c#c"
    # the fake saw the query and the candidates' texts in fused order
    ((query, texts),) = fake.calls
    assert query == QUERY
    assert len(texts) == 5
    for rank, item in enumerate(packet.evidence, 1):
        assert item.rank == rank
        assert item.retrieved_by[-1] == LaneHit("rerank", rank, float(len(item.excerpt)))
        assert item.retrieved_by[0].lane == "lexical"
        assert "rerank" not in [hit.lane for hit in item.retrieved_by[:-1]]


def test_reverse_reranker_reverses_the_fused_order(notes_dir: Path) -> None:
    before = fused_order(notes_dir)
    with open_ws(notes_dir, ReverseReranker()) as ws:
        packet = ws.query(QUERY, as_of=AS_OF, refresh=False)
    assert [item.id for item in packet.evidence] == before[::-1]
    assert [item.retrieved_by[-1] for item in packet.evidence] == [
        LaneHit("rerank", rank, float(score)) for rank, score in enumerate(range(4, -1, -1), 1)
    ]


def test_equal_rerank_scores_keep_fused_order(notes_dir: Path) -> None:
    before = fused_order(notes_dir)
    with open_ws(notes_dir, ConstantReranker()) as ws:
        packet = ws.query(QUERY, as_of=AS_OF, refresh=False)
    assert [item.id for item in packet.evidence] == before
    assert [item.retrieved_by[-1] for item in packet.evidence] == [LaneHit("rerank", r, 0.5) for r in range(1, 6)]


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_depth_limits_which_candidates_are_reordered(notes_dir: Path, depth: int) -> None:
    with open_ws(notes_dir) as ws:
        ranked = ws.rank(ws.run_lanes(QUERY, ["lexical"]))
    assert len(ranked) == 5
    fake = ReverseReranker()
    result = rerank(QUERY, ranked, fake, depth=depth)
    ids = [c.stored.passage.id for c in ranked]
    assert [c.stored.passage.id for c in result] == ids[:depth][::-1] + ids[depth:]
    for candidate in result[:depth]:
        assert candidate.retrieved_by[-1].lane == "rerank"
    for original, candidate in zip(ranked[depth:], result[depth:], strict=True):
        assert candidate == original  # the tail is untouched: no rerank hit, same score


def test_default_depth_covers_the_whole_small_list(notes_dir: Path) -> None:
    assert DEFAULT_DEPTH == 20
    with open_ws(notes_dir) as ws:
        ranked = ws.rank(ws.run_lanes(QUERY, ["lexical"]))
    fake = LengthReranker()
    rerank(QUERY, ranked, fake)
    assert len(fake.calls[0][1]) == len(ranked)


def test_rerank_of_nothing_does_not_call_the_model() -> None:
    fake = LengthReranker()
    assert rerank(QUERY, [], fake) == []
    assert fake.calls == []


def test_cross_encoder_from_missing_folder_is_unavailable_without_network(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the reranker tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    with pytest.raises(LaneUnavailableError, match="does not exist"):
        CrossEncoderReranker("/nonexistent")
    a_file = tmp_path / "model.bin"
    a_file.write_bytes(b"not a folder")
    with pytest.raises(LaneUnavailableError, match="does not exist"):
        CrossEncoderReranker(a_file)
    # a model id that would be fetched from the hub is refused the same way
    with pytest.raises(LaneUnavailableError):
        CrossEncoderReranker("cross-encoder/ms-marco-MiniLM-L-6-v2")
