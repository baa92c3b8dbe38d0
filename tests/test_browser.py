"""JupyterLab in a real (headless) browser: the packet and the explorer as a user sees them.

Starts JupyterLab on a free loopback port in a temporary root, with the project's IPython
profile (``extension/ipython``: kernels load the extension) and Lab settings
(``extension/lab/overrides.json``: no news, no update check), opens a notebook and drives
Debian's Chromium through Playwright. Screenshots go to ``test-artifacts/browser/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from lab_process import CHROMIUM, CHROMIUM_ARGS, ROOT, free_port

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = ROOT / "test-artifacts" / "browser"
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
CELLS = [
    f"%context --notes notes --as-of 2026-10-15 {QUESTION}",
    f"%context_explore --notes notes --as-of 2026-10-15 {QUESTION}",
    "%context --notes notes --as-of 2026-10-15 --lanes identity,lexical gearbox seals",
]


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


def _install_lab_settings() -> None:
    """What `make setup` does: the project's Lab settings (no news pop-up, no update check)."""
    target = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    source = ROOT / "extension" / "lab" / "overrides.json"
    if not target.exists() or target.read_bytes() != source.read_bytes():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def _wait_for_lab(url: str, process: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/api/status", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer at {url} within {timeout} s")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `.ci/run` installs Debian's chromium (apt-get install chromium)")
    root = tmp_path_factory.mktemp("lab")
    for name, text in NOTES.items():
        (root / "notes").mkdir(exist_ok=True)
        (root / "notes" / name).write_text(text, encoding="utf-8")
    (root / "explore.ipynb").write_text(json.dumps(_notebook(CELLS)), encoding="utf-8")
    _install_lab_settings()
    port = free_port()
    env = {**os.environ, "IPYTHONDIR": str(ROOT / "extension" / "ipython"), "JUPYTER_RUNTIME_DIR": str(root / "rt")}
    log = (root / "lab.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            f"--ServerApp.root_dir={root}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_lab(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / "lab.log", ARTIFACTS / "lab.log")


@pytest.fixture(scope="module")
def page(lab: str) -> Iterator[Page]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        tab = browser.new_page(viewport={"width": 1400, "height": 2000})
        tab.goto(f"{lab}/lab/tree/explore.ipynb")
        tab.wait_for_function(  # every cell rendered (the notebook renders cells lazily)
            f"() => document.querySelectorAll('.jp-Notebook .jp-CodeCell').length === {len(CELLS)}", timeout=60_000
        )
        _wait_idle(tab)
        _run_all(tab)
        yield tab
        browser.close()


def _wait_idle(tab: Page, timeout: float = 120_000) -> None:
    tab.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=timeout)


def _execution_counts(tab: Page) -> list[str]:
    prompts = tab.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt")
    return [text.strip() for text in prompts.all_inner_texts()]


def _run_all(tab: Page) -> None:
    """Run every cell with Shift+Enter, in order.

    A fresh kernel can drop the first key press: when a cell shows no sign of running
    after a few seconds, press again (at most 5 times); once it runs, wait for it.
    """
    cells = tab.locator(".jp-Notebook .jp-CodeCell")
    for index in range(len(CELLS)):
        for _attempt in range(5):
            _click(tab, cells.nth(index).locator(".jp-InputArea-editor"))
            tab.keyboard.press("Shift+Enter")
            if _wait_prompt(tab, index, lambda prompt: prompt not in ("[ ]:", ""), seconds=8):
                break
        assert _wait_prompt(tab, index, lambda prompt: prompt not in ("[ ]:", "[*]:", ""), seconds=180), (
            f"cell {index} did not finish: {_execution_counts(tab)}"
        )
    _wait_idle(tab)


def _click(tab: Page, target: Locator) -> None:
    """Click ``target``; when a Lab dialog is in the way, fail with what the dialog says.

    Lab sometimes asks which kernel to use although the notebook's kernel has already started (seen
    once in a CI run on a fresh clone): that dialog is accepted with the preselected Python kernel.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _attempt in range(2):
        try:
            target.click(timeout=30_000)
            return
        except PlaywrightTimeout:
            dialogs = tab.locator(".jp-Dialog").all_inner_texts()
            if not any(text.startswith("Select Kernel") for text in dialogs):
                break
            tab.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept").first.click(timeout=10_000)
    raise AssertionError(f"could not click the cell; Lab dialogs open: {dialogs}")


def _wait_prompt(tab: Page, index: int, done: Callable[[str], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if done(_execution_counts(tab)[index]):
            return True
        time.sleep(0.25)
    return False


def _shot(tab: Page, name: str, selector: str | None = None) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = tab.locator(selector).first if selector else tab
    target.screenshot(path=str(ARTIFACTS / name))


def test_every_cell_ran(page: Page) -> None:
    counts = _execution_counts(page)[: len(CELLS)]  # Lab adds an empty cell after the last one ran
    assert counts == ["[1]:", "[2]:", "[3]:"], counts
    assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0


def test_the_packet_shows_citations_and_both_clocks(page: Page) -> None:
    packet = page.locator(".jp-CodeCell").nth(0).locator(".rk-packet")
    text = packet.inner_text()
    assert "ownership.md:8-10" in text  # file and line range of "Deciding the owner"
    assert "observed 2026-10-01 (14 days before as-of; stale, fresh for 7 d)" in text
    assert "indexed " in text and "not live-verified" in text
    link = packet.locator("a.rk-cite").first
    # A relative link in the output; JupyterLab resolves it to the note in its file tree.
    assert link.get_attribute("href").split("?")[0].endswith("/files/notes/ownership.md")
    _shot(page, "packet.png", ".jp-CodeCell >> nth=0")


def test_the_explorer_answers_a_new_query_on_enter(page: Page) -> None:
    explorer = page.locator(".jp-CodeCell").nth(1)
    results = explorer.locator(".rk-results")
    assert "ownership" in results.inner_text()
    box = explorer.locator("input[placeholder='Ask your notes, then press Enter']")
    box.fill("What does a delivery plan contain?")
    box.press("Enter")
    first = explorer.locator("details.rk-row").first
    page.wait_for_function(
        "() => document.querySelector('.rk-results details.rk-row')?.dataset.evidenceId"
        " === 'delivery#what-a-delivery-plan-contains'",
        timeout=60_000,
    )
    first.locator("summary").click()  # expanding a row shows the excerpt with its line numbers
    assert "A delivery plan lists milestones" in first.inner_text()
    _shot(page, "explorer.png", ".jp-CodeCell >> nth=1")


def test_toggling_a_lane_changes_the_lanes_line(page: Page) -> None:
    explorer = page.locator(".jp-CodeCell").nth(1)
    lanes = explorer.locator(".rk-lanes")
    assert "dense " in lanes.inner_text()
    explorer.locator("label:has-text('dense') input[type=checkbox]").click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.rk-lanes')].every(e => !e.innerText.includes('dense '))",
        timeout=60_000,
    )
    assert "lexical " in lanes.inner_text()


def test_html_in_a_note_renders_as_text(page: Page) -> None:
    output = page.locator(".jp-CodeCell").nth(2).locator(".rk-packet")
    text = output.inner_text()
    assert "<script>window.__pwned=1</script>" in text
    assert "<img src=x onerror=window.__pwned=1>" in text
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.locator(".jp-OutputArea img[src='x']").count() == 0
