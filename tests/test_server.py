"""Server mode against a real Chroma server (``chroma run``, started and stopped by these tests).

The same queries give the same packets embedded and on the server; a server that
dies leaves lexical answering and comes back without a new Workspace; prefixes
and record-store identities keep projects apart; stale collections are named and
rebuilt, never mixed in; ``serve-check`` checks a live server.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings

from retrieval_kernel import Packet, Workspace
from retrieval_kernel.cli import main
from retrieval_kernel.evaluation.beir import ONE_PASSAGE, load_beir, write_notes
from retrieval_kernel.projections.chroma_client import (
    ChromaSettings,
    LocalServer,
    close_http_client,
    free_port,
)
from retrieval_kernel.projections.dense import CACHE_NAME, FOLDER, META_FORMAT, META_MODEL, META_STORE
from retrieval_kernel.settings import ENV_URL

pytestmark = pytest.mark.server

AS_OF = "2026-10-15"
REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("RETRIEVAL_KERNEL_SHARED", REPO.parent / "shared"))
SCIFACT = SHARED / "datasets" / "scifact"
SCIFACT_DOCS, SCIFACT_QUERIES = 300, 20


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    """One ``chroma run`` on a free loopback port with a temporary path; stopped by pid afterwards."""
    folder = tmp_path_factory.mktemp("chroma-server")
    running = LocalServer(folder / "data", free_port(), log=folder / "server.log")
    running.start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_URL, raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # no pyproject: only what each test says


@contextmanager
def admin(server: LocalServer, database: str = "default_database") -> Iterator[Any]:
    """A plain Chroma client, to look at (and tamper with) the server behind the extension's back."""
    port = int(server.url.rsplit(":", 1)[1])
    client = chromadb.HttpClient(
        host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False), database=database
    )
    try:
        yield client
    finally:
        close_http_client(client)


def names_on(server: LocalServer, prefix: str = "", database: str = "default_database") -> set[str]:
    with admin(server, database) as client:
        return {c.name for c in client.list_collections() if c.name.startswith(prefix)}


def count_on(server: LocalServer, name: str) -> int:
    with admin(server) as client:
        return int(client.get_collection(name).count())


def comparable(packet: Packet) -> dict[str, Any]:
    """The whole packet but the wall-clock index times (each store indexed at its own moment)."""
    data = packet.to_dict()
    for item in data["evidence"]:
        item.pop("indexed_at")
    return data


def lane(packet: Packet, name: str) -> Any:
    return next(report for report in packet.lanes if report.name == name)


