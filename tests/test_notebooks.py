"""Jupyter notebooks as notes: Markdown cells only, exact cell citations, malformed notebooks reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from retrieval_kernel import NotebookError, Workspace
from retrieval_kernel.corpus.inventory import inventory
from retrieval_kernel.corpus.notes import read_note
from retrieval_kernel.output.render import citation, citation_html, to_html, to_text

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "fixtures" / "conventions" / "notebooks"
NOTEBOOK = "load-test-findings.ipynb"
AS_OF = "2026-11-30"


def cell_source_lines(path: Path, index: int) -> list[str]:
    """A cell's lines, read with json alone (independent of the parser): universal newlines."""
    source = json.loads(path.read_text(encoding="utf-8"))["cells"][index]["source"]
    text = "".join(source) if isinstance(source, list) else source
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def test_markdown_cells_are_passages_with_exact_cell_citations() -> None:
    note = read_note(FIXTURE, FIXTURE / NOTEBOOK)
    assert note.title == "Load test findings, November" and note.observed_at == "2025-11-14"
    assert note.facts.status == "current"
    cells = {(p.cell_id, p.cell_index) for p in note.passages}
    assert cells == {("setup", 1), ("findings", 3), ("decision", 4)}  # cell 2 is code, cell 0 only a title
    for passage in note.passages:
        lines = cell_source_lines(FIXTURE / NOTEBOOK, passage.cell_index)
        assert passage.text == "\n".join(lines[passage.line_start - 1 : passage.line_end])
    decision = next(p for p in note.passages if p.heading == "Decision")
    assert decision.heading_path == ("Load test findings, November", "Findings", "Decision")
    lead = next(p for p in note.passages if p.cell_id == "decision" and p.line_start == 1)
    assert lead.heading_path == ("Load test findings, November", "Findings")  # carried over from cell 3


def test_code_cells_and_outputs_are_never_indexed() -> None:
    note = read_note(FIXTURE, FIXTURE / NOTEBOOK)
    text = "\n".join(p.text for p in note.passages)
    assert "read_csv" not in text and "secret-output-marker" not in text


_line = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=60)
_cell_lines = st.lists(
    st.one_of(_line, st.sampled_from(["", "# Title", "## Section", "### Deep", "```", "---", "  "])), max_size=12
)


@st.composite
def notebooks(draw: st.DrawFn) -> tuple[str, dict[int, list[str]]]:
    """(notebook JSON, the Markdown cells' lines by index) with code cells in between."""
    cells = []
    expected: dict[int, list[str]] = {}
    for index, lines in enumerate(draw(st.lists(_cell_lines, max_size=8))):
        if draw(st.booleans()):
            cells.append(new_code_cell("\n".join(lines)))
            continue
        newline = draw(st.sampled_from(["\n", "\r\n"]))
        as_list = draw(st.booleans())
        source = newline.join(lines)
        cell = new_markdown_cell(source, id=f"c{index}")
        if as_list:  # nbformat's on-disk form: a list of lines with their endings
            cell["source"] = [line + newline for line in lines[:-1]] + lines[-1:]
        cells.append(cell)
        expected[index] = source.replace("\r\n", "\n").split("\n")
    notebook = new_notebook(cells=cells)
    return json.dumps(notebook), expected


@pytest.fixture(scope="module")
def property_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notebook_property")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=notebooks(), max_chars=st.integers(min_value=40, max_value=400))
def test_property_notebook_passages_cite_exact_cell_lines(
    doc: tuple[str, dict[int, list[str]]], max_chars: int, property_dir: Path
) -> None:
    text, expected = doc
    path = property_dir / "generated.ipynb"
    path.write_text(text, encoding="utf-8")
    try:
        note = read_note(property_dir, path, max_passage_chars=max_chars)
    except NotebookError:
        pytest.fail("a valid notebook was refused")
    except Exception as exc:  # front matter in the first cell may be invalid YAML: reported as a note error
        assert type(exc).__name__ == "FrontMatterError"
        return
    ids = [p.id for p in note.passages]
    assert len(ids) == len(set(ids))
    previous: tuple[int, int] = (-1, 0)
    for p in note.passages:
        assert p.cell_index in expected and p.cell_id == f"c{p.cell_index}"
        lines = expected[p.cell_index]
        assert 1 <= p.line_start <= p.line_end <= len(lines)
        assert p.text == "\n".join(lines[p.line_start - 1 : p.line_end])
        assert (p.cell_index, p.line_start) > previous, "passages overlap or are out of order"
        previous = (p.cell_index, p.line_end)


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (b"{not json", "is not a readable Jupyter notebook"),
        (b'{"cells": "nope", "nbformat": 4, "nbformat_minor": 5, "metadata": {}}', "notebook"),
        (b"[1, 2, 3]", "notebook"),
    ],
)
def test_a_malformed_notebook_is_reported_like_a_malformed_note(tmp_path: Path, content: bytes, detail: str) -> None:
    (tmp_path / "bad.ipynb").write_bytes(content)
    (tmp_path / "good.md").write_text("# Good\n\nStill here.\n", encoding="utf-8")
    listing = inventory(tmp_path)
    assert [entry["path"] for entry in listing["notes"]] == ["good.md"]
    (problem,) = listing["problems"]
    assert problem["path"] == "bad.ipynb" and detail in problem["error"]
    with pytest.raises(NotebookError):
        read_note(tmp_path, tmp_path / "bad.ipynb")


