"""The evaluation runner through the CLI: frozen inputs, gates, question files, metrics, provenance.

Every mutation happens on a copy of the suite in tmp_path; the real fixture is never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

import retrieval_kernel
from retrieval_kernel.cli import main
from retrieval_kernel.evaluation.policy_eval import _names
from retrieval_kernel.evaluation.suites import load_suite, verify_frozen

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKSHOP = REPO_ROOT / "fixtures" / "workshop"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def freeze(suite: Path) -> dict[str, str]:
    """Rewrite ``suite/manifest.json`` from what the folder holds now: suite.json, notes, question file.

    The notes folder and question file are the ones suite.json names (default notes/, questions.jsonl).
    """
    config = json.loads((suite / "suite.json").read_text(encoding="utf-8"))
    notes = suite / config.get("notes", "notes")
    questions = suite / config.get("questions", "questions.jsonl")
    files = [suite / "suite.json", *(p for p in notes.rglob("*.md") if not p.name.startswith("."))]
    if questions.exists():
        files.append(questions)
    hashes = {p.relative_to(suite).as_posix(): sha256(p) for p in sorted(files)}
    manifest = {"frozen_on": "2026-11-30", "files": hashes}
    (suite / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return hashes


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A private copy of the workshop suite."""
    copy = tmp_path / "workshop"
    shutil.copytree(WORKSHOP, copy)
    return copy


def run_eval(suite_dir: Path, output: Path, *extra: str) -> int:
    return main(["eval", str(suite_dir), "--output", str(output), *extra])


# ---------------------------------------------------------------- the freeze helper itself


def test_freeze_helper_reproduces_the_shipped_manifest(suite: Path) -> None:
    shipped = json.loads((WORKSHOP / "manifest.json").read_text(encoding="utf-8"))["files"]
    assert freeze(suite) == shipped


# ---------------------------------------------------------------- frozen inputs


def _append(path: Path, text: str = "\n") -> None:
    path.write_bytes(path.read_bytes() + text.encode("utf-8"))


def flip_one_byte(suite: Path) -> None:
    path = suite / "notes" / "record-ownership.md"
    data = bytearray(path.read_bytes())
    data[data.index(b"Ledger")] = ord("l")
    path.write_bytes(bytes(data))


def add_note(suite: Path) -> None:
    (suite / "notes" / "new-topic.md").write_text("# New\n\nkiln\n", encoding="utf-8")


def add_nested_note(suite: Path) -> None:
    (suite / "notes" / "sub").mkdir()
    (suite / "notes" / "sub" / "x.md").write_text("# X\n", encoding="utf-8")


def delete_note(suite: Path) -> None:
    (suite / "notes" / "delivery-planning.md").unlink()


@pytest.mark.parametrize(
    ("mutate", "named"),
    [
        (flip_one_byte, "notes/record-ownership.md"),
        (add_note, "notes/new-topic.md"),
        (add_nested_note, "notes/sub/x.md"),
        (delete_note, "notes/delivery-planning.md"),
        (lambda s: _append(s / "questions.jsonl"), "questions.jsonl"),
        (lambda s: _append(s / "suite.json", " "), "suite.json"),
    ],
    ids=["one-byte-changed", "note-added", "nested-note-added", "note-deleted", "questions-changed", "suite-changed"],
)
def test_changed_frozen_input_exits_3_and_writes_nothing(suite: Path, tmp_path: Path, capsys, mutate, named) -> None:
    mutate(suite)
    output = tmp_path / "R.json"
    assert run_eval(suite, output) == 3
    out = capsys.readouterr()
    assert f"'{named}'" in out.err
    assert "refusing to score" in out.err
    assert "Traceback" not in out.err
    assert out.out == ""
    assert not output.exists()


def test_unchanged_copy_verifies(suite: Path) -> None:
    """Control for the mutation tests: the untouched copy matches its manifest."""
    loaded = load_suite(suite)
    assert verify_frozen(loaded) == loaded.manifest


# ---------------------------------------------------------------- gates


