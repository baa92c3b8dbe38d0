"""The note inventory and the ``retrieval-kernel notes`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_kernel.cli import main
from retrieval_kernel.corpus.inventory import inventory
from retrieval_kernel.errors import NotesDirError

POLICY_A = """\
---
id: refund-policy-a
title: Refund policy (A)
aliases: [old refund policy]
observed: 2026-01-10
valid_from: 2026-01-01
valid_to: 2026-11-27
revision: A
authority: Reference
scope: [tenant-a, tenant-b]
status: superseded
superseded_by: [refund-policy-b]
asserts: {refund_window_days: 30}
fresh_for: 90d
kind: policy
---
# Refunds

Refunds are accepted for 30 days.
"""

POLICY_B = """\
---
id: refund-policy-b
observed: 2026-11-28
valid_from: 2026-11-28
revision: B
authority: authoritative
scope: tenant-a
status: current
supersedes: [refund-policy-a@A]
asserts: {refund_window_days: 14, currency: EUR}
---
# Refunds

Refunds are accepted for 14 days.

## Exceptions

None.
"""

ADR_OLD = """\
# 1. Use a queue

Date: 08/01/24

## Status

⌛️ Superseded [2](0002-use-a-log.md)

## Context

Text.
"""

ADR_NEW = """\
# 2. Use a log

Date: 2024-03-01

## Status

✅ Accepted

## Context

