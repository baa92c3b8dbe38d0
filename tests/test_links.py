"""Supersession links: reference resolution, edges, reports, and the shared real ADR corpora."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from retrieval_kernel.corpus.facts import NoteFacts
from retrieval_kernel.corpus.links import Edge, LinkGraph, NoteRef, build_links
from retrieval_kernel.corpus.notes import Note, default_module, discover_notes, parse_note, read_note

REPO_ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- helpers


def ref(
    path: str,
    module: str | None = None,
    *,
    aliases: tuple[str, ...] = (),
    supersedes: tuple[str, ...] = (),
    superseded_by: tuple[str, ...] = (),
) -> NoteRef:
    facts = NoteFacts(aliases=aliases, supersedes=supersedes, superseded_by=superseded_by)
    return NoteRef(path, module or default_module(path), facts)


def pairs(graph: LinkGraph) -> list[tuple[str, str]]:
    return [(edge.old, edge.new) for edge in graph.edges]


def graph_of(files: dict[str, str]) -> LinkGraph:
    notes = [parse_note(path, text) for path, text in files.items()]
    return build_links(NoteRef(note.path, note.module, note.facts) for note in notes)


def adr_text(number: int, status: str) -> str:
    return f"# {number}. Decision {number}\n\nDate: 2022-01-01\n\n## Status\n\n{status}\n\n## Context\n\nText.\n"


# ---------------------------------------------------------------- by link target


def test_relative_link_target_resolves_in_the_notes_folder() -> None:
    graph = build_links([ref("adr/0002-b.md", superseded_by=("0003-c.md",)), ref("adr/0003-c.md"), ref("0003-c.md")])
    assert graph.edges == (Edge("adr/0002-b.md", "adr/0003-c.md", "adr/0002-b.md"),)
    assert (graph.unresolved, graph.ambiguous) == ((), ())


@pytest.mark.parametrize(
    "target",
    [
        "../decisions/0009-new.md",
        "./../decisions/0009-new.md",
        "../decisions/0009-NEW.MD",
        "../decisions/0009-new.md#status",
    ],
)
def test_link_target_is_normalised_case_insensitive_and_without_anchor(target: str) -> None:
    graph = build_links([ref("adr/0002-b.md", superseded_by=(target,)), ref("decisions/0009-new.md")])
    assert pairs(graph) == [("adr/0002-b.md", "decisions/0009-new.md")]
    assert graph.unresolved == ()


def test_link_target_to_an_upper_case_suffix_file() -> None:
    graph = build_links([ref("dr/DR002-a.md", superseded_by=("DR007-b.MD",)), ref("dr/DR007-b.MD")])
    assert pairs(graph) == [("dr/DR002-a.md", "dr/DR007-b.MD")]


def test_missing_link_target_falls_back_to_the_number_in_its_file_name() -> None:
    graph = build_links(
        [
            ref("ADR/ADR004-store.md", superseded_by=("ADR045-use-forms-api.md",)),
            ref("ADR/ADR045-remove-forms-api.md"),
        ]
    )
    assert pairs(graph) == [("ADR/ADR004-store.md", "ADR/ADR045-remove-forms-api.md")]
    assert (graph.unresolved, graph.ambiguous) == ((), ())


def test_missing_link_target_without_a_number_is_unresolved() -> None:
    graph = build_links([ref("a.md", superseded_by=("gone.md",)), ref("b.md")])
    assert graph.edges == ()
    assert graph.unresolved == (("a.md", "gone.md"),)


# ---------------------------------------------------------------- by id or alias


def test_reference_by_note_id_case_insensitive() -> None:
    graph = build_links(
        [ref("a.md", "refund-policy-a", superseded_by=("Refund-Policy-B",)), ref("b.md", "refund-policy-b")]
    )
    assert graph.edges == (Edge("a.md", "b.md", "a.md"),)


def test_reference_by_alias() -> None:
    graph = build_links([ref("a.md", supersedes=("old refund policy",)), ref("old.md", aliases=("Old Refund Policy",))])
    assert graph.edges == (Edge("old.md", "a.md", "a.md"),)


def test_reference_by_default_module_of_a_note_in_a_folder() -> None:
    graph = build_links([ref("a.md", superseded_by=("policies/refunds",)), ref("policies/refunds.md")])
    assert pairs(graph) == [("a.md", "policies/refunds.md")]


def test_id_at_revision_sets_the_edge_revision() -> None:
    graph = build_links(
        [
            ref("a.md", "refund-policy-a"),
            ref("b.md", "refund-policy-b", supersedes=("refund-policy-a@A",)),
        ]
    )
    assert graph.edges == (Edge(old="a.md", new="b.md", declared_by="b.md", revision="A"),)


def test_at_revision_is_trimmed_and_an_empty_revision_is_not_stripped() -> None:
    graph = build_links(
        [
            ref("a.md", "policy-a"),
            ref("b.md", "policy-b", supersedes=("policy-a@ B2 ",)),
            ref("c.md", "policy-c", supersedes=("policy-a@",)),
        ]
    )
    assert graph.edges == (Edge("a.md", "b.md", "b.md", "B2"),)
    assert graph.unresolved == (("c.md", "policy-a@"),)


def test_reference_without_revision_has_no_edge_revision() -> None:
    graph = build_links([ref("a.md", "policy-a"), ref("b.md", supersedes=("policy-a",))])
    assert graph.edges == (Edge("a.md", "b.md", "b.md", None),)


def test_superseded_by_with_revision_resolves_the_note() -> None:
    graph = build_links([ref("a.md", superseded_by=("policy-b@C",)), ref("b.md", "policy-b")])
    assert pairs(graph) == [("a.md", "b.md")]
    assert graph.unresolved == ()


def test_id_shared_by_two_notes_is_ambiguous_and_links_both() -> None:
    graph = build_links([ref("x.md", superseded_by=("dup",)), ref("p.md", aliases=("dup",)), ref("q.md", "dup")])
    assert pairs(graph) == [("x.md", "p.md"), ("x.md", "q.md")]
    assert graph.ambiguous == (("x.md", "dup", ("p.md", "q.md")),)


# ---------------------------------------------------------------- by record number


@pytest.mark.parametrize(
    ("reference", "target"),
    [
        ("ADR025", "ADR/ADR025-remove-papertrail.md"),
        ("adr25", "ADR/ADR025-remove-papertrail.md"),
        ("ADR-0012", "ADR/ADR012-use-rails.md"),
        ("ADR 12", "ADR/ADR012-use-rails.md"),
        ("ADR_12", "ADR/ADR012-use-rails.md"),
        ("DR8", "decision-record/DR008-no-charges.md"),
        ("DR008", "decision-record/DR008-no-charges.md"),
        ("0019", "0019-use-go.md"),
        ("19", "0019-use-go.md"),
    ],
)
def test_reference_by_record_number(reference: str, target: str) -> None:
    notes = [
        ref("ADR/ADR025-remove-papertrail.md"),
        ref("ADR/ADR012-use-rails.md"),
        ref("decision-record/DR008-no-charges.md"),
        ref("0019-use-go.md"),
        ref("old.md", superseded_by=(reference,)),
    ]
    graph = build_links(notes)
    assert pairs(graph) == [("old.md", target)]
    assert (graph.unresolved, graph.ambiguous) == ((), ())


def test_record_number_prefix_separates_series() -> None:
    graph = build_links([ref("DR002-a.md", superseded_by=("DR8",)), ref("ADR008-x.md"), ref("0008-y.md")])
    assert graph.edges == ()
    assert graph.unresolved == (("DR002-a.md", "DR8"),)


def test_record_number_prefers_the_referring_notes_folder() -> None:
    notes = [
        ref("ADR/ADR001-a.md", superseded_by=("ADR005",)),
        ref("ADR/ADR005-here.md"),
        ref("archive/ADR005-there.md"),
    ]
    graph = build_links(notes)
    assert pairs(graph) == [("ADR/ADR001-a.md", "ADR/ADR005-here.md")]
    assert graph.ambiguous == ()


def test_record_number_from_another_folder_is_ambiguous_and_links_all_matches() -> None:
    notes = [
        ref("index/ADR001-a.md", superseded_by=("ADR005",)),
        ref("ADR/ADR005-here.md"),
        ref("archive/ADR005-there.md"),
    ]
    graph = build_links(notes)
    assert pairs(graph) == [
        ("index/ADR001-a.md", "ADR/ADR005-here.md"),
        ("index/ADR001-a.md", "archive/ADR005-there.md"),
    ]
    assert graph.ambiguous == (("index/ADR001-a.md", "ADR005", ("ADR/ADR005-here.md", "archive/ADR005-there.md")),)


def test_duplicate_record_number_in_one_folder_is_ambiguous() -> None:
    notes = [
        ref("ADR/ADR013-paper-trail.md", superseded_by=("ADR025",)),
        ref("ADR/ADR025-remove-papertrail.md"),
        ref("ADR/ADR025-use-aasm.md"),
    ]
    graph = build_links(notes)
    assert pairs(graph) == [
        ("ADR/ADR013-paper-trail.md", "ADR/ADR025-remove-papertrail.md"),
        ("ADR/ADR013-paper-trail.md", "ADR/ADR025-use-aasm.md"),
    ]
    assert graph.ambiguous == (
        ("ADR/ADR013-paper-trail.md", "ADR025", ("ADR/ADR025-remove-papertrail.md", "ADR/ADR025-use-aasm.md")),
    )
    assert graph.unresolved == ()


@pytest.mark.parametrize("reference", ["ADR099", "nobody", "", "gone.md", "adr-one"])
def test_unresolved_references_are_reported(reference: str) -> None:
    graph = build_links([ref("ADR/ADR001-a.md", supersedes=(reference,)), ref("ADR/ADR002-b.md")])
    assert graph.edges == ()
    assert graph.unresolved == (("ADR/ADR001-a.md", reference),)
    assert (graph.successors, graph.predecessors) == ({}, {})


def test_unresolved_are_listed_in_note_path_order_then_reference_order() -> None:
    graph = build_links([ref("b.md", superseded_by=("x", "y")), ref("a.md", supersedes=("z",), superseded_by=("w",))])
    assert graph.unresolved == (("a.md", "w"), ("a.md", "z"), ("b.md", "x"), ("b.md", "y"))


# ---------------------------------------------------------------- self references, grouping, dedupe


@pytest.mark.parametrize("reference", ["self-note", "ADR007", "ADR007-me.md", "Me"])
def test_self_reference_makes_no_edge(reference: str) -> None:
    graph = build_links([ref("ADR007-me.md", "self-note", aliases=("me",), superseded_by=(reference,))])
    assert graph.edges == ()
    assert (graph.successors, graph.predecessors) == ({}, {})
    # the reference points only at the note itself, so it resolves to no other note
    assert graph.unresolved == (("ADR007-me.md", reference),)


def test_self_match_is_dropped_from_a_number_shared_with_another_note() -> None:
    graph = build_links([ref("ADR025-a.md", superseded_by=("ADR025",)), ref("ADR025-b.md")])
    assert pairs(graph) == [("ADR025-a.md", "ADR025-b.md")]
    assert (graph.unresolved, graph.ambiguous) == ((), ())


def test_edge_declared_both_ways_is_one_edge_declared_by_the_first_note() -> None:
    graph = build_links([ref("b.md", "b", supersedes=("a",)), ref("a.md", "a", superseded_by=("b",))])
    assert graph.edges == (Edge("a.md", "b.md", "a.md", None),)


def test_successors_and_predecessors_maps() -> None:
    graph = build_links(
        [
            ref("a.md", "a", superseded_by=("b", "c")),
            ref("b.md", "b"),
            ref("c.md", "c", supersedes=("b@2",)),
            ref("d.md", "d"),
        ]
    )
    ab, ac, bc = Edge("a.md", "b.md", "a.md"), Edge("a.md", "c.md", "a.md"), Edge("b.md", "c.md", "c.md", "2")
    assert graph.edges == (ab, ac, bc)
    assert graph.successors == {"a.md": (ab, ac), "b.md": (bc,)}
    assert graph.predecessors == {"b.md": (ab,), "c.md": (ac, bc)}


def test_empty_collection() -> None:
    graph = build_links([])
    assert graph == LinkGraph(edges=())


# ---------------------------------------------------------------- end to end from note text


def test_adr_notes_end_to_end() -> None:
    graph = graph_of(
        {
            "adr/0004-old.md": adr_text(4, "⌛️ Superseded [0019](0019-new.md)"),
            "adr/0019-new.md": adr_text(19, "✅ Accepted"),
            "adr/0020-newer.md": adr_text(20, "Accepted. Supersedes [19. New](0019-new.md)"),
            "adr/0021-x.md": adr_text(21, "Superseded by [tracker](https://example.test/issues/4)"),
            "policy-b.md": "---\nid: refund-policy-b\nsupersedes: [refund-policy-a@A]\n---\nBody.\n",
            "policy-a.md": "---\nid: refund-policy-a\nrevision: A\n---\nBody.\n",
        }
    )
    assert graph.edges == (
        Edge("adr/0004-old.md", "adr/0019-new.md", "adr/0004-old.md"),
        Edge("adr/0019-new.md", "adr/0020-newer.md", "adr/0020-newer.md"),
        Edge("policy-a.md", "policy-b.md", "policy-b.md", "A"),
    )
    assert (graph.unresolved, graph.ambiguous) == ((), ())


def test_bare_record_number_in_a_status_resolves() -> None:
    graph = graph_of({"0004-old.md": adr_text(4, "Superseded by 0019"), "0019-new.md": adr_text(19, "Accepted")})
    assert pairs(graph) == [("0004-old.md", "0019-new.md")]
    assert graph.unresolved == ()


def test_date_in_a_status_makes_no_edges() -> None:
    files = {f"{n:04d}-x{n}.md": adr_text(n, "Accepted") for n in (6, 14, 19)}
    files["0004-old.md"] = adr_text(4, "Superseded by [19](0019-x19.md) (decided 2022-06-14), see 0006 too")
    files["0005-old.md"] = adr_text(5, "Superseded on 2022-06-14 by ADR-19")
    targets = {new for old, new in pairs(graph_of(files))}
    assert targets & {"0006-x6.md", "0014-x14.md"} == set()


# ---------------------------------------------------------------- the shared real corpora

STATUS_MAP: dict[str | None, str | None] = {
    "accepted": "current",
    "superseded": "superseded",
    "proposed": "draft",
    "rejected": "rejected",
    "unclear (template text left in)": None,
    None: None,
}
CORPORA = ("alphagov-forms", "moj-modernisation-platform")


def shared_root() -> Path:
    return Path(os.environ.get("RETRIEVAL_KERNEL_SHARED", REPO_ROOT.parent / "shared"))


@functools.cache
def load_corpus(name: str) -> tuple[dict[str, dict[str, Any]], dict[str, Note], LinkGraph]:
    folder = shared_root() / "corpora" / name
    metadata = {}
    with (folder / "metadata.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                metadata[record["file"]] = record
    root = folder / "notes"
    notes = {note.path: note for note in (read_note(root, path) for path in discover_notes(root))}
    graph = build_links(NoteRef(note.path, note.module, note.facts) for note in notes.values())
    return metadata, notes, graph


def require_corpus(name: str) -> tuple[dict[str, dict[str, Any]], dict[str, Note], LinkGraph]:
    """The parsed corpus, or skip when the shared folder does not hold it."""
    folder = shared_root() / "corpora" / name
    if not (folder / "notes").is_dir() or not (folder / "metadata.jsonl").is_file():
        pytest.skip(f"shared corpus {name} not found at {folder} (set RETRIEVAL_KERNEL_SHARED)")
    return load_corpus(name)


@pytest.fixture(params=CORPORA)
def corpus(request: pytest.FixtureRequest) -> tuple[dict[str, dict[str, Any]], dict[str, Note], LinkGraph]:
    return require_corpus(request.param)


def test_corpus_every_staged_file_is_parsed(corpus) -> None:
    metadata, notes, _ = corpus
    assert sorted(notes) == sorted(metadata)


def test_corpus_supersession_edges_match_metadata_exactly(corpus) -> None:
    metadata, _, graph = corpus
    expected = {(file, new) for file, record in metadata.items() for new in record["superseded_by"]}
    found = set(pairs(graph))
    assert expected, "the corpus states no supersession: nothing to check"
    precision = len(found & expected) / len(found) if found else 0.0
    recall = len(found & expected) / len(expected)
    assert (precision, recall) == (1.0, 1.0), f"extra {sorted(found - expected)}, missing {sorted(expected - found)}"
    assert found == expected
    assert len(graph.edges) == len(found)  # no duplicate edge


def test_corpus_status_matches_metadata_for_every_record(corpus) -> None:
    metadata, notes, _ = corpus
    wrong = {
        file: (notes[file].facts.status, record["status_normalized"])
        for file, record in metadata.items()
        if notes[file].facts.status != STATUS_MAP[record["status_normalized"]]
    }
    assert wrong == {}


def test_corpus_observed_at_matches_the_date_guess_for_every_record(corpus) -> None:
    metadata, notes, _ = corpus
    wrong = {
        file: (notes[file].observed_at, record["date_iso_guess"])
        for file, record in metadata.items()
        if notes[file].observed_at != record["date_iso_guess"]
    }
    assert wrong == {}


def test_corpus_date_lines_match_metadata(corpus) -> None:
    metadata, notes, _ = corpus
    assert {file: notes[file].facts.date_line for file in metadata} == {
        file: record["date_line"] for file, record in metadata.items()
    }


def test_corpus_notes_parse_without_warnings(corpus) -> None:
    _, notes, _ = corpus
    assert {path: note.warnings for path, note in notes.items() if note.warnings} == {}


def test_alphagov_adr013_is_ambiguous_between_both_adr025_files() -> None:
    _, notes, graph = require_corpus("alphagov-forms")
    adr013 = "ADR/ADR013-use-paper-trail-gem-for-auditing-and-record-backups.md"
    both = ("ADR/ADR025-remove-papertrail.md", "ADR/ADR025-use-aasm-to-manage-form-state.md")
    assert notes[adr013].facts.superseded_by == ("ADR025",)
    assert graph.ambiguous == ((adr013, "ADR025", both),)
    assert graph.unresolved == ()
    assert [edge.new for edge in graph.successors[adr013]] == list(both)


def test_alphagov_quirks_spot_checks() -> None:
    _, notes, graph = require_corpus("alphagov-forms")
    adr004 = "ADR/ADR004-store-form-schemas-in-an-api.md"
    assert notes[adr004].facts.superseded_by == ("ADR045-use-forms-api.md",)  # the link target is missing
    assert [edge.new for edge in graph.successors[adr004]] == ["ADR/ADR045-remove-forms-api.md"]
    dr002 = "decision-record/DR002-no-charges-for-lower-volume-services.md"
    assert [edge.new for edge in graph.successors[dr002]] == [
        "decision-record/DR008-no-charges-at-all-for-using-GOV.UK-Forms.md"
    ]
    assert notes["ADR/ADR023-use-uid-in-urls.md"].observed_at == "2024-01-08"  # Date: 08/01/24
    assert notes["ADR/ADR036-automate-patch-version-bumps.md"].observed_at == "2024-10-31"  # :ghost:
    template = notes["ADR/ADR030-use-aws-lambda-to-run-glue-code.md"].facts
    assert (template.status, template.status_text) == (None, "Accepted or Rejected")
    assert notes["ADR/ADR006-use-rust-for-api.md"].facts.status == "rejected"  # `Rejected`


def test_moj_quirks_spot_checks() -> None:
    _, notes, graph = require_corpus("moj-modernisation-platform")
    assert pairs(graph) == [("0004-use-bash-node-python-as-core-languages.md", "0019-use-bash-go-as-core-languages.md")]
    orphan = notes["0025-non-standard-user-infrastructure.md"].facts
    assert (orphan.status, orphan.superseded_by) == ("superseded", ())  # no successor record
    assert "0025-non-standard-user-infrastructure.md" not in graph.successors
    assert (graph.unresolved, graph.ambiguous) == ((), ())


def test_prefixed_number_falls_back_to_an_unprefixed_series() -> None:
    """adr-tools folders name files 0019-x.md while statuses say "ADR-19"."""
    graph = build_links([ref("0004-old.md", superseded_by=("ADR-19",)), ref("0019-new.md")])
    assert pairs(graph) == [("0004-old.md", "0019-new.md")]