def test_gate_that_cannot_pass_exits_1_and_still_writes_the_receipt(suite: Path, tmp_path: Path, capsys) -> None:
    config = json.loads((suite / "suite.json").read_text(encoding="utf-8"))
    config["gates"]["module_at_1"]["min"] = 1.01
    (suite / "suite.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    freeze(suite)
    output = tmp_path / "R.json"

    assert run_eval(suite, output) == 1
    assert "A GATE FAILED" in capsys.readouterr().out
    receipt = json.loads(output.read_text(encoding="utf-8"))
    assert receipt["passed"] is False
    gate = receipt["gates"]["module_at_1"]
    assert gate["passed"] is False
    assert gate["min"] == 1.01
    assert gate["value"] == receipt["metrics"]["module_at_1"]
    others = {name: g["passed"] for name, g in receipt["gates"].items() if name != "module_at_1"}
    assert others and all(others.values())
    assert receipt["inputs"]["files"]["suite.json"] == sha256(suite / "suite.json")


# ---------------------------------------------------------------- --questions


def write_jsonl(path: Path, rows: list[dict[str, str] | str]) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


Q_OWNER = {
    "id": "mine-1",
    "question": "How is ownership of a record decided?",
    "expected_module": "workshop-record-ownership",
    "expected_heading": "Deciding the owner",
}
Q_DEPLOY = {
    "id": "mine-2",
    "question": "Can a retrieved passage authorize deployment?",
    "expected_module": "workshop-record-ownership",
    "expected_heading": "Decision ownership",
}


def test_custom_question_file_outside_the_suite(tmp_path: Path) -> None:
    questions = write_jsonl(tmp_path / "mine.jsonl", [Q_OWNER, Q_DEPLOY])
    output = tmp_path / "R.json"
    assert run_eval(WORKSHOP, output, "--questions", str(questions)) == 0
    receipt = json.loads(output.read_text(encoding="utf-8"))
    record = receipt["inputs"]["questions"]
    assert record["frozen"] is False
    assert record["sha256"] == sha256(questions)
    assert record["path"] == str(questions)
    assert [row["id"] for row in receipt["questions"]] == ["mine-1", "mine-2"]
    assert receipt["metrics"]["questions"] == 2
    assert receipt["metrics"]["responses"] == 6


def test_custom_question_file_inside_the_suite_is_not_frozen(tmp_path: Path) -> None:
    suite = make_tiny_suite(tmp_path / "tiny", TINY_QUESTIONS)
    questions = write_jsonl(suite / "extra-questions.jsonl", TINY_QUESTIONS[:1])
    output = tmp_path / "R.json"
    assert run_eval(suite, output, "--questions", str(questions)) == 0
    record = json.loads(output.read_text(encoding="utf-8"))["inputs"]["questions"]
    assert record["frozen"] is False
    assert record["sha256"] == sha256(questions)


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([Q_OWNER, '{"id": "mine-2", "question": ', Q_DEPLOY], ":2:"),
        ([Q_OWNER, Q_DEPLOY, {k: v for k, v in Q_DEPLOY.items() if k != "expected_heading"}], ":3:"),
        ([Q_OWNER, {**Q_DEPLOY, "question": "   "}], ":2:"),
        ([Q_OWNER, {**Q_DEPLOY, "id": 7}], ":2:"),
        ([Q_OWNER, '["a", "list", "not", "an", "object"]'], ":2:"),
        (['"just a string"'], ":1:"),
        ([Q_OWNER, Q_DEPLOY, {**Q_DEPLOY, "question": "Same id again?"}], ":3"),
    ],
    ids=["bad-json", "missing-key", "blank-value", "non-string-id", "json-array-line", "json-string-line", "dup-id"],
)
def test_malformed_question_file_exits_2_naming_the_line(tmp_path: Path, capsys, rows, expected: str) -> None:
    questions = write_jsonl(tmp_path / "bad.jsonl", rows)
    output = tmp_path / "R.json"
    try:
        code = run_eval(WORKSHOP, output, "--questions", str(questions))
    except Exception as exc:
        pytest.fail(f"{type(exc).__name__} escaped the CLI instead of exit 2: {exc}")
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"{questions}{expected}" in err
    assert not output.exists()


def test_empty_question_file_exits_2(tmp_path: Path, capsys) -> None:
    questions = tmp_path / "empty.jsonl"
    questions.write_text("", encoding="utf-8")
    output = tmp_path / "R.json"
    assert run_eval(WORKSHOP, output, "--questions", str(questions)) == 2
    err = capsys.readouterr().err
    assert str(questions) in err
    assert "no questions" in err
    assert not output.exists()


def test_missing_question_file_exits_2(tmp_path: Path, capsys) -> None:
    assert run_eval(WORKSHOP, tmp_path / "R.json", "--questions", str(tmp_path / "absent.jsonl")) == 2
    assert "absent.jsonl" in capsys.readouterr().err


