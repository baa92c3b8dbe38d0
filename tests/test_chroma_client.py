"""Server-mode plumbing that needs no Chroma server: settings, their precedence, collection checks, failures."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.cli import main
from retrieval_kernel.errors import InputError, LaneUnavailableError
from retrieval_kernel.projections.chroma_client import (
    ChromaConfigError,
    ChromaConnection,
    ChromaServerError,
    ChromaSettings,
    free_port,
    parse_url,
)
from retrieval_kernel.projections.dense import (
    BUILDING,
    DENSE_FORMAT,
    META_FORMAT,
    META_HIGH_WATER,
    META_MODEL,
    META_STORE,
    META_VERSION,
    mismatch,
)
from retrieval_kernel.settings import ENV_URL, ENV_VARS, resolve_chroma
from retrieval_kernel.store.records import RecordStore

AS_OF = "2026-10-15"
NOTE = "# Pumps\n\n## Intake\n\nThe intake filter is cleaned weekly.\n"


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No server URL (nor any other setting) from the environment, and a cwd without a pyproject."""
    for name in ENV_VARS.values():
        monkeypatch.delenv(name, raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("embedded", None),
        (" Embedded ", None),
        ("http://localhost:8000", "http://localhost:8000"),
        ("http://127.0.0.1:9001/", "http://127.0.0.1:9001"),
        ("http://chroma.internal", "http://chroma.internal:8000"),
        ("https://chroma.example.org:443", "https://chroma.example.org:443"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_urls_are_normalised(given: str, expected: str | None) -> None:
    assert parse_url(given) == expected


@pytest.mark.parametrize(
    "bad",
    ["localhost:8000", "ftp://host:21", "http://", "http://host:8000/api", "http://host:99999", "server", ""],
)
def test_bad_urls_are_input_errors_that_say_what_is_expected(bad: str) -> None:
    with pytest.raises(ChromaConfigError, match=r"'embedded' or a server URL like http://localhost:8000"):
        parse_url(bad)
    assert issubclass(ChromaConfigError, InputError)


def write_pyproject(folder: Path, table: str) -> None:
    (folder / "pyproject.toml").write_text(f"[tool.retrieval_kernel]\n{table}\n", encoding="utf-8")


def test_precedence_explicit_then_pyproject_then_env_then_embedded(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_chroma().url is None  # nothing set: embedded
    monkeypatch.setenv(ENV_URL, "http://from-env:8000")
    assert resolve_chroma().url == "http://from-env:8000"
    write_pyproject(Path.cwd(), 'chroma = "http://from-pyproject:8000"\nchroma_prefix = "proj_"')
    assert resolve_chroma().url == "http://from-pyproject:8000"  # the project's file beats the environment
    explicit = resolve_chroma("http://explicit:9000")
    assert explicit.url == "http://explicit:9000"
    assert explicit.prefix == "proj_"  # tenant, database and prefix still come from pyproject
    assert resolve_chroma("embedded").embedded


def test_pyproject_supplies_tenant_database_prefix_and_timeout() -> None:
    write_pyproject(
        Path.cwd(),
        'chroma = "http://team:8000"\nchroma_tenant = "acme"\nchroma_database = "notes"\n'
        'chroma_prefix = "handbook-"\nchroma_timeout = 2.5',
    )
    settings = resolve_chroma()
    assert (settings.url, settings.tenant, settings.database, settings.prefix, settings.timeout_s) == (
        "http://team:8000",
        "acme",
        "notes",
        "handbook-",
        2.5,
    )
    assert settings.describe() == "http://team:8000 (acme/notes)"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('chroma_prefix = "-bad"', "chroma_prefix"),
        ('chroma_prefix = "has space"', "chroma_prefix"),
        ('chroma_database = "a/b"', "chroma_database"),
        ('chroma_timeout = "soon"', "chroma_timeout"),
        ("chroma_timeout = 0", "timeout must be positive"),
        ('chroma = "tcp://x:1"', "'embedded' or a server URL"),
        ('chroma_url = "http://x:1"', "unknown"),
    ],
)
def test_bad_pyproject_chroma_settings_are_named(table: str, message: str) -> None:
    write_pyproject(Path.cwd(), table)
    with pytest.raises(InputError, match=message):
        resolve_chroma()


def test_workspace_rejects_a_bad_chroma_setting_up_front(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    with pytest.raises(ChromaConfigError, match="not 'localhost:8000'"):
        Workspace(notes, tmp_path / "store", chroma="localhost:8000")


def test_cli_reports_a_bad_chroma_flag_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    assert main(["index", str(notes), "--store", str(tmp_path / "store"), "--chroma", "chroma:8000"]) == 2
    assert "chroma must be 'embedded' or a server URL" in capsys.readouterr().err
    assert main(["eval", str(tmp_path), "--chroma", "nope"]) == 2


# ---------------------------------------------------------------- the store identity and collection checks


def test_store_identity_is_made_once_and_kept(tmp_path: Path) -> None:
    with RecordStore(tmp_path / "a") as store:
        first = store.store_identity()
        assert first == store.store_identity()
        assert len(first) == 32
    with RecordStore(tmp_path / "a") as again:
        assert again.store_identity() == first
    with RecordStore(tmp_path / "b") as other:
        assert other.store_identity() != first


EXPECTED = {
    META_STORE: "ours",
    META_FORMAT: DENSE_FORMAT,
    META_VERSION: 3,
    META_HIGH_WATER: 40,
    META_MODEL: "all-MiniLM-L6-v2:onnx-int8",
}


def test_matching_metadata_passes() -> None:
    assert mismatch(dict(EXPECTED), EXPECTED) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({META_STORE: "theirs"}, "built from another record store (theirs; this store is ours)"),
        ({META_STORE: None}, "another record store (no identity"),
        ({META_FORMAT: DENSE_FORMAT - 1}, f"this version reads layout {DENSE_FORMAT}"),
        ({META_VERSION: 2}, "holds projection version 2, the record store expects 3"),
        ({META_MODEL: "all-MiniLM-L6-v2:torch-fp32"}, "vectors come from all-MiniLM-L6-v2:torch-fp32"),
        ({META_HIGH_WATER: 38}, "changes up to #38, the record store's projection is at #40"),
        ({META_HIGH_WATER: BUILDING}, "an unfinished build"),
    ],
)
def test_each_kind_of_stale_collection_is_named(change: dict, reason: str) -> None:
    found = mismatch({**EXPECTED, **change}, EXPECTED)
    assert found is not None
    assert reason in found


