"""The JupyterLab server extension over HTTP, in a real ``jupyter server`` process.

Settings come from the root's pyproject (as for the magics); every endpoint answers under Jupyter's
authentication and XSRF protection; bad input is a 4xx with a message and loses nothing; a note
path outside the root is refused unless it is a note of a folder the server serves.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_process import TOKEN, Server, jupyter

from retrieval_kernel.errors import NotConfiguredError
from retrieval_kernel.lab.config import NOT_CONFIGURED
from retrieval_kernel.lab.service import LabService
from retrieval_kernel.settings import Settings

pytestmark = pytest.mark.slow

NOTES = {
    "ownership.md": "---\nid: ownership\nobserved: 2026-10-01\nauthority: reference\n---\n# Record ownership\n\n"
    "## Deciding the owner\n\nThe team that creates a record owns it and decides its owner.\n\n"
    "## Handing over\n\nWhen a team moves, it hands each record to a named successor.\n",
    "delivery.md": "---\nid: delivery\nobserved: 2026-10-01\n---\n# Delivery planning\n\n"
    "## What a delivery plan contains\n\nA delivery plan lists milestones, owners and the acceptance checkpoint.\n",
}
OUTSIDE_NOTE = "# Archive\n\n## Old gearbox rule\n\nGearboxes were oiled monthly.\n"
QUESTION = "Who decides the owner of a record?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("labserver")
    root = base / "root"
    (root / "notes").mkdir(parents=True)
    for name, text in NOTES.items():
        (root / "notes" / name).write_text(text, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[tool.retrieval_kernel]\nnotes_dir = "notes"\nas_of = "2026-10-15"\n', encoding="utf-8"
    )
    (base / "archive").mkdir()
    (base / "archive" / "gearbox.md").write_text(OUTSIDE_NOTE, encoding="utf-8")
    (base / "secret.md").write_text("# Secret\n\nnot for the browser\n", encoding="utf-8")
    with jupyter(root, options=[f"--RetrievalKernel.extra_notes_dirs={base / 'archive'}"]) as running:
        yield running


def call(
    server: Server, endpoint: str, body: Any = None, query: str = "", token: str | None = TOKEN
) -> tuple[int, Any]:
    """``(status, JSON answer)``: POST when ``body`` is given (a str is sent as is), else GET."""
    data = None if body is None else (body if isinstance(body, str) else json.dumps(body)).encode()
    request = urllib.request.Request(f"{server.url}/retrieval-kernel/{endpoint}{query}", data=data)
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, text


def ask(server: Server, **fields: Any) -> dict[str, Any]:
    status, answer = call(server, "query", {"question": QUESTION, "lanes": ["identity", "lexical"], **fields})
    assert status == 200, answer
    return answer


# ---------------------------------------------------------------- authentication and XSRF


def test_an_unauthenticated_request_is_refused(server: Server) -> None:
    for endpoint, body in (("status", None), ("query", {"question": QUESTION}), ("refresh", {})):
        status, _ = call(server, endpoint, body, token=None)
        assert status == 403, endpoint
    status, _ = call(server, "note", query="?note=ownership.md", token="wrong-token")
    assert status == 403


def test_a_cookie_session_needs_the_xsrf_token_to_post(server: Server) -> None:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.open(f"{server.url}/login?token={TOKEN}", timeout=30).read()  # a browser's login: session + _xsrf cookies
    xsrf = next(cookie.value for cookie in jar if cookie.name == "_xsrf")
    with opener.open(f"{server.url}/retrieval-kernel/status", timeout=60) as response:  # GET: the cookie suffices
        assert json.loads(response.read())["configured"] is True
    body = json.dumps({"question": QUESTION, "lanes": ["lexical"]}).encode()
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(urllib.request.Request(f"{server.url}/retrieval-kernel/query", data=body), timeout=60)
    assert refused.value.code == 403 and "_xsrf" in refused.value.read().decode()
    signed = urllib.request.Request(f"{server.url}/retrieval-kernel/query", data=body, headers={"X-XSRFToken": xsrf})
    with opener.open(signed, timeout=120) as response:
        assert json.loads(response.read())["packet"]["query"] == QUESTION


# ---------------------------------------------------------------- query, passage, select


def test_query_answers_the_packet_and_where_each_note_opens(server: Server) -> None:
    answer = ask(server)
    packet = answer["packet"]
    assert packet["as_of"] == "2026-10-15"  # from the root's pyproject, like the magics
    first = packet["evidence"][0]
    assert first["path"] == "ownership.md" and first["heading"] == "Deciding the owner"
    assert answer["links"][first["id"]] == "notes/ownership.md"  # relative to the server root
    lines = (server.root / "notes" / "ownership.md").read_text().splitlines()
    assert first["excerpt"] == "\n".join(lines[first["line_start"] - 1 : first["line_end"]])


def test_passage_gives_the_stored_lines_and_their_lab_path(server: Server) -> None:
    first = ask(server)["packet"]["evidence"][0]
    status, passage = call(server, "passage", query=f"?id={urllib.parse.quote(first['id'])}")
    assert status == 200
    assert (passage["line_start"], passage["line_end"], passage["lab_path"]) == (
        first["line_start"],
        first["line_end"],
        "notes/ownership.md",
    )
    status, missing = call(server, "passage", query="?id=nothing-here")
    assert status == 404 and "no passage with that id" in missing["error"]


def test_select_answers_a_selection_packet_and_where_each_note_opens(server: Server) -> None:
    body = {"question": QUESTION, "lanes": ["identity", "lexical"], "budget": 4000}
    status, answer = call(server, "select", body)
    assert status == 200, answer
    packet = answer["packet"]
    assert packet["as_of"] == "2026-10-15" and packet["budget"]["limit"] == 4000  # as the query endpoint
    assert packet["selection"]["outcome"] in {"selected", "empty", "needs_condition"}
    selected = {record["path"] for record in packet["selection"]["records"]}
    assert {item["path"] for item in packet["evidence"]} <= selected
    assert answer["links"] == {item["id"]: f"notes/{item['path']}" for item in packet["evidence"]}
    status, refused = call(server, "select", {"question": QUESTION, "budget": 10})
    assert status == 400 and "budget must be 1,000-1,000,000" in refused["error"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"question": "   "}, '"question" is empty'),
        ({}, '"question" is missing'),
        ({"question": QUESTION, "budget": 10}, "budget must be 1,000-1,000,000"),
        ({"question": QUESTION, "budget": "lots"}, '"budget" must be a whole number'),
        ({"question": QUESTION, "lanes": ["telepathy"]}, "telepathy"),
        ({"question": QUESTION, "top": 0}, "top"),
        ({"question": QUESTION, "as_of": "yesterday"}, "yesterday"),
        ({"question": QUESTION, "intent": "guess"}, "guess"),
        ("not json", "not JSON"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_bad_input_is_a_400_with_a_message_and_loses_nothing(server: Server, body: Any, words: str) -> None:
    before = ask(server)["packet"]["evidence"]
    status, answer = call(server, "query", body)
    assert status == 400, answer
    assert words in answer["error"] and "Traceback" not in answer["error"]
    assert ask(server)["packet"]["evidence"] == before  # the workspace still answers as before


# ---------------------------------------------------------------- notes inside and outside the root


def test_note_reads_notes_inside_the_root_and_of_served_folders(server: Server) -> None:
    status, inside = call(server, "note", query="?path=notes/ownership.md")
    assert status == 200 and inside["lab_path"] == "notes/ownership.md"
    assert inside["lines"] == (server.root / "notes" / "ownership.md").read_text().splitlines()
    status, outside = call(server, "note", query="?path=../archive/gearbox.md")
    assert status == 200, outside
    assert outside["lab_path"] is None and outside["lines"][4] == "Gearboxes were oiled monthly."


@pytest.mark.parametrize("path", ["../secret.md", "../../../../etc/passwd", "/etc/passwd", "notes/../../secret.md"])
def test_note_refuses_a_path_outside_the_root(server: Server, path: str) -> None:
    status, answer = call(server, "note", query=f"?path={urllib.parse.quote(path)}")
    assert status in (400, 403), answer
    assert "not for the browser" not in json.dumps(answer) and "root:" not in json.dumps(answer)


# ---------------------------------------------------------------- status and refresh


def test_status_turns_stale_when_a_note_changes_and_consistent_after_refresh(server: Server) -> None:
    ask(server)  # on-query refresh: caught up
    status, state = call(server, "status")
    assert status == 200 and state["state"] == "consistent", state
    note = server.root / "notes" / "delivery.md"
    note.write_text(note.read_text() + "\nA plan also names a rollback owner.\n", encoding="utf-8")
    os.utime(note, (time.time() + 5, time.time() + 5))  # a distinct mtime even on coarse clocks
    _, state = call(server, "status")
    assert state["state"] == "stale" and state["pending_notes"] == 1, state
    assert "1 note(s) changed on disk" in state["reason"]
    status, refreshed = call(server, "refresh", {})
    assert status == 200 and refreshed["state"] == "consistent", refreshed
    assert refreshed["refresh"]["state"] == "consistent"


# ---------------------------------------------------------------- no notes folder


def test_without_a_notes_folder_the_service_says_how_to_configure_one(tmp_path: Path) -> None:
    service = LabService(tmp_path, Settings())
    assert asyncio.run(service.status())["state"] == "unconfigured"
    with pytest.raises(NotConfiguredError, match="no notes folder is configured"):
        asyncio.run(service.query({"question": QUESTION}))
    assert "RetrievalKernel.notes_dir" in NOT_CONFIGURED
