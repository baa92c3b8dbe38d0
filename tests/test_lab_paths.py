"""Where a cited note opens: the path as the user reached it (never symlink-resolved), inside the
Jupyter root or served read-only from a notes folder outside it; nothing else outside the root."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.errors import InputError, OutsideRootError
from retrieval_kernel.lab.paths import root_relative, served_note
from retrieval_kernel.output.render import to_html

NOTE = "# Gearbox\n\n## Seals\n\nGearbox seals are replaced yearly.\n"


def _links(packet_html: str) -> list[dict[str, str]]:
    anchors = re.findall(r"<a class=\"rk-cite\"([^>]*)>", packet_html)
    return [{k: html.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', anchor)} for anchor in anchors]


def test_a_link_keeps_the_symlinked_path_the_notes_were_reached_by(tmp_path: Path, monkeypatch) -> None:
    real = tmp_path / "elsewhere" / "corpus"
    real.mkdir(parents=True)
    (real / "gearbox.md").write_text(NOTE, encoding="utf-8")
    checkout = tmp_path / "checkout"
    (checkout / "notebooks").mkdir(parents=True)
    (checkout / "shared").symlink_to(tmp_path / "elsewhere")  # a clone whose shared/ is a symlink
    monkeypatch.chdir(checkout / "notebooks")
    with Workspace("../shared/corpus", store_dir=tmp_path / "store", lanes=("lexical",)) as ws:
        ws.index()
        packet = ws.query("gearbox seals", as_of="2026-10-15")
    (link,) = _links(to_html(packet))
    assert link["href"] == link["data-rk-path"] == "../shared/corpus/gearbox.md"  # not ../../elsewhere/...
    assert (link["data-rk-start"], link["data-rk-end"]) == ("3", "5")
    lines = NOTE.split("\n")[2:5]
    assert packet.evidence[0].excerpt == "\n".join(lines)


def test_root_relative_is_lexical_and_none_outside_the_root(tmp_path: Path) -> None:
    (tmp_path / "root" / "linked").mkdir(parents=True)
    assert root_relative(tmp_path / "root", tmp_path / "root" / "linked" / "a.md") == "linked/a.md"
    assert root_relative(tmp_path / "root", tmp_path / "root" / "linked" / ".." / "b.md") == "b.md"
    assert root_relative(tmp_path / "root", tmp_path / "other" / "a.md") is None
    assert root_relative(tmp_path / "root", tmp_path / "rootless" / "a.md") is None  # a prefix is not a parent


def test_served_note_allows_notes_of_served_folders_only(tmp_path: Path) -> None:
    root, notes = tmp_path / "root", tmp_path / "corpus"
    root.mkdir()
    notes.mkdir()
    (notes / "a.md").write_text(NOTE)
    (notes / "data.csv").write_text("x")
    (tmp_path / "secret.md").write_text("secret")
    file, folder = served_note(root, "../corpus/a.md", [notes])
    assert (file, folder) == (notes / "a.md", notes)
    with pytest.raises(OutsideRootError, match="outside the Jupyter root"):
        served_note(root, "../secret.md", [notes])
    with pytest.raises(OutsideRootError, match="outside the Jupyter root"):
        served_note(root, "../corpus/../secret.md", [notes])
    with pytest.raises(OutsideRootError, match="not a Markdown note"):
        served_note(root, "../corpus/data.csv", [notes])
    with pytest.raises(InputError, match="relative to the Jupyter root"):
        served_note(root, "/etc/passwd", [notes])


def test_a_symlink_inside_a_served_folder_cannot_reach_outside_it(tmp_path: Path) -> None:
    root, notes = tmp_path / "root", tmp_path / "corpus"
    root.mkdir()
    notes.mkdir()
    (tmp_path / "secret.md").write_text("secret")
    (notes / "leak.md").symlink_to(tmp_path / "secret.md")
    with pytest.raises(OutsideRootError, match="outside the Jupyter root"):
        served_note(root, "../corpus/leak.md", [notes])  # lexically inside, really outside


def test_a_served_folder_reached_through_a_symlink_is_served(tmp_path: Path) -> None:
    root, real = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    real.mkdir()
    (real / "a.md").write_text(NOTE)
    (tmp_path / "shared").symlink_to(real)
    file, folder = served_note(root, "../shared/a.md", [tmp_path / "shared"])
    assert (file, folder) == (tmp_path / "shared" / "a.md", tmp_path / "shared")