# ---------------------------------------------------------------- metric correctness on a tiny suite


ALPHA = """---
id: tiny-alpha
observed: 2026-10-01
---
## Gearbox oil

Check the gearbox oil level every Monday and top it up with grade 68 oil.

## Conveyor belt

Conveyor belt tension is set by the tensioner screw on the tail pulley.
"""

BETA = """---
id: tiny-beta
observed: 2026-10-01
---
## Kiln firing

The kiln firing schedule ramps the temperature to 1200 degrees over six hours.

## Kiln cooling

After firing, the kiln cools with the door shut until it is below 100 degrees.
"""

TINY_QUESTIONS = [
    # Only "Gearbox oil" mentions gearbox or oil: module and passage at rank 1.
    {"id": "t1", "question": "gearbox oil level", "expected_module": "tiny-alpha", "expected_heading": "Gearbox oil"},
    # Both kiln sections match; only "Kiln firing" has "temperature": right module first, passage at rank 2.
    {"id": "t2", "question": "kiln temperature", "expected_module": "tiny-beta", "expected_heading": "Kiln cooling"},
    # No note shares a word: the packet abstains, and the question scores 0 everywhere.
    {"id": "t3", "question": "zeppelin hangar", "expected_module": "tiny-alpha", "expected_heading": "Gearbox oil"},
]