def test_a_collection_without_metadata_is_not_ours() -> None:
    assert mismatch(None, EXPECTED) is not None


# ---------------------------------------------------------------- servers that are down or slow


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never answers (a hung Chroma)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def notes_folder(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "pumps.md").write_text(NOTE, encoding="utf-8")
    return notes


def lane_of(packet, name: str):
    return next(lane for lane in packet.lanes if lane.name == name)


def test_a_down_server_makes_only_the_dense_lane_unavailable(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    settings = ChromaSettings(url=url, timeout_s=1.0, retries=2, backoff_s=0.05)
    with Workspace(notes_folder(tmp_path), tmp_path / "store", chroma=settings) as ws:
        started = time.perf_counter()
        packet = ws.query("intake filter", as_of=AS_OF)
        took = time.perf_counter() - started
    dense = lane_of(packet, "dense")
    assert dense.status == "unavailable"
    assert dense.reason is not None
    assert f"the Chroma server {url} is unreachable" in dense.reason
    assert "after 3 tries" in dense.reason  # the first try and two retries
    assert lane_of(packet, "lexical").status == "ok"
    assert packet.evidence[0].id == "pumps#intake"
    assert not (tmp_path / "store" / "dense").exists()  # nothing fell back to embedded Chroma
    assert 0.15 <= took < 10  # it waited for the backoff (0.05 + 0.1 s), not for ever


def test_a_hung_server_times_out_without_retrying(tmp_path: Path, silent_server: str) -> None:
    settings = ChromaSettings(url=silent_server, timeout_s=0.5, retries=3, backoff_s=0.05)
    with Workspace(notes_folder(tmp_path), tmp_path / "store", chroma=settings) as ws:
        started = time.perf_counter()
        packet = ws.query("intake filter", as_of=AS_OF)
        took = time.perf_counter() - started
    dense = lane_of(packet, "dense")
    assert dense.status == "unavailable"
    assert dense.reason is not None
    assert "did not answer within 0.5 s" in dense.reason
    assert "tries" not in dense.reason
    assert packet.evidence[0].id == "pumps#intake"
    assert took < 3  # one timeout, not four


def test_connection_retries_then_reconnects_after_a_failure(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    connection = ChromaConnection(ChromaSettings(url=url, timeout_s=0.5, retries=1, backoff_s=0.01), tmp_path)
    calls: list[int] = []
    with pytest.raises(ChromaServerError, match="after 2 tries while trying to count") as raised:
        connection.call("count", lambda client: calls.append(1))
    assert isinstance(raised.value, LaneUnavailableError)
    assert calls == []  # the server never answered, so the operation never ran
    assert connection._client is None  # dropped: the next call connects again


def test_chroma_refusing_a_request_is_not_retried(tmp_path: Path) -> None:
    connection = ChromaConnection(ChromaSettings(url="http://127.0.0.1:1", retries=3), tmp_path)
    connection._client = object()  # pretend connected
    attempts: list[int] = []

    def refuse(client: object) -> None:
        attempts.append(1)
        raise KeyError("no such thing")

    with pytest.raises(KeyError):
        connection.call("read", refuse)
    assert attempts == [1]


def test_serve_check_of_a_down_server_exits_2_with_a_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["serve-check", url, "--timeout", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("retrieval-kernel serve-check: the Chroma server")
    assert "is unreachable" in err
    assert main(["serve-check", "embedded"]) == 2
    assert "needs a server URL" in capsys.readouterr().err


def test_serve_check_of_something_that_is_not_chroma(capsys: pytest.CaptureFixture[str], silent_server: str) -> None:
    assert main(["serve-check", silent_server, "--timeout", "0.5"]) == 2
    assert "did not answer within 0.5 s" in capsys.readouterr().err