def questions(suite: Path) -> list[str]:
    lines = (suite / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


# ---------------------------------------------------------------- the same packets, embedded and on a server


def test_workshop_packets_are_identical_embedded_and_on_the_server(
    server: LocalServer, workshop_notes: Path, tmp_path: Path
) -> None:
    asked = questions(workshop_notes.parent)
    assert len(asked) == 20
    embedded = Workspace(workshop_notes, tmp_path / "embedded", chroma="embedded")
    remote = Workspace(workshop_notes, tmp_path / "remote", chroma=ChromaSettings(url=server.url, prefix="workshop-"))
    with embedded, remote:
        embedded.index()
        remote.index()
        assert "dense" not in remote.lane_errors
        for question in asked:
            ours, theirs = embedded.query(question, as_of=AS_OF), remote.query(question, as_of=AS_OF)
            assert lane(theirs, "dense").status == "ok", lane(theirs, "dense").reason
            assert comparable(theirs) == comparable(ours), question
        passages = remote.records.passage_count()
    # the vectors live on the server, not beside the server-mode store
    assert not (tmp_path / "remote" / FOLDER).exists()
    assert (tmp_path / "embedded" / FOLDER).is_dir()
    assert names_on(server, "workshop-") == {"workshop-passages_v1"}
    assert count_on(server, "workshop-passages_v1") == passages


@pytest.fixture(scope="module")
def scifact_subset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """300 SciFact abstracts (those the first 20 test queries judge, then others by id) as notes."""
    if not (SCIFACT / "queries.jsonl").is_file():
        pytest.skip(f"SciFact is not at {SCIFACT} (set RETRIEVAL_KERNEL_SHARED)")
    data = load_beir(SCIFACT, "test")
    chosen = sorted(data.queries)[:SCIFACT_QUERIES]
    judged = sorted({doc for qid in chosen for doc in data.qrels[qid] if doc in data.corpus})
    others = [doc for doc in sorted(data.corpus) if doc not in set(judged)]
    docs = (judged + others)[:SCIFACT_DOCS]
    notes = tmp_path_factory.mktemp("scifact") / "notes"
    write_notes({doc: data.corpus[doc] for doc in docs}, notes)
    return notes, [data.queries[qid] for qid in chosen]


@pytest.mark.slow
def test_scifact_packets_are_identical_embedded_and_on_the_server(
    server: LocalServer, scifact_subset: tuple[Path, list[str]], tmp_path: Path
) -> None:
    notes, asked = scifact_subset
    embedded = Workspace(notes, tmp_path / "embedded", max_passage_chars=ONE_PASSAGE, chroma="embedded")
    with embedded:
        embedded.index()
        assert embedded.dense.embedded_last_sync == SCIFACT_DOCS
        (tmp_path / "remote").mkdir()
        shutil.copy(tmp_path / "embedded" / CACHE_NAME, tmp_path / "remote" / CACHE_NAME)  # embed once
        remote_settings = ChromaSettings(url=server.url, prefix="scifact-")
        with Workspace(notes, tmp_path / "remote", max_passage_chars=ONE_PASSAGE, chroma=remote_settings) as remote:
            remote.index()
            assert remote.dense.embedded_last_sync == 0  # every vector came from the copied cache
            dense_hits = 0
            for question in asked:
                ours = embedded.query(question, as_of=AS_OF, top=10)
                theirs = remote.query(question, as_of=AS_OF, top=10)
                assert lane(theirs, "dense").status in ("ok", "empty"), lane(theirs, "dense").reason
                assert comparable(theirs) == comparable(ours), question
                dense_hits += sum(any(hit.lane == "dense" for hit in item.retrieved_by) for item in theirs.evidence)
    assert dense_hits >= SCIFACT_QUERIES  # the dense lane really took part
    assert count_on(server, "scifact-passages_v1") == SCIFACT_DOCS


# ---------------------------------------------------------------- a server that goes away and comes back


@pytest.mark.slow
def test_a_killed_server_leaves_lexical_answering_and_a_restart_brings_dense_back(
    tmp_path: Path, workshop_notes: Path
) -> None:
    own = LocalServer(tmp_path / "data", free_port(), log=tmp_path / "server.log").start()
    try:
        settings = ChromaSettings(url=own.url, timeout_s=2.0, retries=1, backoff_s=0.05)
        with Workspace(workshop_notes, tmp_path / "store", chroma=settings) as ws:
            question = "How is ownership of a record decided?"
            before = ws.query(question, as_of=AS_OF)
            assert lane(before, "dense").status == "ok"

            own.stop()
            # a query that does not refresh finds out when it searches
            cached = ws.query(question, as_of=AS_OF, refresh=False)
            assert lane(cached, "dense").status == "unavailable"
            assert "is unreachable" in lane(cached, "dense").reason
            # the default query refreshes first; that fails too, and lexical still answers
            down = ws.query(question, as_of=AS_OF)
            dense = lane(down, "dense")
            assert dense.status == "unavailable"
            assert f"the Chroma server {own.url} is unreachable" in dense.reason
            assert lane(down, "lexical").status == "ok"
            assert not down.abstained
            assert before.evidence[0].id in [item.id for item in down.evidence]
            assert all(hit.lane != "dense" for item in down.evidence for hit in item.retrieved_by)

            own.start()  # same path, same port
            back = ws.query(question, as_of=AS_OF)  # the same Workspace: no restart of anything
            assert lane(back, "dense").status == "ok", lane(back, "dense").reason
            assert comparable(back) == comparable(before)
            assert ws.records.projection("dense").version == 1  # the data survived: nothing was rebuilt
    finally:
        own.stop()


# ---------------------------------------------------------------- projects and stores stay apart


def write_notes_folder(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


PUMPS = {"pumps.md": "# Pumps\n\n## Intake\n\nThe intake filter of the water pump is cleaned weekly.\n"}
BREAD = {"bread.md": "# Baking\n\n## Dough\n\nKnead the sourdough with flour, water and salt overnight.\n"}


def test_two_prefixes_do_not_see_each_other(server: LocalServer, tmp_path: Path) -> None:
    alpha = Workspace(write_notes_folder(tmp_path / "a", PUMPS), tmp_path / "sa", chroma=_at(server, "alpha-"))
    beta = Workspace(write_notes_folder(tmp_path / "b", BREAD), tmp_path / "sb", chroma=_at(server, "beta-"))
    with alpha, beta:
        alpha.index()
        beta.index()
        for ws, own, other in ((alpha, "pumps#intake", "bread#dough"), (beta, "bread#dough", "pumps#intake")):
            state = ws.records.projection("dense")
            found = [hit.passage_id for hit in ws.dense.search("water pump filter and sourdough bread", 50, state)]
            assert own in found
            assert other not in found
        # a rebuild in one project drops its own old version only
        state = alpha.records.projection("dense")
        alpha.dense.rebuild(alpha.records, state.version + 1)
        assert names_on(server, "alpha-") == {"alpha-passages_v2"}
        assert names_on(server, "beta-") == {"beta-passages_v1"}
        packet = beta.query("sourdough", as_of=AS_OF, lanes=["dense"])
        assert [item.id for item in packet.evidence] == ["bread#dough"]


def _at(server: LocalServer, prefix: str, **more: Any) -> ChromaSettings:
    return ChromaSettings(url=server.url, prefix=prefix, **more)


def test_two_record_stores_sharing_a_prefix_never_mix(server: LocalServer, tmp_path: Path) -> None:
    first = Workspace(write_notes_folder(tmp_path / "a", PUMPS), tmp_path / "sa", chroma=_at(server, "shared-"))
    second = Workspace(write_notes_folder(tmp_path / "b", BREAD), tmp_path / "sb", chroma=_at(server, "shared-"))
    with first, second:
        first.index()
        second.index()  # shared-passages_v1 belongs to the first store: the second builds v2 beside it
        assert first.records.projection("dense").version == 1
        assert second.records.projection("dense").version == 2
        assert names_on(server, "shared-") == {"shared-passages_v1", "shared-passages_v2"}
        with admin(server) as client:
            meta = {c.name: c.metadata for c in client.list_collections() if c.name.startswith("shared-")}
        assert meta["shared-passages_v1"][META_STORE] == first.records.store_identity()
        assert meta["shared-passages_v2"][META_STORE] == second.records.store_identity()
        assert [i.id for i in first.query("knead sourdough", as_of=AS_OF, lanes=["dense"]).evidence] == []
        assert [i.id for i in second.query("knead sourdough", as_of=AS_OF, lanes=["dense"]).evidence] == ["bread#dough"]


def test_a_tenant_database_keeps_collections_out_of_the_default_one(server: LocalServer, tmp_path: Path) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    remote = Settings(
        chroma_api_impl="chromadb.api.fastapi.FastAPI",
        chroma_server_host="127.0.0.1",
        chroma_server_http_port=port,
        anonymized_telemetry=False,
    )
    client = chromadb.AdminClient(remote)
    try:
        client.create_database("rk_team_db")
    finally:
        close_http_client(client)
    settings = _at(server, "team-", database="rk_team_db")
    with Workspace(write_notes_folder(tmp_path / "n", PUMPS), tmp_path / "s", chroma=settings) as ws:
        packet = ws.query("pump filter", as_of=AS_OF)
    assert lane(packet, "dense").status == "ok", lane(packet, "dense").reason
    assert names_on(server, "team-", database="rk_team_db") == {"team-passages_v1"}
    assert names_on(server, "team-") == set()
    missing = _at(server, "team-", database="no_such_db")
    with Workspace(tmp_path / "n", tmp_path / "s2", chroma=missing) as ws:
        dense = lane(ws.query("pump filter", as_of=AS_OF), "dense")
    assert dense.status == "unavailable"
    assert "no_such_db" in dense.reason


# ---------------------------------------------------------------- stale collections are named, then rebuilt


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        ({META_STORE: "0123456789abcdef0123456789abcdef"}, "built from another record store (0123456789abcdef"),
        ({META_FORMAT: 0}, "it has collection layout 0"),
        ({META_MODEL: "all-MiniLM-L6-v2:torch-fp32"}, "its vectors come from all-MiniLM-L6-v2:torch-fp32"),
    ],
    ids=["other-store", "older-layout", "other-model"],
)
def test_a_stale_server_collection_is_reported_then_rebuilt(
    server: LocalServer, tmp_path: Path, tamper: dict[str, Any], reason: str
) -> None:
    prefix = f"stale{free_port()}-"
    with Workspace(write_notes_folder(tmp_path / "n", PUMPS), tmp_path / "s", chroma=_at(server, prefix)) as ws:
        ws.index()
        with admin(server) as client:
            collection = client.get_collection(f"{prefix}passages_v1")
            collection.modify(metadata={**collection.metadata, **tamper})

        # The collection is derived data: even without refreshing, the query rebuilds it into a
        # new version from the record store and says so.
        packet = ws.query("pump filter", as_of=AS_OF, refresh=False)
        dense = lane(packet, "dense")
        assert (dense.status, dense.index_version) == ("ok", 2)
        (repaired,) = [w for w in packet.warnings if "rebuilt it from the record store" in w]
        assert f"the dense collection {prefix}passages_v1" in repaired
        assert reason in repaired
        assert ws.dense.rebuilt_because is not None
        assert reason in ws.dense.rebuilt_because
        assert lane(packet, "lexical").status == "ok"
        assert packet.evidence[0].id == "pumps#intake"
        again = ws.query("pump filter", as_of=AS_OF)
        assert lane(again, "dense").status == "ok"
        assert not any("rebuilt" in w for w in again.warnings)
    left = names_on(server, prefix)
    if META_STORE in tamper:
        assert left == {f"{prefix}passages_v1", f"{prefix}passages_v2"}  # another store's data is never deleted
    else:
        assert left == {f"{prefix}passages_v2"}  # our own stale version is dropped