def make_tiny_suite(
    root: Path, questions: list[dict[str, str]], gates: dict | None = None, question_file: str | None = None
) -> Path:
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "alpha.md").write_text(ALPHA, encoding="utf-8")
    (root / "notes" / "beta.md").write_text(BETA, encoding="utf-8")
    config = {
        "name": "tiny",
        "as_of": "2026-10-15",
        "budget_unit": "bytes",
        "caps": [3500, 8000],  # packet v5 items carry their source versions: two still fit at the smaller cap
        "rank_cap": 8000,
        "expected_observed_at": "2026-10-01",
        "gates": gates or {},
        **({"questions": question_file} if question_file else {}),
    }
    (root / "suite.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    write_jsonl(root / (question_file or "questions.jsonl"), questions)
    freeze(root)
    return root


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_suite(tmp_path_factory.mktemp("tiny") / "tiny", TINY_QUESTIONS)


@pytest.fixture(scope="module")
def tiny_receipt(tiny_dir: Path) -> dict:
    output = tiny_dir.parent / "tiny-receipt.json"
    assert run_eval(tiny_dir, output) == 0
    return json.loads(output.read_text(encoding="utf-8"))


def test_tiny_suite_ranks_are_as_designed(tiny_receipt: dict) -> None:
    rows = {row["id"]: row for row in tiny_receipt["questions"]}
    assert rows["t1"]["expected_rank"] == 1
    assert rows["t1"]["ranking"] == [["tiny-alpha", "Gearbox oil"]]
    assert rows["t2"]["expected_rank"] == 2
    assert rows["t2"]["ranking"] == [["tiny-beta", "Kiln firing"], ["tiny-beta", "Kiln cooling"]]
    assert rows["t3"]["expected_rank"] is None
    assert rows["t3"]["ranking"] == []
    assert rows["t3"]["top_module"] is None
    assert all(response["abstained"] for response in rows["t3"]["responses"].values())


def test_tiny_suite_metrics_exact(tiny_receipt: dict) -> None:
    metrics = tiny_receipt["metrics"]
    assert metrics["questions"] == 3
    # The abstaining question counts as a miss (0), not as a skipped question.
    assert metrics["module_at_1"] == pytest.approx(2 / 3)
    assert metrics["passage_at_1"] == pytest.approx(1 / 3)
    assert metrics["passage_in_top5"] == pytest.approx(2 / 3)
    assert metrics["passage_mrr_at_10"] == pytest.approx((1 + 1 / 2 + 0) / 3)
    assert metrics["responses"] == 6
    assert metrics["within_cap"] == 6
    # t1: 1 item at each cap; t2: 2 items at each cap; t3: none.
    assert metrics["citations_checked"] == 6
    assert metrics["citations_exact"] == 6
    assert metrics["freshness_honest"] == 6


def test_tiny_suite_all_abstaining_scores_zero(tmp_path: Path) -> None:
    questions = [
        {"id": "z1", "question": "zeppelin hangar", "expected_module": "tiny-alpha", "expected_heading": "Gearbox oil"},
        {
            "id": "z2",
            "question": "submarine periscope",
            "expected_module": "tiny-beta",
            "expected_heading": "Kiln firing",
        },
    ]
    suite_dir = make_tiny_suite(tmp_path / "tiny", questions, gates={"module_at_1": {"min": 0.5}})
    output = tmp_path / "R.json"
    assert run_eval(suite_dir, output) == 1
    receipt = json.loads(output.read_text(encoding="utf-8"))
    assert receipt["metrics"]["module_at_1"] == 0.0
    assert receipt["metrics"]["passage_at_1"] == 0.0
    assert receipt["metrics"]["passage_in_top5"] == 0.0
    assert receipt["gates"]["module_at_1"]["passed"] is False


def test_suite_naming_its_own_question_file_is_frozen_and_verified(tmp_path: Path, capsys) -> None:
    """suite.json may name its question file; that file is the frozen one, not questions.jsonl."""
    suite_dir = make_tiny_suite(tmp_path / "tiny", TINY_QUESTIONS, question_file="my-questions.jsonl")
    manifest = json.loads((suite_dir / "manifest.json").read_text(encoding="utf-8"))["files"]
    assert "my-questions.jsonl" in manifest
    output = tmp_path / "R.json"
    assert run_eval(suite_dir, output) == 0, capsys.readouterr().err
    receipt = json.loads(output.read_text(encoding="utf-8"))
    assert receipt["inputs"]["questions"]["frozen"] is True
    assert receipt["metrics"]["questions"] == 3

    _append(suite_dir / "my-questions.jsonl")  # a change to the declared question file must be caught
    output.unlink()
    assert run_eval(suite_dir, output) == 3
    assert "my-questions.jsonl" in capsys.readouterr().err
    assert not output.exists()


def test_output_to_a_missing_folder_exits_2_without_traceback(tmp_path: Path, capsys) -> None:
    suite_dir = make_tiny_suite(tmp_path / "tiny", TINY_QUESTIONS[:1])
    output = tmp_path / "no" / "such" / "folder" / "R.json"
    try:
        code = run_eval(suite_dir, output)
    except Exception as exc:
        pytest.fail(f"{type(exc).__name__} escaped the CLI instead of exit 2: {exc}")
    assert code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


# ---------------------------------------------------------------- provenance


def test_implementation_hashes_cover_every_package_source_file(tiny_receipt: dict) -> None:
    package = Path(retrieval_kernel.__file__).resolve().parent
    on_disk = {}
    for folder, _dirs, names in os.walk(package):
        for name in names:
            if name.endswith((".py", ".json")):  # code and the fitted models it reads
                path = Path(folder) / name
                on_disk[path.relative_to(package).as_posix()] = sha256(path)
    implementation = tiny_receipt["implementation"]
    assert len(on_disk) >= 17
    assert implementation["files"] == on_disk
    combined = hashlib.sha256(json.dumps(on_disk, sort_keys=True).encode()).hexdigest()
    assert implementation["combined_sha256"] == combined


def test_receipt_records_versions_and_inputs(tiny_receipt: dict, tiny_dir: Path) -> None:
    versions = tiny_receipt["versions"]
    assert versions["retrieval_kernel"] == retrieval_kernel.__version__
    for package in ("python", "whoosh-reloaded", "ir-measures", "pyyaml"):
        assert versions[package] and versions[package] != "not installed"
    inputs = tiny_receipt["inputs"]
    assert inputs["manifest_verified"] is True
    assert set(inputs["files"]) == {"suite.json", "notes/alpha.md", "notes/beta.md", "questions.jsonl"}
    assert inputs["questions"] == {
        "path": "questions.jsonl",
        "sha256": sha256(tiny_dir / "questions.jsonl"),
        "frozen": True,
    }


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"id": "controlled-drugs#keys"}', True),
        ("nursing/controlled-drugs.md", True),
        ("see controlled-drugs for the keys", True),
        ('"adr/0005-cd-register#5-keep-the-controlled-drugs-register-electronically"', False),  # a visible slug
        ("controlled-drugs-2027#keys", False),  # another note's id
    ],
)
def test_a_leak_names_the_forbidden_id_itself_not_a_longer_id_containing_it(text: str, named: bool) -> None:
    assert _names("controlled-drugs", text) is named
