"""The JupyterLab extension in a real browser: the Context side panel, citations that open at their
lines (from the panel, from ``%context`` output and from the explorer), a note outside the root in a
read-only view, and the index state in the status bar.

Starts JupyterLab (with the labextension this checkout built: ``make setup``) on a free loopback
port in a temporary root and drives Debian's Chromium through Playwright. Screenshots go to
``test-artifacts/lab-extension/``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from lab_process import CHROMIUM, CHROMIUM_ARGS, LABEXTENSIONS, ROOT, TOKEN, Server, jupyter

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = ROOT / "test-artifacts" / "lab-extension"
AS_OF = "2026-10-15"
QUESTION = "Who decides the owner of a record?"
NOTES = {
    "ownership.md": "---\nid: ownership\nobserved: 2026-10-01\nauthority: reference\n---\n# Record ownership\n\n"
    "## Deciding the owner\n\nThe team that creates a record owns it and decides its owner.\n\n"
    "## Handing over\n\nWhen a team moves, it hands each record to a named successor.\n",
    "delivery.md": "---\nid: delivery\nobserved: 2026-10-01\n---\n# Delivery planning\n\n"
    "## What a delivery plan contains\n\nA delivery plan lists milestones, owners and the acceptance checkpoint.\n",
    "hostile.md": "---\nid: hostile\n---\n# Gearbox\n\n## Gearbox seals <img src=x onerror=window.__pwned=1>\n\n"
    "Gearbox seals <script>window.__pwned=1</script> are replaced yearly.\n",
}
ARCHIVE_NOTE = "# Archive\n\n## Kestrel calibration\n\nKestrel sensors are calibrated every spring.\n"
CELLS = [
    f"%context --notes notes --as-of {AS_OF} --lanes identity,lexical {QUESTION}",
    f"%context --notes ../archive --as-of {AS_OF} --lanes identity,lexical kestrel calibration",
    f"%context_explore --notes notes --as-of {AS_OF} What does a delivery plan contain?",
]
SELECTED = """() => {
  const content = [...document.querySelectorAll('.jp-FileEditor .cm-content')].find(c => c.offsetParent !== null);
  const view = content && (content.cmView?.view ?? content.cmTile?.view);
  if (!view) return null;
  const range = view.state.selection.main;
  return {doc: view.state.doc.toString(), selected: view.state.sliceDoc(range.from, range.to)};
}"""


def _lines(text: str, start: int, end: int) -> str:
    return "\n".join(text.split("\n")[start - 1 : end])


def _notebook(cells: list[str]) -> dict[str, object]:
    return {
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
            for source in cells
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: `.ci/run` installs Debian's chromium (apt-get install chromium)")
    if not (LABEXTENSIONS / "retrieval-kernel-lab" / "package.json").is_file():
        pytest.fail(f"the labextension is not built in {LABEXTENSIONS}: run `make setup` (npm builds extension/)")
    base = tmp_path_factory.mktemp("labext")
    root = base / "root"
    (root / "notes").mkdir(parents=True)
    for name, text in NOTES.items():
        (root / "notes" / name).write_text(text, encoding="utf-8")
    (root / "pyproject.toml").write_text(f'[tool.retrieval_kernel]\nnotes_dir = "notes"\nas_of = "{AS_OF}"\n')
    (base / "archive").mkdir()
    (base / "archive" / "kestrel.md").write_text(ARCHIVE_NOTE, encoding="utf-8")
    (root / "explore.ipynb").write_text(json.dumps(_notebook(CELLS)), encoding="utf-8")
    options = [f"--RetrievalKernel.extra_notes_dirs={base / 'archive'}"]
    env = {"IPYTHONDIR": str(ROOT / "extension" / "ipython")}
    with jupyter(root, app="jupyterlab", options=options, env=env) as server:
        yield server
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(server.log, ARTIFACTS / "lab.log")


@pytest.fixture(scope="module")
def page(lab: Server) -> Iterator[Page]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        tab.goto(f"{lab.url}/lab?token={TOKEN}")
        tab.wait_for_selector(".rk-status", timeout=90_000)
        yield tab
        browser.close()


def _shot(tab: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(ARTIFACTS / name))


def _ask(tab: Page, question: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    box = tab.locator(".rk-panel .rk-question")
    for attempt in range(3):  # on a loaded machine Lab may finish restoring its layout after the panel opened
        tab.keyboard.press("Alt+Shift+A")  # "Ask project notes": opens the panel with the question box focused
        try:
            box.wait_for(state="visible", timeout=10_000)
            box.fill(question, timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    answered = tab.locator(".rk-panel .rk-results").get_attribute("data-answers") or "0"
    box.press("Enter")
    tab.wait_for_function(
        "n => (document.querySelector('.rk-panel .rk-results').dataset.answers || '0') !== n",
        arg=answered,
        timeout=120_000,
    )


def _selection(tab: Page) -> dict[str, str]:
    tab.wait_for_function(f"() => {{ const s = ({SELECTED})(); return s && s.selected.length > 0; }}", timeout=30_000)
    selection: dict[str, str] = tab.evaluate(SELECTED)
    return selection


def _close_current_tab(tab: Page) -> None:
    """Close the tab a citation opened (the current one in the main area)."""
    tab.locator(".lm-DockPanel .lm-TabBar-tab.jp-mod-current .lm-TabBar-tabCloseIcon").first.click()


# ---------------------------------------------------------------- the side panel


def test_the_panel_answers_with_cited_evidence(page: Page) -> None:
    _ask(page, QUESTION)
    item = page.locator(".rk-panel .rk-item").first
    assert item.get_attribute("data-evidence-id") == "ownership#deciding-the-owner"
    text = item.inner_text()
    assert "ownership.md:8-10" in text and "Deciding the owner" in text
    assert "observed 2026-10-01" in text and "indexed " in text and "authority reference" in text
    assert "The team that creates a record owns it" in text
    _shot(page, "panel.png")


def test_a_citation_in_the_panel_opens_the_note_with_exactly_the_cited_lines_selected(page: Page) -> None:
    page.locator(".rk-panel .rk-item a.rk-cite").first.click()
    selection = _selection(page)
    note = NOTES["ownership.md"]
    assert selection["doc"] == note
    assert selection["selected"] == _lines(note, 8, 10)
    _shot(page, "citation-opened.png")
    _close_current_tab(page)


def test_html_in_a_note_renders_inert_in_the_panel(page: Page) -> None:
    _ask(page, "gearbox seals replaced")
    text = page.locator(".rk-panel .rk-results").inner_text()
    assert "<script>window.__pwned=1</script>" in text
    assert "<img src=x onerror=window.__pwned=1>" in text
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.locator(".rk-panel img").count() == 0 and page.locator(".rk-panel script").count() == 0


def test_a_bad_budget_is_shown_in_the_panel_not_a_traceback(page: Page) -> None:
    page.locator(".rk-panel .rk-budget").fill("5")
    _ask(page, QUESTION)
    error = page.locator(".rk-panel .rk-error").inner_text()
    assert "400" in error and "budget must be 1,000-1,000,000" in error and "Traceback" not in error
    page.locator(".rk-panel .rk-budget").fill("8000")


# ---------------------------------------------------------------- the status bar


def test_the_status_bar_turns_stale_on_an_edit_and_consistent_after_a_click(page: Page, lab: Server) -> None:
    status = page.locator(".rk-status")
    page.wait_for_function("() => document.querySelector('.rk-status').dataset.state === 'consistent'", timeout=30_000)
    note = lab.root / "notes" / "delivery.md"
    note.write_text(NOTES["delivery.md"] + "\nA plan also names a rollback owner.\n", encoding="utf-8")
    os.utime(note, (time.time() + 5, time.time() + 5))
    page.wait_for_function("() => document.querySelector('.rk-status').dataset.state === 'stale'", timeout=30_000)
    assert "stale (lag" in status.inner_text() and "changed on disk" in (status.get_attribute("title") or "")
    _shot(page, "status-stale.png")
    status.click()
    page.wait_for_function("() => document.querySelector('.rk-status').dataset.state === 'consistent'", timeout=60_000)
    assert status.inner_text() == "Notes: consistent"


# ---------------------------------------------------------------- citations in notebook output


@pytest.fixture(scope="module")
def notebook(page: Page) -> Page:
    page.goto(page.url.split("/lab")[0] + f"/lab/tree/explore.ipynb?token={TOKEN}")
    page.wait_for_function(
        f"() => document.querySelectorAll('.jp-Notebook .jp-CodeCell').length === {len(CELLS)}", timeout=60_000
    )
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=120_000)
    page.locator(".jp-Notebook .jp-CodeCell").first.locator(".jp-InputArea-editor").click()
    for index in range(len(CELLS)):
        prompt = page.locator(".jp-Notebook .jp-CodeCell").nth(index).locator(".jp-InputArea-prompt")
        for _attempt in range(5):  # a fresh kernel can drop the first key press
            page.locator(".jp-Notebook .jp-CodeCell").nth(index).locator(".jp-InputArea-editor").click()
            page.keyboard.press("Shift+Enter")
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline and prompt.inner_text().strip() in ("[ ]:", ""):
                time.sleep(0.25)
            if prompt.inner_text().strip() not in ("[ ]:", ""):
                break
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and prompt.inner_text().strip() in ("[ ]:", "[*]:", ""):
            time.sleep(0.25)
    page.wait_for_selector(".jp-CodeCell >> nth=2 >> .rk-results details.rk-row", timeout=60_000)
    return page


def test_a_citation_in_context_output_opens_the_note_at_its_lines(notebook: Page) -> None:
    link = notebook.locator(".jp-CodeCell").nth(0).locator(".rk-packet a.rk-cite").first
    assert link.get_attribute("data-rk-path") == "notes/ownership.md"  # the output's relative link (Lab rewrites href)
    assert (link.get_attribute("href") or "").split("?")[0].endswith("/files/notes/ownership.md")
    assert (link.get_attribute("data-rk-start"), link.get_attribute("data-rk-end")) == ("8", "10")
    link.click()
    selection = _selection(notebook)
    assert selection["doc"] == NOTES["ownership.md"]
    assert selection["selected"] == _lines(NOTES["ownership.md"], 8, 10)
    _close_current_tab(notebook)


def test_a_citation_of_a_note_outside_the_root_opens_a_read_only_view(notebook: Page) -> None:
    link = notebook.locator(".jp-CodeCell").nth(1).locator(".rk-packet a.rk-cite").first
    assert link.get_attribute("data-rk-path") == "../archive/kestrel.md"  # as reached, leaving the root
    start, end = int(link.get_attribute("data-rk-start") or 0), int(link.get_attribute("data-rk-end") or 0)
    link.click()
    view = notebook.locator(".rk-note-view").last
    view.wait_for(state="visible", timeout=30_000)
    cited = view.locator(".rk-cited").all_inner_texts()
    expected = _lines(ARCHIVE_NOTE, start, end).split("\n")
    assert [line.split(" ", 1)[1].replace("\u200b", "") for line in cited] == expected
    assert "read-only" in view.locator(".rk-note-head").inner_text()
    _shot(notebook, "read-only-view.png")
    _close_current_tab(notebook)


def test_a_citation_in_the_explorer_opens_the_note_at_its_lines(notebook: Page) -> None:
    row = notebook.locator(".jp-CodeCell").nth(2).locator("details.rk-row").first
    row.locator("summary").click()
    link = row.locator("a.rk-cite").first
    start, end = int(link.get_attribute("data-rk-start") or 0), int(link.get_attribute("data-rk-end") or 0)
    link.click()
    selection = _selection(notebook)
    assert selection["doc"] == NOTES["delivery.md"] + "\nA plan also names a rollback owner.\n"
    assert selection["selected"] == _lines(selection["doc"], start, end)
    _close_current_tab(notebook)


def test_the_palette_lists_the_commands_and_a_selection_becomes_a_context_cell(notebook: Page) -> None:
    notebook.keyboard.press("Control+Shift+C")  # the command palette
    search = notebook.locator(".lm-CommandPalette-input")
    search.fill("project notes")
    labels = notebook.locator(".lm-CommandPalette-item .lm-CommandPalette-itemLabel").all_inner_texts()
    assert "Ask project notes" in labels and "Insert %context cell for the selection" in labels
    search.press("Escape")
    cells = notebook.locator(".jp-Notebook .jp-CodeCell")
    before = cells.count()
    editor = cells.nth(before - 1).locator(".jp-InputArea-editor")  # the empty cell Lab adds after the last run
    editor.scroll_into_view_if_needed()
    editor.click()
    notebook.keyboard.type("who hands records over")
    notebook.keyboard.press("Control+A")  # select the cell's text
    notebook.keyboard.press("Alt+Shift+C")
    notebook.wait_for_function(
        f"() => document.querySelectorAll('.jp-Notebook .jp-CodeCell').length === {before + 1}", timeout=10_000
    )
    assert cells.nth(before).locator(".jp-InputArea-editor").inner_text().strip() == "%context who hands records over"