def test_a_collection_lost_on_the_server_is_reported_then_rebuilt(server: LocalServer, tmp_path: Path) -> None:
    prefix = f"lost{free_port()}-"
    with Workspace(write_notes_folder(tmp_path / "n", PUMPS), tmp_path / "s", chroma=_at(server, prefix)) as ws:
        ws.index()
        ws.query("pump filter", as_of=AS_OF)  # the exact-search matrix is now cached in memory
        with admin(server) as client:
            client.delete_collection(f"{prefix}passages_v1")
        packet = ws.query("pump filter", as_of=AS_OF, refresh=False)
        assert lane(packet, "dense").status == "ok"  # rebuilt on the spot from the record store
        assert any("is missing from the Chroma server" in w and "rebuilt" in w for w in packet.warnings)
        assert ws.records.projection("dense").version == 2


def test_edits_reach_the_server_collection_incrementally(server: LocalServer, tmp_path: Path) -> None:
    notes = write_notes_folder(tmp_path / "n", PUMPS)
    with Workspace(notes, tmp_path / "s", chroma=_at(server, "edits-")) as ws:
        ws.index()
        (notes / "bread.md").write_text(BREAD["bread.md"], encoding="utf-8")
        first = ws.query("sourdough", as_of=AS_OF, lanes=["dense"])  # answers first: not embedded yet
        dense = next(lane for lane in first.lanes if lane.name == "dense")
        assert dense.status == "stale" and dense.reason is not None and "bread.md" in dense.reason
        assert first.evidence == ()
        ws.flush_writes()  # what an idle moment does: embedded and written to the server's collection
        packet = ws.query("sourdough", as_of=AS_OF, lanes=["dense"])
        assert [item.id for item in packet.evidence] == ["bread#dough"]
        (notes / "pumps.md").unlink()
        ws.index()
        assert ws.records.projection("dense").version == 1  # applied from the change log, not rebuilt
        with admin(server) as client:
            stored = client.get_collection("edits-passages_v1")
            assert sorted(stored.get()["ids"]) == ["bread#dough"]
            assert stored.metadata["rk_high_water"] == ws.records.high_water()


