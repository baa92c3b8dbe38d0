"""The IPython adapter: ``%context`` / ``%%context`` through a real (test) IPython shell.

Every call goes through the shell, and the cell-level tests use ``run_cell`` so
IPython's own input transforms (help syntax ``?``, ``x = %magic``) are exercised.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.getipython import get_ipython
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

import retrieval_kernel
from retrieval_kernel import Packet
from retrieval_kernel.magics import ContextMagics, route_context_lines

# start_ipython() only builds the shell once per process; later calls return None.
ip = start_ipython() or get_ipython()

AS_OF = "2026-10-15"
QUESTION = "How is ownership of a record decided?"
SETTINGS = ("notes_dir", "store_dir", "as_of", "max_bytes", "max_chars", "top", "refresh")


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory, workshop_notes: Path) -> Path:
    """A private copy of the workshop notes (a default store never lands in the fixture)."""
    target = tmp_path_factory.mktemp("magics") / "notes"
    shutil.copytree(workshop_notes, target)
    return target


def _context_magics() -> list[ContextMagics]:
    return [c for c in ip.configurables if isinstance(c, ContextMagics)]


@pytest.fixture(autouse=True)
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Extension loaded, cwd in an empty tmp folder (no pyproject), settings reset afterwards."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    ip.run_line_magic("load_ext", "retrieval_kernel")
    yield ip
    if "ContextMagics" in ip.config:
        del ip.config["ContextMagics"]
    for magics in _context_magics():
        for name in SETTINGS:
            setattr(magics, name, None)
        for workspace in magics._workspaces.values():
            workspace.close()
        magics._workspaces.clear()
        magics.last_packet = None
    ip.user_ns.pop("x", None)
    ip.user_ns.pop("y", None)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the shared notes copy (indexing is not what these tests are about)."""
    return tmp_path_factory.mktemp("magics-store") / "store"


def line(notes: Path, store: Path, rest: str, budget: str = "--max-bytes 4000") -> str:
    return f"--notes {notes} --store {store} --as-of {AS_OF} {budget} {rest}"


def run_cell_ok(source: str):
    result = ip.run_cell(source)
    assert result.error_in_exec is None, result.error_in_exec
    assert result.error_before_exec is None, result.error_before_exec
    return result


# ---------------------------------------------------------------- the input-transform path


def test_run_cell_with_trailing_question_mark_returns_a_packet(notes: Path, store: Path) -> None:
    result = run_cell_ok(f"%context {line(notes, store, QUESTION)}")
    packet = result.result
    assert isinstance(packet, Packet)
    assert packet.query == QUESTION  # the "?" stayed in the question, it was not read as help
    assert packet.budget.unit == "bytes"
    assert packet.budget.limit == 4000
    assert packet.budget.used <= 4000
    assert packet.as_of == AS_OF
    assert not packet.abstained
    assert packet.evidence[0].heading == "Deciding the owner"


def test_route_context_lines_rewrites_only_context_lines() -> None:
    routed = route_context_lines(["%context Who owns it?\n", "a = 1?\n", "%contextual x\n", "%%context\n"])
    assert routed[0] == "get_ipython().run_line_magic('context', 'Who owns it?')\n"
    assert routed[1:] == ["a = 1?\n", "%contextual x\n", "%%context\n"]


def test_assignment_from_context_line(notes: Path, store: Path) -> None:
    run_cell_ok(f"x = %context {line(notes, store, QUESTION)}")
    packet = ip.user_ns["x"]
    assert isinstance(packet, Packet)
    assert packet.query == QUESTION


def test_indented_context_inside_a_block(notes: Path, store: Path) -> None:
    source = f"if True:\n    y = %context {line(notes, store, QUESTION)}\n"
    run_cell_ok(source)
    assert isinstance(ip.user_ns["y"], Packet)
    assert ip.user_ns["y"].query == QUESTION


