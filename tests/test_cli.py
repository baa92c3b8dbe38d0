"""The command-line adapter: ``retrieval-kernel index | query | eval``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_kernel.cli import main

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = REPO_ROOT / "fixtures" / "workshop"
AS_OF = "2026-10-15"
QUESTION = "How is ownership of a record decided?"
CONSOLE_SCRIPT = Path(sys.executable).parent / "retrieval-kernel"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, workshop_notes: Path) -> Path:
    """A folder with ``notes/`` (a workshop copy) and its ``store/``, shared by the query tests."""
    root = tmp_path_factory.mktemp("cli")
    shutil.copytree(workshop_notes, root / "notes")
    return root


@pytest.fixture
def notes(shared: Path) -> Path:
    return shared / "notes"


def query_args(notes: Path, tmp_path: Path, *extra: str, text: str = QUESTION) -> list[str]:
    """``query`` argv against ``notes`` with the store beside it (``tmp_path`` only names missing folders)."""
    return ["query", text, "--notes", str(notes), "--store", str(notes.parent / "store"), "--as-of", AS_OF, *extra]


# ---------------------------------------------------------------- index


def test_index_reports_added_then_unchanged_then_updated(
    tmp_path: Path, workshop_notes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(workshop_notes, notes)
    store = tmp_path / "store"
    expected = sorted(p.name for p in notes.glob("*.md"))
    assert len(expected) == 7

    assert main(["index", str(notes), "--store", str(store)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert sorted(first["added"]) == expected
    assert first["updated"] == [] and first["deleted"] == []
    assert first["unchanged"] == 0
    assert first["passages"] >= 21
    assert first["problems"] == []
    assert first["store"] == str(store)

    assert main(["index", str(notes), "--store", str(store)]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["added"] == [] and second["updated"] == [] and second["deleted"] == []
    assert second["unchanged"] == len(expected)
    assert second["passages"] == first["passages"]

    note = notes / "source-age.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nOne more line about kilns.\n", encoding="utf-8")
    (notes / "delivery-planning.md").unlink()
    assert main(["index", str(notes), "--store", str(store)]) == 0
    third = json.loads(capsys.readouterr().out)
    assert third["added"] == []
    assert third["updated"] == ["source-age.md"]
    assert third["deleted"] == ["delivery-planning.md"]
    assert third["unchanged"] == 5


# ---------------------------------------------------------------- query


@pytest.mark.parametrize("cap", [1500, 4000, 12000])
def test_query_prints_json_within_max_bytes(notes: Path, tmp_path: Path, capsys, cap: int) -> None:
    assert main(query_args(notes, tmp_path, "--max-bytes", str(cap))) == 0
    out = capsys.readouterr()
    assert out.err == ""
    text = out.out.rstrip("\n")
    packet = json.loads(text)
    size = len(text.encode("utf-8"))
    assert size <= cap
    assert packet["budget"] == {"unit": "bytes", "limit": cap, "used": size}
    assert packet["query"] == QUESTION
    assert packet["as_of"] == AS_OF


def test_query_evidence_cites_the_right_passage(notes: Path, tmp_path: Path, capsys) -> None:
    assert main(query_args(notes, tmp_path)) == 0
    packet = json.loads(capsys.readouterr().out)
    top = packet["evidence"][0]
    assert (top["path"], top["heading"]) == ("record-ownership.md", "Deciding the owner")
    lines = (notes / top["path"]).read_text(encoding="utf-8").split("\n")
    assert "\n".join(lines[top["line_start"] - 1 : top["line_end"]]) == top["excerpt"]


@pytest.mark.parametrize(
    ("fmt", "marker"),
    [
        ("text", "Context for 'How is ownership of a record decided?' as of 2026-10-15"),
        ("markdown", "**Context** for _How is ownership of a record decided?_ as of 2026-10-15"),
        ("html", '<div class="rk-packet"'),
    ],
)
def test_query_formats(notes: Path, tmp_path: Path, capsys, fmt: str, marker: str) -> None:
    assert main(query_args(notes, tmp_path, "--format", fmt)) == 0
    out = capsys.readouterr().out
    assert marker in out
    assert "record-ownership.md:12-14" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (lambda notes, tmp: query_args(notes, tmp, text=""), "empty"),
        (lambda notes, tmp: query_args(notes, tmp, text="   "), "empty"),
        (lambda notes, tmp: query_args(tmp / "no-such-notes", tmp), "does not exist"),
        (lambda notes, tmp: query_args(notes, tmp, "--max-bytes", "10"), "range"),
        (lambda notes, tmp: query_args(notes, tmp, "--as-of", "yesterday"), "yesterday"),
        (lambda notes, tmp: query_args(notes, tmp, "--top", "0"), "top"),
        (lambda notes, tmp: ["index", str(tmp / "no-such-notes")], "does not exist"),
        (lambda notes, tmp: ["eval", str(tmp / "no-such-suite")], "suite.json"),
    ],
    ids=["empty-query", "blank-query", "missing-notes", "max-bytes-10", "bad-as-of", "top-0", "index-missing", "eval"],
)
def test_bad_input_exits_2_with_one_line(notes: Path, tmp_path: Path, capsys, args, message: str) -> None:
    argv = args(notes, tmp_path)
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.out == ""
    err_lines = out.err.strip("\n").split("\n")
    assert len(err_lines) == 1, out.err
    assert err_lines[0].startswith(f"retrieval-kernel {argv[0]}: ")
    assert message in err_lines[0]
    assert "Traceback" not in out.err


# ---------------------------------------------------------------- the installed entry point


def run_console(*args: str, module: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "retrieval_kernel.cli"] if module else [str(CONSOLE_SCRIPT)]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120, check=False)


def test_console_script_is_installed_and_runs_main() -> None:
    assert CONSOLE_SCRIPT.exists(), "the retrieval-kernel console script is not installed in this environment"
    done = run_console("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: retrieval-kernel")
    for command in ("index", "query", "eval"):
        assert command in done.stdout


@pytest.mark.parametrize("module", [False, True], ids=["console-script", "python-m"])
def test_entry_point_bad_input_exits_2_with_one_line(notes: Path, tmp_path: Path, module: bool) -> None:
    bad = run_console(*query_args(notes, tmp_path, "--max-bytes", "10"), module=module)
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    assert bad.stderr.startswith("retrieval-kernel query: ")
    assert "10 bytes" in bad.stderr


# ---------------------------------------------------------------- eval


METRIC_KEYS = {
    "module_at_1",
    "passage_at_1",
    "passage_in_top5",
    "citations_exact",
    "citations_checked",
    "within_cap",
    "responses",
    "freshness_honest",
}


def test_eval_workshop_writes_a_receipt(tmp_path: Path, capsys) -> None:
    output = tmp_path / "R.json"
    before = {p: p.read_bytes() for p in WORKSHOP.rglob("*") if p.is_file()}

    assert main(["eval", str(WORKSHOP), "--output", str(output)]) == 0
    out = capsys.readouterr()
    assert "all gates passed" in out.out
    assert "| Expected module ranked first" in out.out

    receipt = json.loads(output.read_text(encoding="utf-8"))
    assert {"inputs", "implementation", "versions", "metrics", "gates", "questions"} <= set(receipt)
    metrics = receipt["metrics"]
    assert set(metrics) >= METRIC_KEYS
    assert metrics["questions"] == 20
    assert metrics["responses"] == 60
    assert metrics["within_cap"] == 60
    assert metrics["citations_exact"] == metrics["citations_checked"] > 0
    assert 0.0 <= metrics["passage_at_1"] <= metrics["passage_in_top5"] <= 1.0
    assert receipt["passed"] is True
    assert all(gate["passed"] for gate in receipt["gates"].values())
    assert receipt["inputs"]["manifest_verified"] is True
    assert receipt["inputs"]["questions"]["frozen"] is True

    rows = receipt["questions"]
    assert len(rows) == 20
    assert len({row["id"] for row in rows}) == 20
    for row in rows:
        assert sorted(row["responses"], key=int) == ["2000", "4000", "12000"]
        for cap, response in row["responses"].items():
            assert response["size"] <= int(cap)

    after = {p: p.read_bytes() for p in WORKSHOP.rglob("*") if p.is_file()}
    assert after == before  # the evaluation indexed into a scratch store, not the fixture