Text.
"""

FILES = {
    "policies/a.md": POLICY_A,
    "policies/b.md": POLICY_B,
    "adr/0001-use-a-queue.md": ADR_OLD,
    "adr/0002-use-a-log.md": ADR_NEW,
    "broken.md": "---\ntitle: [unclosed\n---\nBody.\n",
    "dangling.md": "---\nsuperseded_by: [nobody-here]\nauthority: official\n---\nBody.\n",
    "dups/ADR001-index.md": "## Status\n\nSuperseded by ADR007\n",
    "dups/ADR007-one.md": "# One\n\nBody.\n",
    "dups/ADR007-two.md": "# Two\n\nBody.\n",
}

NOTE_PATHS = [
    "adr/0001-use-a-queue.md",
    "adr/0002-use-a-log.md",
    "dangling.md",
    "dups/ADR001-index.md",
    "dups/ADR007-one.md",
    "dups/ADR007-two.md",
    "policies/a.md",
    "policies/b.md",
]

BROKEN_ERROR = "broken.md:2: front matter is not valid YAML: expected ',' or ']', but got '<stream end>'"


@pytest.fixture
def notes_dir(make_notes) -> Path:
    return make_notes(FILES)


def by_path(listing: dict) -> dict[str, dict]:
    return {entry["path"]: entry for entry in listing["notes"]}


# ---------------------------------------------------------------- inventory()


def test_inventory_lists_parsed_notes_sorted_and_the_malformed_one_as_a_problem(notes_dir: Path) -> None:
    listing = inventory(notes_dir)
    assert list(listing) == ["notes", "problems", "unresolved_links", "ambiguous_links"]
    assert [entry["path"] for entry in listing["notes"]] == NOTE_PATHS
    assert listing["problems"] == [{"path": "broken.md", "error": BROKEN_ERROR}]


def test_inventory_entry_shows_every_front_matter_fact(notes_dir: Path) -> None:
    assert by_path(inventory(notes_dir))["policies/a.md"] == {
        "id": "refund-policy-a",
        "path": "policies/a.md",
        "title": "Refund policy (A)",
        "observed": "2026-01-10",
        "date_line": None,
        "valid_from": "2026-01-01",
        "valid_to": "2026-11-27",
        "revision": "A",
        "status": "superseded",
        "status_as_written": "superseded",
        "status_source": "front matter",
        "supersedes": [],
        "superseded_by": ["policies/b.md"],
        "amends": [],
        "partly_superseded_by": [],
        "requires": [],
        "authority": "reference",
        "scope": ["tenant-a", "tenant-b"],
        "asserts": {"refund_window_days": 30},
        "fresh_for": "90d",
        "kind": "policy",
        "aliases": ["old refund policy"],
        "passages": 1,
        "cells": None,
        "warnings": [],
    }


def test_inventory_shows_supersession_from_both_sides(notes_dir: Path) -> None:
    entries = by_path(inventory(notes_dir))
    b = entries["policies/b.md"]
    assert (b["supersedes"], b["superseded_by"]) == (["policies/a.md"], [])
    assert (b["scope"], b["authority"], b["asserts"]) == (
        ["tenant-a"],
        "authoritative",
        {"currency": "EUR", "refund_window_days": 14},
    )
    assert b["passages"] == 2
    old, new = entries["adr/0001-use-a-queue.md"], entries["adr/0002-use-a-log.md"]
    assert (old["supersedes"], old["superseded_by"]) == ([], ["adr/0002-use-a-log.md"])
    assert (new["supersedes"], new["superseded_by"]) == (["adr/0001-use-a-queue.md"], [])


def test_inventory_shows_adr_conventions_as_read(notes_dir: Path) -> None:
    old = by_path(inventory(notes_dir))["adr/0001-use-a-queue.md"]
    assert old["id"] == "adr/0001-use-a-queue"
    assert old["title"] == "1. Use a queue"
    assert (old["status"], old["status_as_written"], old["status_source"]) == (
        "superseded",
        "⌛️ Superseded [2](0002-use-a-log.md)",
        "status section",
    )
    assert (old["observed"], old["date_line"]) == ("2024-01-08", "Date: 08/01/24")
    assert (old["authority"], old["scope"], old["asserts"], old["revision"]) == (None, [], {}, None)


def test_inventory_reports_unresolved_and_ambiguous_links_and_warnings(notes_dir: Path) -> None:
    listing = inventory(notes_dir)
    assert listing["unresolved_links"] == [{"path": "dangling.md", "reference": "nobody-here"}]
    assert listing["ambiguous_links"] == [
        {"path": "dups/ADR001-index.md", "reference": "ADR007", "matches": ["dups/ADR007-one.md", "dups/ADR007-two.md"]}
    ]
    entries = by_path(listing)
    assert entries["dups/ADR001-index.md"]["superseded_by"] == ["dups/ADR007-one.md", "dups/ADR007-two.md"]
    assert entries["dangling.md"]["superseded_by"] == []
    assert entries["dangling.md"]["warnings"] == [
        "dangling.md: authority 'official' is not one of authoritative, reference, informal; treated as unknown"
    ]


def test_inventory_is_json_serialisable(notes_dir: Path) -> None:
    listing = inventory(notes_dir)
    assert json.loads(json.dumps(listing)) == listing


def test_inventory_of_an_empty_folder(tmp_path: Path) -> None:
    assert inventory(tmp_path) == {"notes": [], "problems": [], "unresolved_links": [], "ambiguous_links": []}


def test_inventory_accepts_a_string_path(notes_dir: Path) -> None:
    assert inventory(str(notes_dir)) == inventory(notes_dir)


def test_inventory_of_a_missing_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(NotesDirError, match="does not exist"):
        inventory(tmp_path / "nope")


def test_inventory_lists_a_non_utf8_note_as_a_problem(make_notes) -> None:
    root = make_notes({"ok.md": "# OK\n\nBody.\n", "latin.md": "# Caf\u00e9\n".encode("latin-1")})
    listing = inventory(root)
    assert [entry["path"] for entry in listing["notes"]] == ["ok.md"]
    assert listing["problems"] == [
        {"path": "latin.md", "error": "latin.md: not valid UTF-8 (byte 5); re-save it as UTF-8"}
    ]


# ---------------------------------------------------------------- the notes command


def test_notes_command_prints_one_line_per_note_then_problems(notes_dir: Path, capsys) -> None:
    assert main(["notes", str(notes_dir)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.splitlines() == [
        "adr/0001-use-a-queue.md  id=adr/0001-use-a-queue status=superseded (⌛️ Superseded [2](0002-use-a-log.md)) "
        "authority=None observed=2024-01-08 scope=- superseded_by=adr/0002-use-a-log.md",
        "adr/0002-use-a-log.md  id=adr/0002-use-a-log status=current (✅ Accepted) authority=None observed=2024-03-01 "
        "scope=-",
        "dangling.md  id=dangling status=None authority=None observed=None scope=-",
        "dups/ADR001-index.md  id=dups/ADR001-index status=superseded (Superseded by ADR007) authority=None "
        "observed=None scope=- superseded_by=dups/ADR007-one.md,dups/ADR007-two.md",
        "dups/ADR007-one.md  id=dups/ADR007-one status=None authority=None observed=None scope=-",
        "dups/ADR007-two.md  id=dups/ADR007-two status=None authority=None observed=None scope=-",
        "policies/a.md  id=refund-policy-a status=superseded authority=reference observed=2026-01-10 "
        "scope=tenant-a,tenant-b superseded_by=policies/b.md",
        "policies/b.md  id=refund-policy-b status=current authority=authoritative observed=2026-11-28 scope=tenant-a",
        f"broken.md  NOT PARSED: {BROKEN_ERROR}",
    ]


def test_notes_command_json_is_the_inventory(notes_dir: Path, capsys) -> None:
    assert main(["notes", str(notes_dir), "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == inventory(notes_dir)
    assert "⌛️ Superseded" in out  # ensure_ascii=False: written as is, not escaped


def test_notes_command_reports_partial_supersession_requires_and_notebook_cells(capsys) -> None:
    conventions = Path(__file__).resolve().parents[1] / "fixtures" / "conventions"
    assert main(["notes", str(conventions), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    notes = {entry["path"]: entry for entry in listing["notes"]}
    assert notes["partial/0006-on-call-rota.md"]["partly_superseded_by"] == ["partial/0008-follow-the-sun.md"]
    assert notes["partial/0008-follow-the-sun.md"]["amends"] == ["partial/0006-on-call-rota.md"]
    assert notes["pep-headers/tip-0012.md"]["requires"] == ["pep-headers/tip-0003.md", "pep-headers/tip-0007.md"]
    assert notes["pep-headers/tip-0012.md"]["status_as_written"] == "Final"
    assert notes["notebooks/load-test-findings.ipynb"]["cells"] == [1, 3, 4]
    assert listing["problems"] == [] and listing["unresolved_links"] == []
    assert main(["notes", str(conventions / "partial")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any("status=partly_superseded (Accepted; partly superseded by" in line for line in lines)


def test_notes_command_on_a_missing_folder_exits_2(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nope"
    assert main(["notes", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"retrieval-kernel notes: notes directory {missing} does not exist\n"