# ---------------------------------------------------------------- adapters


def test_cli_index_query_and_eval_take_chroma(
    server: LocalServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = write_notes_folder(tmp_path / "n", PUMPS)
    store = tmp_path / "s"
    assert main(["index", str(notes), "--store", str(store), "--chroma", server.url]) == 0
    capsys.readouterr()
    assert main(["query", "pump filter", "--notes", str(notes), "--store", str(store), "--chroma", server.url]) == 0
    packet = json.loads(capsys.readouterr().out)
    assert next(lane for lane in packet["lanes"] if lane["name"] == "dense")["status"] == "ok"
    assert not (store / FOLDER).exists()
    assert main(["eval", str(REPO / "fixtures" / "workshop"), "--chroma", server.url]) == 0
    assert "all gates passed" in capsys.readouterr().out
    assert ENV_URL not in os.environ  # the flag did not leak into the process


def test_env_var_and_magics_traitlet_point_at_the_server(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.getipython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    notes = write_notes_folder(tmp_path / "n", PUMPS)
    monkeypatch.setenv(ENV_URL, server.url)
    with Workspace(notes, tmp_path / "by-env") as ws:
        assert ws.chroma.url == server.url

    ip = start_ipython() or get_ipython()
    ip.run_line_magic("load_ext", "retrieval_kernel")
    monkeypatch.delenv(ENV_URL)
    ip.run_line_magic("config", f"ContextMagics.chroma = {server.url!r}")
    try:
        packet = ip.run_line_magic("context", f"--notes {notes} --store {tmp_path / 'magic'} --as-of {AS_OF} pump")
    finally:
        del ip.config["ContextMagics"]["chroma"]
        for magics in ip.configurables:
            if hasattr(magics, "_workspaces") and hasattr(magics, "chroma"):
                magics.chroma = None
                for workspace in magics._workspaces.values():
                    workspace.close()
                magics._workspaces.clear()
    assert lane(packet, "dense").status == "ok"
    assert not (tmp_path / "magic" / FOLDER).exists()


def test_serve_check_reports_a_live_server(
    server: LocalServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Workspace(write_notes_folder(tmp_path / "n", PUMPS), tmp_path / "s", chroma=_at(server, "checked-")) as ws:
        ws.index()
    assert main(["serve-check", server.url, "--prefix", "checked-"]) == 0
    out = capsys.readouterr().out
    assert f"Chroma server {server.url}: ok" in out
    assert "version      server " in out
    assert "checked-passages_v1  1 vectors" in out
    assert "alpha-" not in out  # other prefixes are not listed
    assert "nearest probe-pump" in out
    assert main(["serve-check", server.url, "--prefix", "checked-", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["collections"] == [{"name": "checked-passages_v1", "vectors": 1}]
    assert result["probe"]["nearest"] == "probe-pump"
    assert not any(name.startswith("checked-rk_probe_") for name in names_on(server))  # the probe cleaned up