@pytest.fixture
def notebook_ws(tmp_path: Path):
    shutil.copytree(FIXTURE, tmp_path / "notes")
    (tmp_path / "notes" / "pool.md").write_text("# Connection pools\n\nPools are sized per service.\n")
    ws = Workspace(tmp_path / "notes", tmp_path / "store", lanes=("identity", "lexical"))
    ws.index()
    yield ws
    ws.close()


def test_a_notebook_in_the_notes_folder_is_searchable_with_cell_citations(notebook_ws) -> None:
    packet = notebook_ws.query("How many connections does the payments service pool have?", as_of=AS_OF)
    item = next(item for item in packet.evidence if item.path == NOTEBOOK)
    assert item.cell_id == "decision" and item.cell_index == 4
    lines = cell_source_lines(notebook_ws.notes_dir / NOTEBOOK, 4)
    assert item.excerpt == "\n".join(lines[item.line_start - 1 : item.line_end])
    assert {"id": "decision", "index": 4} in [e["cell"] for e in packet.to_dict()["evidence"]]
    assert citation(item) == f"{NOTEBOOK}[cell 4 id decision]:{item.line_start}-{item.line_end}"
    assert "[cell 4 id decision]" in to_text(packet)
    link = citation_html(item, str(notebook_ws.notes_dir))
    assert "#cell-id=decision" in link
    assert "#cell-id=decision" in to_html(packet)


def test_a_notebook_broken_after_indexing_keeps_its_last_good_revision(notebook_ws) -> None:
    path = notebook_ws.notes_dir / NOTEBOOK
    good = nbformat.read(path, as_version=4)
    good.cells.append(new_markdown_cell("## Follow-up\n\nRetest in January.", id="later"))
    good.cells.append(new_code_cell("x = 1", outputs=[new_output("stream", text="noise")]))
    nbformat.write(good, path)
    notebook_ws.index()
    path.write_text('{"cells": [', encoding="utf-8")  # saved half-way
    report = notebook_ws.index()
    (problem,) = report.problems
    assert problem.path == NOTEBOOK and "is not a readable Jupyter notebook" in problem.message
    assert problem.kept_last_good
    packet = notebook_ws.query("How many connections does the payments service pool have?", as_of=AS_OF)
    assert any(item.path == NOTEBOOK and item.cell_id == "decision" for item in packet.evidence)
    assert any(NOTEBOOK in warning for warning in packet.warnings)
    later = notebook_ws.query("When do we retest?", as_of=AS_OF)
    assert any(item.cell_id == "later" for item in later.evidence)  # the last good revision, whole


def test_mcp_reads_a_notebook_as_its_markdown_cells(notebook_ws) -> None:
    from retrieval_kernel.agents.service import EvidenceService, ServerConfig
    from retrieval_kernel.errors import InputError

    service = EvidenceService(ServerConfig(notebook_ws.notes_dir))
    try:
        text = service.read_note(notebook_ws, NOTEBOOK)
        assert "<!-- cell 4 id decision -->" in text and "pool of 60 connections" in text
        assert "read_csv" not in text and "secret-output-marker" not in text
        with pytest.raises(InputError, match="read the passage by its id"):
            service.read_note(notebook_ws, NOTEBOOK, "L1-L2")
        passage = service.read_passage(notebook_ws, "load-test-findings#decision")
        assert passage["cell"] == {"id": "decision", "index": 4}
    finally:
        service.close()