def test_cell_magic_through_run_cell_takes_a_multi_line_question(notes: Path, store: Path) -> None:
    question = "Who decides\nthe owner of a record?"
    result = run_cell_ok(f"%%context {line(notes, store, '')}\n{question}\n")
    assert isinstance(result.result, Packet)
    assert result.result.query == question


def test_bad_input_through_run_cell_is_reported_as_usage_error() -> None:
    result = ip.run_cell("%context How is ownership decided?")
    assert isinstance(result.error_in_exec, UsageError)


# ---------------------------------------------------------------- cell magic


def test_cell_magic_multi_line_question(notes: Path, store: Path) -> None:
    question = "When my records\nmove to another team,\nwho accepts them?"
    packet = ip.run_cell_magic("context", line(notes, store, ""), question)
    assert isinstance(packet, Packet)
    assert packet.query == question
    assert not packet.abstained


def test_cell_magic_rejects_question_on_the_magic_line(notes: Path, store: Path) -> None:
    with pytest.raises(UsageError, match="question in the cell"):
        ip.run_cell_magic("context", line(notes, store, "Who owns a record?"), "and more text")


# ---------------------------------------------------------------- quoting


def test_apostrophes_quotes_and_double_dash_stay_in_the_question(notes: Path, store: Path) -> None:
    question = """What's the owner's "rule of thumb" -- and who's asked first?"""
    packet = ip.run_line_magic("context", line(notes, store, question))
    assert packet.query == question
    result = run_cell_ok(f"%context {line(notes, store, question)}")
    assert result.result.query == question


@pytest.fixture(scope="module")
def spaced_notes(tmp_path_factory: pytest.TempPathFactory, workshop_notes: Path) -> Path:
    folder = tmp_path_factory.mktemp("spaced") / "my notes dir"
    folder.mkdir()
    shutil.copy(workshop_notes / "record-ownership.md", folder)
    return folder


@pytest.mark.parametrize(
    "template",
    ['--notes "{dir}"', "--notes '{dir}'", '--notes="{dir}"', "--notes='{dir}'"],
    ids=["space-double", "space-single", "equals-double", "equals-single"],
)
def test_quoted_notes_dir_with_spaces(template: str, spaced_notes: Path) -> None:
    option = template.format(dir=spaced_notes)
    store = spaced_notes.parent / "store"
    packet = ip.run_line_magic("context", f"{option} --store {store} --as-of {AS_OF} {QUESTION}")
    assert isinstance(packet, Packet)
    assert packet.query == QUESTION
    assert packet.evidence[0].path == "record-ownership.md"


def test_json_flag_prints_canonical_json_and_returns_none(notes: Path, store: Path) -> None:
    with capture_output() as captured:
        returned = ip.run_line_magic("context", line(notes, store, QUESTION, budget="--max-bytes 4000 --json"))
    assert returned is None
    printed = captured.stdout.rstrip("\n")
    assert "\n" not in printed  # compact: one line
    data = json.loads(printed)
    assert data["query"] == QUESTION
    assert data["budget"] == {"unit": "bytes", "limit": 4000, "used": len(printed.encode("utf-8"))}
    same = ip.run_line_magic("context", line(notes, store, QUESTION))
    assert printed == same.to_json()


def test_json_flag_through_run_cell_has_no_result(notes: Path, store: Path) -> None:
    with capture_output() as captured:
        result = run_cell_ok(f"%context --json {line(notes, store, QUESTION)}")
    assert result.result is None
    assert json.loads(captured.stdout)["query"] == QUESTION


# ---------------------------------------------------------------- settings precedence


def test_config_notes_dir_is_used_without_notes_option(notes: Path, store: Path) -> None:
    ip.run_line_magic("config", f"ContextMagics.notes_dir = {str(notes)!r}")
    ip.run_line_magic("config", f"ContextMagics.store_dir = {str(store)!r}")
    packet = ip.run_line_magic("context", f"--as-of {AS_OF} {QUESTION}")
    assert isinstance(packet, Packet)
    assert packet.evidence[0].module == "workshop-record-ownership"
    assert (store / "records.sqlite3").exists()


