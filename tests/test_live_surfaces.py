"""Live checks from every surface: pyproject, ``%config``, ``%context --live``, the CLI and the explorer,
all through the one settings object (seed 000's fixture: the Ledger changed the owner yesterday)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.getipython import get_ipython
from IPython.testing.globalipapp import start_ipython
from traitlets import TraitError

from retrieval_kernel import Packet, Workspace
from retrieval_kernel.cli import main
from retrieval_kernel.magics import ContextMagics
from retrieval_kernel.pipeline.live_sources import JsonSystemOfRecord

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "live-owner"
LEDGER = FIXTURE / "system-of-record" / "ledger.json"
AS_OF = "2026-10-15"
QUESTION = "Who owns record PB-1042?"
OWNER = "ledger-record-pb-1042#owner"

ip = start_ipython() or get_ipython()


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    target = tmp_path / "notes"
    shutil.copytree(FIXTURE / "notes", target)
    return target


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder (no pyproject above it applies: the tmp root has none)."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def owner_of(packet: dict) -> dict:
    return next(e for e in packet["evidence"] if e["id"] == OWNER)


# ---------------------------------------------------------------- CLI


def cli_query(capsys: pytest.CaptureFixture[str], notes: Path, *extra: str) -> dict:
    argv = ["query", QUESTION, "--notes", str(notes), "--store", str(notes.parent / "store"), "--as-of", AS_OF]
    assert main([*argv, "--lanes", "lexical", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_live_flag_makes_the_record_win(capsys: pytest.CaptureFixture[str], notes: Path, cwd: Path) -> None:
    packet = cli_query(capsys, notes, "--live", str(LEDGER))
    assert owner_of(packet)["role"] == "contradicted"
    assert packet["record_values"][0]["value"] == "Maren Oduya"
    assert packet["live_sources"][0]["status"] == "answered"


def test_pyproject_live_sources_apply_to_the_cli_and_no_live_turns_them_off(
    capsys: pytest.CaptureFixture[str], notes: Path, cwd: Path
) -> None:
    shutil.copy(LEDGER, cwd / "ledger.json")
    (cwd / "pyproject.toml").write_text(
        '[tool.retrieval_kernel]\nlive = ["ledger.json"]\nlive_timeout = 1.5\n', encoding="utf-8"
    )
    configured = cli_query(capsys, notes)
    assert owner_of(configured)["live_status"] == "contradicted"
    assert configured["live_sources"][0]["location"] == str(cwd.resolve() / "ledger.json")
    off = cli_query(capsys, notes, "--no-live")
    assert owner_of(off)["live_status"] == "not_checked"
    assert [read["id"] for read in off["verify_live_before_acting"]][:1] == [OWNER]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--live", "ftp://ledger/values"], "unknown scheme 'ftp'"),
        (["--live", "cmd:"], "needs a command"),
        (["--live", "x.json", "--live-timeout", "0"], "time limit must be more than 0"),
    ],
)
def test_cli_rejects_a_bad_live_source_clearly(
    capsys: pytest.CaptureFixture[str], notes: Path, cwd: Path, argv: list[str], message: str
) -> None:
    base = ["query", QUESTION, "--notes", str(notes), "--lanes", "lexical"]
    assert main([*base, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "option --live" in err


def test_a_missing_live_file_is_reported_in_the_packet_not_raised(
    capsys: pytest.CaptureFixture[str], notes: Path, cwd: Path
) -> None:
    packet = cli_query(capsys, notes, "--live", str(cwd / "no-such-ledger.json"))
    assert owner_of(packet)["live_status"] == "unavailable"
    assert "cannot be read as JSON" in packet["live_sources"][0]["detail"]
    assert any("unavailable" in warning for warning in packet["warnings"])


# ---------------------------------------------------------------- the magic and %config


@pytest.fixture
def shell(cwd: Path) -> Iterator[object]:
    ip.run_line_magic("load_ext", "retrieval_kernel")
    yield ip
    if "ContextMagics" in ip.config:
        del ip.config["ContextMagics"]
    for magics in (c for c in ip.configurables if isinstance(c, ContextMagics)):
        magics.live = None
        magics.live_timeout = None
        for workspace in magics._workspaces.values():
            workspace.close()
        magics._workspaces.clear()
        magics.last_packet = None


def magic(notes: Path, options: str = "") -> Packet:
    line = f"--notes {notes} --store {notes.parent / 'store'} --as-of {AS_OF} --lanes lexical {options} {QUESTION}"
    packet = ip.run_line_magic("context", line)
    assert isinstance(packet, Packet)
    return packet


def test_magic_live_option_and_config_traitlet(shell: object, notes: Path) -> None:
    assert magic(notes).to_dict()["verify_live_before_acting"][0]["id"] == OWNER
    flagged = magic(notes, f"--live {LEDGER}").to_dict()
    assert owner_of(flagged)["role"] == "contradicted"
    ip.run_line_magic("config", f"ContextMagics.live = [{str(LEDGER)!r}]")
    configured = magic(notes).to_dict()
    assert owner_of(configured)["role"] == "contradicted"
    assert "Maren Oduya" in str(magic(notes))
    assert owner_of(magic(notes, "--no-live").to_dict())["live_status"] == "not_checked"


def test_a_bad_config_value_is_refused_when_set(shell: object) -> None:
    magics = next(c for c in ip.configurables if isinstance(c, ContextMagics))
    with pytest.raises(TraitError, match=r"ContextMagics\.live = .*unknown scheme 'ftp'"):
        magics.live = ["ftp://ledger/values"]
    with pytest.raises(TraitError, match="live_timeout"):
        magics.live_timeout = -1.0
    assert magics.live is None


def test_a_bad_live_option_is_a_usage_error(shell: object, notes: Path) -> None:
    with pytest.raises(UsageError, match=r"option --live = .*needs a command"):
        magic(notes, "--live cmd:")


# ---------------------------------------------------------------- the explorer toggle


def test_explorer_live_toggle(notes: Path, tmp_path: Path) -> None:
    from retrieval_kernel import Explorer

    with Workspace(notes, tmp_path / "store", lanes=("lexical",)) as ws:
        explorer = Explorer(workspace=ws, as_of=AS_OF, query=QUESTION, live_checks=[JsonSystemOfRecord(LEDGER)])
        assert explorer.live.value is True and "ledger" in explorer.live.description
        assert explorer.packet is not None
        owner = next(e for e in explorer.packet.evidence if e.id == OWNER)
        assert owner.role == "contradicted"
        assert "CONTRADICTED by the system of record" in explorer.results.value
        assert "record.pb_1042.owner = Maren Oduya" in explorer.results.value
        explorer.live.value = False  # re-runs without asking the Ledger
        owner = next(e for e in explorer.packet.evidence if e.id == OWNER)
        assert owner.role == "current" and owner.live_status == "not_checked"
        assert "VERIFY LIVE BEFORE ACTING" in explorer.results.value
        plain = Explorer(workspace=ws, as_of=AS_OF)
        assert plain.live.disabled and plain.live.value is False
