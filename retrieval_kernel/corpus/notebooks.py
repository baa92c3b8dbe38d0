"""Jupyter notebooks as notes: their Markdown cells are the text, code cells and outputs are not.

A notebook passage cites the notebook's path, the cell (its ``id`` where the notebook has
one, nbformat 4.5+, and its 0-based ``index`` among all cells) and the 1-based, inclusive
line range *inside that cell's source*; its text is exactly those lines, so an excerpt can
always be checked against the cell. Headings carry over from cell to cell (a paragraph cell
after a ``## Decision`` cell is under "Decision"). The first Markdown cell may hold YAML
front matter (``---`` ... ``---``), read like a Markdown note's.
"""

from __future__ import annotations

import hashlib
import warnings as python_warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from ..errors import NotebookError
from .facts import read_facts
from .notes import (
    DEFAULT_MAX_PASSAGE_CHARS,
    Note,
    Passage,
    PassageIds,
    _Cut,
    front_matter,
    heading_cuts,
    module_of,
    observed_of,
    passages_of,
    sections_of,
    source_lines,
    title_of,
)


@dataclass(frozen=True)
class MarkdownCell:
    """One Markdown cell: its position, id, source lines and where its body starts (after front matter)."""

    index: int
    id: str | None
    lines: list[str]
    body_start: int = 0


def parse_notebook(
    rel_path: str,
    text: str,
    sha256: str | None = None,
    max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
    module: str | None = None,
) -> Note:
    """Parse a notebook's JSON text into a :class:`Note`; raise ``NotebookError`` if it is not a notebook."""
    cells = markdown_cells(rel_path, text)
    metadata: dict[str, Any] = {}
    if cells and cells[0].lines[:1] and cells[0].lines[0].strip() == "---":
        metadata, body_start = front_matter(rel_path, cells[0].lines)
        cells[0] = MarkdownCell(cells[0].index, cells[0].id, cells[0].lines, body_start)
    warnings: list[str] = []
    module = module or module_of(rel_path, metadata, warnings)
    all_cuts = [cut for cell in cells for cut in heading_cuts(cell.lines, cell.body_start)]
    title = title_of(rel_path, metadata, all_cuts)
    body = [line for cell in cells for line in cell.lines[cell.body_start :]]
    facts, dated, fact_warnings = read_facts(rel_path, metadata, body, 0)
    warnings += fact_warnings
    passages: list[Passage] = []
    ids = PassageIds()
    outer: list[_Cut] = []
    for cell in cells:
        cuts = heading_cuts(cell.lines, cell.body_start)
        sections = sections_of(cell.lines, cell.body_start, cuts, title, outer)
        cited = (cell.id, cell.index)
        passages += passages_of(rel_path, module, cell.lines, sections, max_passage_chars, ids, cited)
        outer = _headings_after(outer, cuts)
    return Note(
        path=rel_path,
        module=module,
        title=title,
        sha256=sha256 or hashlib.sha256(text.encode("utf-8")).hexdigest(),
        metadata=metadata,
        observed_at=observed_of(rel_path, metadata, warnings) or dated,
        passages=tuple(passages),
        warnings=tuple(warnings),
        facts=facts,
    )


def markdown_cells(rel_path: str, text: str) -> list[MarkdownCell]:
    """The notebook's Markdown cells (read with nbformat, upgraded to version 4), in order."""
    import nbformat

    try:
        with python_warnings.catch_warnings():  # missing cell ids and the like: we cite by index then
            python_warnings.simplefilter("ignore")
            notebook = nbformat.reads(text, as_version=4)
    except Exception as exc:  # nbformat raises NotJSONError, ValidationError, KeyError... for a broken file
        raise NotebookError(rel_path, f"is not a readable Jupyter notebook: {_first_line(exc)}") from exc
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise NotebookError(rel_path, "is not a Jupyter notebook: it has no list of cells")
    found: list[MarkdownCell] = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "markdown":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(rel_path, f"cell {index} has a source that is not text")
        cell_id = cell.get("id")
        found.append(
            MarkdownCell(index, cell_id if isinstance(cell_id, str) and cell_id else None, source_lines(source))
        )
    return found


def cell_lines(text: str, cell_index: int) -> list[str]:
    """The source lines of the notebook cell at ``cell_index`` (what a notebook citation's lines count)."""
    import nbformat

    with python_warnings.catch_warnings():
        python_warnings.simplefilter("ignore")
        notebook = nbformat.reads(text, as_version=4)
    source = notebook["cells"][cell_index].get("source", "")
    return source_lines("".join(source) if isinstance(source, list) else str(source))


def _headings_after(outer: Sequence[_Cut], cuts: Sequence[_Cut]) -> list[_Cut]:
    """The headings in force after a cell: ``outer``, with the cell's own headings nested in."""
    stack = list(outer)
    for cut in cuts:
        while stack and stack[-1].level >= cut.level:
            stack.pop()
        stack.append(cut)
    return stack


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def is_notebook(path: str) -> bool:
    return PurePosixPath(path).suffix.lower() == ".ipynb"