def write_pyproject(folder: Path, table: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text(f'[project]\nname = "x"\n\n[tool.retrieval_kernel]\n{table}\n', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def project_root(tmp_path_factory: pytest.TempPathFactory, workshop_notes: Path) -> Path:
    root = tmp_path_factory.mktemp("proj")
    shutil.copytree(workshop_notes, root / "notes")
    (root / "analysis").mkdir()
    return root


@pytest.fixture
def project(project_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with its own notes/ (pyproject written by each test); cwd is a subfolder of it."""
    monkeypatch.chdir(project_root / "analysis")
    yield project_root
    (project_root / "pyproject.toml").unlink(missing_ok=True)


def test_pyproject_supplies_notes_dir_relative_to_itself_and_max_bytes(project: Path) -> None:
    write_pyproject(project, 'notes_dir = "notes"\nstore_dir = "store"\nmax_bytes = 3000\nas_of = "2026-10-15"')
    packet = ip.run_line_magic("context", QUESTION)
    assert (packet.budget.unit, packet.budget.limit) == ("bytes", 3000)
    assert packet.budget.used <= 3000
    assert packet.as_of == AS_OF
    assert packet.evidence[0].path == "record-ownership.md"
    assert (project / "store" / "records.sqlite3").exists()
    assert not (project / "analysis" / "store").exists()  # relative to the pyproject, not the cwd


def test_magic_option_overrides_config_and_pyproject(project: Path, tmp_path: Path) -> None:
    write_pyproject(project, 'notes_dir = "missing-folder"\nstore_dir = "store"\nmax_bytes = 3000')
    ip.run_line_magic("config", "ContextMagics.max_bytes = 2500")
    ip.run_line_magic("config", "ContextMagics.as_of = '2026-01-01'")
    packet = ip.run_line_magic("context", f"--notes {project / 'notes'} --max-bytes 5000 --as-of {AS_OF} {QUESTION}")
    assert (packet.budget.unit, packet.budget.limit) == ("bytes", 5000)
    assert packet.as_of == AS_OF


def test_config_overrides_pyproject(project: Path) -> None:
    write_pyproject(project, 'notes_dir = "missing-folder"\nstore_dir = "store"\nmax_bytes = 3000')
    ip.run_line_magic("config", f"ContextMagics.notes_dir = {str(project / 'notes')!r}")
    ip.run_line_magic("config", "ContextMagics.max_bytes = 2500")
    packet = ip.run_line_magic("context", f"--as-of {AS_OF} {QUESTION}")
    assert (packet.budget.unit, packet.budget.limit) == ("bytes", 2500)


def test_max_chars_option_overrides_pyproject_max_bytes(project: Path) -> None:
    write_pyproject(project, 'notes_dir = "notes"\nstore_dir = "store"\nmax_bytes = 3000')
    packet = ip.run_line_magic("context", f"--max-chars 6000 --as-of {AS_OF} {QUESTION}")
    assert (packet.budget.unit, packet.budget.limit) == ("chars", 6000)


def test_config_max_chars_overrides_pyproject_max_bytes(project: Path) -> None:
    """%config is stronger than pyproject, for the budget as for every other setting."""
    write_pyproject(project, 'notes_dir = "notes"\nstore_dir = "store"\nmax_bytes = 3000')
    ip.run_line_magic("config", "ContextMagics.max_chars = 6000")
    packet = ip.run_line_magic("context", f"--as-of {AS_OF} {QUESTION}")
    assert (packet.budget.unit, packet.budget.limit) == ("chars", 6000)


def test_unknown_pyproject_key_is_a_usage_error_naming_it(project: Path) -> None:
    write_pyproject(project, 'notes_dir = "notes"\nmax_byets = 3000')
    with pytest.raises(UsageError, match="max_byets"):
        ip.run_line_magic("context", QUESTION)


# ---------------------------------------------------------------- bad input → UsageError only


def test_no_notes_configured_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no notes folder"):
        ip.run_line_magic("context", f"--as-of {AS_OF} {QUESTION}")


@pytest.mark.parametrize(
    ("rest", "message"),
    [
        ("--notes {missing} {question}", "does not exist"),
        ("--notes {notes}", "empty"),
        ("--notes {notes}    ", "empty"),
        ("--notes {notes} {long}", "limit"),
        ("--notes {notes} --max-bytes 10 {question}", "range"),
        ("--notes {notes} --max-bytes abc {question}", "invalid int"),
        ("--notes {notes} --max-bytes 4000 --max-chars 4000 {question}", "not allowed with"),
        ("--notes {notes} --bogus 1 {question}", "unrecognized"),
        ("--notes {notes} --as-of yesterday {question}", "yesterday"),
        ("--notes {notes} --top 0 {question}", "top"),
        ("--notes {notes} --top 1000 {question}", "top"),
        ("--notes {notes} --max-bytes", "needs a value"),
        ("--notes", "needs a value"),
    ],
    ids=[
        "missing-notes-dir",
        "empty-query",
        "blank-query",
        "5000-char-query",
        "max-bytes-10",
        "max-bytes-abc",
        "both-budgets",
        "unknown-option",
        "as-of-yesterday",
        "top-0",
        "top-1000",
        "max-bytes-without-value",
        "notes-without-value",
    ],
)
def test_bad_input_raises_usage_error(rest: str, message: str, notes: Path, store: Path, tmp_path: Path) -> None:
    magic_line = rest.format(notes=notes, missing=tmp_path / "nope", question=QUESTION, long="ownership " * 500)
    try:
        ip.run_line_magic("context", f"--store {store} --as-of {AS_OF} {magic_line}")
    except UsageError as exc:
        assert message in str(exc)
        assert str(exc).startswith("%context")
    except Exception as exc:  # pragma: no cover - only reached on a bug
        pytest.fail(f"{type(exc).__name__} escaped instead of UsageError: {exc}")
    else:
        pytest.fail("no UsageError raised")


def test_100k_char_query_is_a_usage_error(notes: Path, store: Path) -> None:
    # The registered magic itself, called with the line as the shell hands it over. (Through
    # ip.run_line_magic IPython first runs var_expand over the line, which takes minutes at this
    # length; see test_question_is_not_variable_expanded.)
    magic = ip.find_line_magic("context")
    question = "x" * 100_000
    with pytest.raises(UsageError, match="100,000 characters"):
        magic(line(notes, store, question))


def test_question_is_not_variable_expanded(notes: Path, store: Path) -> None:
    """The rest of the line is the query verbatim: no $name / {expr} interpolation."""
    ip.user_ns["owner"] = "ZZZ"
    try:
        question = "Is the {owner} of a record, or $owner, decided in {1+1} days?"
        packet = ip.run_line_magic("context", line(notes, store, question))
        assert packet.query == question
        result = run_cell_ok(f"%context {line(notes, store, question)}")
        assert result.result.query == question
    finally:
        ip.user_ns.pop("owner", None)


def test_empty_cell_is_a_usage_error(notes: Path, store: Path) -> None:
    with pytest.raises(UsageError, match="empty"):
        ip.run_cell_magic("context", line(notes, store, ""), "   \n  \n")


# ---------------------------------------------------------------- loading


def test_load_ext_twice_registers_the_transform_once() -> None:
    ip.run_line_magic("load_ext", "retrieval_kernel")
    ip.run_line_magic("load_ext", "retrieval_kernel")
    retrieval_kernel.load_ipython_extension(ip)  # a direct second registration too
    transforms = ip.input_transformer_manager.line_transforms
    assert transforms.count(route_context_lines) == 1
    assert "context" in ip.magics_manager.magics["line"]
    assert "context" in ip.magics_manager.magics["cell"]
