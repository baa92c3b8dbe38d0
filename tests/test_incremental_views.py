"""Views patched as the change log moves (scope view, links, observations, eligibility, identity names)
equal the same views built from every note, after any sequence of edits, additions and deletions; and a
long-lived workspace answers byte for byte like a fresh one after each edit."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_kernel import Workspace
from retrieval_kernel.corpus.facts import NoteFacts
from retrieval_kernel.corpus.links import LinkIndex, NoteRef, build_links
from retrieval_kernel.pipeline import identity
from retrieval_kernel.pipeline.eligibility import Eligibility
from retrieval_kernel.pipeline.scope import ScopeView, ScopeViews
from retrieval_kernel.store.indexing import sync_notes
from retrieval_kernel.store.records import RecordStore

REPO_ROOT = Path(__file__).resolve().parent.parent
PATHS: tuple[str, ...] = (
    "adr/0001-alpha.md",
    "adr/0002-beta.md",
    "adr/ADR-3-gamma.md",
    "ops/runbook.md",
    "ops/Runbook.md",
)
PATHS += ("records/stock-1.md", "records/stock-2.md", "eip-4.md")
REFERENCES = ("0001-alpha.md", "../adr/0002-beta.md", "ADR-3", "2", "4", "runbook", "alpha", "beta", "stock", "gone.md")
SCOPES: tuple[frozenset[str], ...] = (frozenset(), frozenset({"team-a"}), frozenset({"*"}))
CLOCKS = (dt.date(2026, 1, 1), dt.date(2027, 6, 1))
WORDS = ("refund", "ledger", "ferry", "stock", "window", "courier", "lantern", "gearbox")

_FIELDS = {
    "id": st.sampled_from(("alpha", "beta", "runbook", "stock")),
    "aliases": st.lists(st.sampled_from(("alpha", "Beta", "ledger-note", "runbook")), max_size=2),
    "status": st.sampled_from(("accepted", "superseded", "draft", "deprecated", "proposed")),
    "supersedes": st.lists(st.sampled_from(REFERENCES), max_size=2),
    "superseded_by": st.lists(st.sampled_from(REFERENCES), max_size=2),
    "amends": st.lists(st.sampled_from(REFERENCES), max_size=1),
    "requires": st.lists(st.sampled_from(REFERENCES), max_size=1),
    "scope": st.sampled_from(("team-a", "team-b")),
    "valid_from": st.sampled_from(("2025-01-01", "2026-06-01", "2027-01-01")),
    "valid_to": st.sampled_from(("2026-03-01", "2028-01-01")),
    "kind": st.sampled_from(("record", "report", "decision")),
    "asserts": st.sampled_from(({"stock_2027_01_01.units": 3}, {"stock_2027_02_01.units": 4})),
    "observed": st.sampled_from(("2026-12-01", "2027-01-15", "2027-03-01")),
}
_note = st.tuples(st.fixed_dictionaries({}, optional=_FIELDS), st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
# A write replaces a whole note; a tweak sets or drops one field of its front matter (links mostly kept).
_step = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(PATHS), _note),
    st.tuples(st.just("delete"), st.sampled_from(PATHS), st.none()),
    st.sampled_from(sorted(_FIELDS)).flatmap(
        lambda name: st.tuples(
            st.just("tweak"), st.sampled_from(PATHS), st.tuples(st.just(name), st.none() | _FIELDS[name])
        )
    ),
)


def _text(front: dict[str, Any], words: list[str]) -> str:
    head = "---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n" if front else ""
    sections = "".join(f"\n## Part {n}\n\n{' '.join(words[n:])} notes.\n" for n in range(1, len(words)))
    return f"{head}# {' '.join(words).title()}\n\nAbout {' '.join(words)}.\n{sections}"


def _apply(root: Path, notes: dict[str, Any], step: tuple[str, str, Any], tick: int) -> None:
    """Carry out one step on the folder and on ``notes`` (path -> (front matter, words))."""
    kind, rel, change = step
    path = root / rel
    if kind == "delete":
        notes.pop(rel, None)
        path.unlink(missing_ok=True)
        return
    if kind == "tweak":
        front, words = notes.get(rel, ({}, ["refund"]))
        name, value = change
        change = ({**{k: v for k, v in front.items() if k != name}, **({} if value is None else {name: value})}, words)
    notes[rel] = change
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_text(*change), encoding="utf-8")
    os.utime(path, ns=(tick * 10**9, tick * 10**9))  # a new stat, so the walk sees every write


def _public(view: ScopeView) -> tuple[Any, ...]:
    return (
        view.facts,
        view.hidden,
        view.links,
        view.hidden_paths,
        view.hidden_terms,
        view.observations,
        view.scopes,
        view.high_water,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_step, min_size=1, max_size=10), st.lists(st.lists(_step, min_size=1, max_size=2), max_size=6))
def test_patched_views_equal_views_built_from_every_note(first: list[Any], later: list[list[Any]]) -> None:
    """A first batch of steps, then smaller ones: after each, every patched view equals a fresh build."""
    with tempfile.TemporaryDirectory() as folder:
        root, store = Path(folder) / "notes", Path(folder) / "store"
        root.mkdir()
        notes: dict[str, Any] = {}
        with RecordStore(store) as records:
            trackers = {scopes: ScopeViews(scopes) for scopes in SCOPES}
            last: dict[tuple[frozenset[str], dt.date], tuple[ScopeView, Eligibility]] = {}
            for round_, steps in enumerate([first, *later]):
                for tick, step in enumerate(steps):
                    _apply(root, notes, step, 100 * round_ + tick + 1)
                sync_notes(root, records)
                for scopes, tracker in trackers.items():
                    view = tracker.view(records)
                    assert _public(view) == _public(ScopeView.build(records, scopes))
                    assert list(view.facts) == sorted(view.facts)
                    for as_of in CLOCKS:
                        last[scopes, as_of] = (view, _eligibility(records, view, as_of, last.get((scopes, as_of))))
                every = identity._NameIndex.build(records, 0).names
                assert records.modules() == {doc.module: path for path, doc in records.documents().items()}
                assert identity._named(records, [*every, "absent"]) == {**every, "absent": []}
                assert identity._NAME_INDEXES[records.path].names == every


def _eligibility(
    records: RecordStore, view: ScopeView, as_of: dt.date, last: tuple[ScopeView, Eligibility] | None
) -> Eligibility:
    built = Eligibility.build(records, view, as_of)
    if last is not None:
        changed = records.changed_paths(last[0].high_water)
        assert changed is not None
        patched = last[1].patched(records, last[0], view, changed, as_of)
        assert patched == built
        assert list(patched.codes or {}) == list(built.codes or {})
    return built


def test_a_link_index_kept_note_by_note_resolves_like_one_built_at_once() -> None:
    notes = [
        NoteRef("adr/0001-a.md", "a", NoteFacts(superseded_by=("0002-b.md",))),
        NoteRef("adr/0002-b.md", "b", NoteFacts(aliases=("B", "bee"))),
        NoteRef("adr/0003-c.md", "c", NoteFacts(supersedes=("b", "ADR-1"), requires=("bee",))),
        NoteRef("ADR/0003-C.md", "c2", NoteFacts(amends=("3",))),
    ]
    index = LinkIndex()
    for note in reversed(notes):
        index.put(note)
    assert index.links() == build_links(notes)
    index.drop("adr/0002-b.md")
    added = NoteRef("adr/0004-d.md", "d", NoteFacts(aliases=("bee",)))
    index.put(added)
    assert index.links() == build_links([notes[0], notes[2], notes[3], added])
    assert index.links().requires == {"adr/0003-c.md": ("adr/0004-d.md",)}


FAST = ("identity", "lexical")
QUESTIONS = ("Which message broker carries order events?", "ADR-0009", "stock availability cache", "refunds")


def test_a_workspace_answers_like_a_fresh_one_after_each_edit(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(REPO_ROOT / "fixtures" / "policy" / "notes", notes)
    adr = sorted((notes / "adr").glob("*.md"))
    edits = [
        lambda: adr[1].write_text(adr[1].read_text() + "\n## Status\n\nSuperseded by ADR-0010\n"),
        lambda: (notes / "adr" / "0011-new.md").write_text(
            "---\nsupersedes: [ADR-0009]\nscope: [ops]\n---\n# 11. New\n"
        ),
        lambda: adr[2].unlink(),
        lambda: (notes / "adr" / "0011-new.md").write_text("---\nsupersedes: [ADR-0008]\n---\n# 11. Newer\n\nCache.\n"),
    ]
    with Workspace(notes, tmp_path / "store", lanes=FAST) as workspace:
        workspace.index()
        for edit in [lambda: None, *edits]:
            edit()
            workspace.query(QUESTIONS[0], as_of="2026-11-30")  # finds the edit, answers first
            workspace.flush_writes()  # then the projections are written, as once the workspace is idle
            for scopes in (None, "ops"):
                for question in QUESTIONS:
                    kept = workspace.query(question, as_of="2026-11-30", scopes=scopes).to_json()
                    with Workspace(notes, tmp_path / "store", lanes=FAST, refresh="off") as fresh:
                        assert fresh.query(question, as_of="2026-11-30", scopes=scopes).to_json() == kept
