"""The compiled lexical form scores exactly like Whoosh: on SciFact, and through random edit sequences."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.evaluation.beir import load_beir, write_notes
from retrieval_kernel.evaluation.bench import default_shared
from retrieval_kernel.projections import compiled as compiled_module
from retrieval_kernel.projections.compiled import SNAPSHOT_NAME, CompiledLexicon
from retrieval_kernel.projections.lexical import term_words

SCIFACT = default_shared() / "datasets" / "scifact"  # RETRIEVAL_KERNEL_SHARED, else ../shared
SCIFACT_DOCUMENTS = 2000  # the abstracts the first 40 test queries judge, then the rest by id (CI time)
WORDS = (  # noqa: SIM905 - a word list reads better as prose
    "pump impeller valve gasket seal bearing motor shaft coupling filter strainer pressure flow "
    "inspection overhaul quarterly monthly weekly owner approval record audit rota shift"
).split()


def ranked(hits) -> list[tuple[str, float]]:
    return [(hit.passage_id, round(hit.score, 6)) for hit in hits]


def assert_same(ours, reference, query: str) -> None:
    assert [h.passage_id for h in ours] == [h.passage_id for h in reference], query
    for mine, theirs in zip(ours, reference, strict=True):
        assert abs(mine.score - theirs.score) <= 1e-6, (query, mine, theirs)


@pytest.mark.skipif(not SCIFACT.is_dir(), reason="../shared/datasets/scifact is not present")
def test_scifact_ranks_and_scores_equal_whooshs_collector(tmp_path: Path) -> None:
    data = load_beir(SCIFACT)
    asked = sorted(data.queries)[:40]
    relevant = sorted({doc for qid in asked for doc in data.qrels.get(qid, {})})
    kept = [*relevant, *(doc for doc in sorted(data.corpus) if doc not in relevant)][:SCIFACT_DOCUMENTS]
    write_notes({doc: data.corpus[doc] for doc in kept}, tmp_path / "notes")
    queries = [data.queries[qid] for qid in asked]
    with Workspace(tmp_path / "notes", tmp_path / "store", lanes=("lexical",)) as workspace:
        workspace.index()
        for query in queries:
            assert_same(workspace.lexical.search(query, 50), workspace.lexical.search_with_whoosh(query, 50), query)
        workspace.lexical._compiled = None  # a new process: the snapshot, not the build, answers
        loaded = CompiledLexicon.load(workspace.lexical.folder)
        assert loaded is not None and loaded.size == workspace.passage_count()
        for query in queries[:10]:
            assert_same(workspace.lexical.search(query, 50), workspace.lexical.search_with_whoosh(query, 50), query)


def _note(rng: random.Random, name: str) -> str:
    sections = []
    for _ in range(rng.randint(1, 4)):
        heading = " ".join(rng.sample(WORDS, 2)).title()
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 30)))
        sections.append(f"## {heading}\n\n{body}.\n")
    return f"# {name}\n\n" + "\n".join(sections)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_edit_sequences_score_like_a_fresh_whoosh_index(tmp_path: Path, seed: int, monkeypatch) -> None:
    """Adds, edits and deletes, applied in place (with the delta folded in often), equal Whoosh on the same
    notes indexed afresh; a second process (snapshot plus replayed change log) equals them too."""
    monkeypatch.setattr(compiled_module, "COMPACT_AT", 3)
    rng = random.Random(seed)
    notes = tmp_path / "notes"
    notes.mkdir()
    for n in range(12):
        (notes / f"n{n:02d}.md").write_text(_note(rng, f"Note {n}"), encoding="utf-8")
    queries = [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(6)]
    with Workspace(notes, tmp_path / "store", lanes=("lexical",)) as workspace:
        workspace.index()
        for step in range(10):
            existing = sorted(notes.glob("*.md"))
            action = rng.choice(["add", "edit", "edit", "delete"] if len(existing) > 3 else ["add"])
            if action == "add":
                (notes / f"new{step:02d}.md").write_text(_note(rng, f"New {step}"), encoding="utf-8")
            elif action == "edit":
                target = rng.choice(existing)
                target.write_text(_note(rng, target.stem), encoding="utf-8")
            else:
                rng.choice(existing).unlink()
            workspace.index()
            fresh_store = tmp_path / f"fresh-{step}"
            with Workspace(notes, fresh_store, lanes=("lexical",)) as fresh:
                fresh.index()
                for query in queries:
                    reference = fresh.lexical.search_with_whoosh(query, 20)
                    assert_same(workspace.lexical.search(query, 20), reference, f"{step} {action} {query}")
            shutil.rmtree(fresh_store)
            if step % 3 == 2:  # another process opens the store: snapshot plus the change log replayed
                with Workspace(notes, tmp_path / "store", lanes=("lexical",), refresh="off") as other:
                    for query in queries:
                        assert_same(other.lexical.search(query, 20), workspace.lexical.search(query, 20), query)


def test_a_damaged_snapshot_is_read_again_from_whoosh(tmp_path: Path, workshop_notes: Path) -> None:
    with Workspace(workshop_notes, tmp_path / "store", lanes=("lexical",)) as workspace:
        workspace.index()
        before = ranked(workspace.lexical.search("record owner approval", 20))
        folder = workspace.lexical.folder
    (folder / SNAPSHOT_NAME).write_bytes(b"not a snapshot")
    with Workspace(workshop_notes, tmp_path / "store", lanes=("lexical",), refresh="off") as again:
        assert ranked(again.lexical.search("record owner approval", 20)) == before
    assert CompiledLexicon.load(folder) is not None  # written again from the postings


def test_excluded_passages_score_nothing(tmp_path: Path, workshop_notes: Path) -> None:
    with Workspace(workshop_notes, tmp_path / "store", lanes=("lexical",)) as workspace:
        workspace.index()
        compiled = workspace.lexical._compiled_form()
        terms = ["record", "owner"]
        scores, _ = compiled.scores(terms, 1.2, 0.5, {"heading": 0.5, "body": 1.0})
        best = compiled.ids[compiled.top(scores, 1)[0]]
        hidden, _ = compiled.scores(terms, 1.2, 0.5, {"heading": 0.5, "body": 1.0}, excluded=[best])
        assert best not in {compiled.ids[d] for d in compiled.top(hidden, 50)}


def test_passages_hidden_from_a_caller_score_the_visible_ones_as_an_index_without_them(
    tmp_path: Path, workshop_notes: Path
) -> None:
    kept = sorted(workshop_notes.glob("*.md"))
    dropped, shown = kept[:3], kept[3:]
    partial = tmp_path / "partial"
    partial.mkdir()
    for note in shown:
        shutil.copy(note, partial / note.name)
    query = "record owner approval inspection"
    with (
        Workspace(workshop_notes, tmp_path / "full", lanes=("lexical",)) as full,
        Workspace(partial, tmp_path / "part", lanes=("lexical",)) as without,
    ):
        full.index()
        without.index()
        gone = frozenset(p.id for note in dropped for p in full.records.passages_of(note.name))
        assert gone
        everything = full.lexical.search(query, 200)
        scoped = [hit for hit in full.lexical.search(query, 200, gone) if hit.passage_id not in gone]
        reference = without.lexical.search(query, 200)
        assert_same(scoped, reference, query)
        visible_before = [hit for hit in everything if hit.passage_id not in gone]
        assert [(h.passage_id, h.score) for h in visible_before] != [(h.passage_id, h.score) for h in scoped]
        assert ranked(full.lexical.search(query, 200)) == ranked(everything)  # a caller seeing all: unchanged


def test_matched_words_in_every_mask_of_a_long_question(tmp_path: Path) -> None:
    """A question's terms are spread over masks of ``HOLD_BITS`` bits: words in the first, the last and a
    middle one are all reported, in the question's order."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "pumps.md").write_text("# Pumps\n\n## Seals\n\nThe zeolite seal is replaced yearly.\n", encoding="utf-8")
    filler = [f"filler{n:03d}" for n in range(130)]  # distinct terms no note holds
    question = " ".join(["yearly", *filler[:60], "zeolite", *filler[60:], "seal"])
    with Workspace(notes, tmp_path / "store", lanes=("lexical",)) as workspace:
        workspace.index()
        (hit,) = workspace.lexical.search(question, 5)
        assert hit.matched_terms == ("yearly", "zeolite", "seal")
        assert 132 // compiled_module.HOLD_BITS == 2  # "seal" is in the third mask


def test_weights_kept_between_questions_score_as_fresh_ones(tmp_path: Path, workshop_notes: Path, monkeypatch) -> None:
    """Asked again, a question scores from the weights kept for its words, exactly as the first time and as
    Whoosh; a cache too small for one question starts over without losing a word."""
    queries = ["pump seal inspection", "who approves overtime", "seal overtime approval record", "pump"]
    with Workspace(workshop_notes, tmp_path / "store", lanes=("lexical",)) as workspace:
        workspace.index()
        first = [workspace.lexical.search(query, 20) for query in queries]
        assert workspace.lexical._compiled_form()._weights  # kept
        for query, hits in zip(queries, first, strict=True):
            assert workspace.lexical.search(query, 20) == hits
            assert_same(hits, workspace.lexical.search_with_whoosh(query, 20), query)
        monkeypatch.setattr(compiled_module, "WEIGHTS_KEPT", 3)
        workspace.lexical._compiled_form().forget_statistics()
        asked = [*queries, *queries]
        for number, (query, hits) in enumerate(zip(asked, first * 2, strict=True)):
            assert workspace.lexical.search(query, 20) == hits
            recent = {term for earlier in asked[max(0, number - 1) : number + 1] for term in term_words(earlier)}
            assert {key[1] for key in workspace.lexical._compiled_form()._weights} <= recent  # started over


def test_a_long_replay_leaves_a_new_snapshot(tmp_path: Path, workshop_notes: Path, monkeypatch) -> None:
    from retrieval_kernel.projections import lexical as lexical_module

    monkeypatch.setattr(lexical_module, "REPLAY_SNAPSHOT_AT", 0)
    notes = tmp_path / "notes"
    shutil.copytree(workshop_notes, notes)
    with Workspace(notes, tmp_path / "store", lanes=("lexical",)) as first:
        first.index()
        folder = first.lexical.folder
    target = sorted(notes.glob("*.md"))[0]
    target.write_text(target.read_text(encoding="utf-8") + "\n## Pager\n\nThe pager rota answers.\n")
    with Workspace(notes, tmp_path / "store", lanes=("lexical",)) as indexer:  # never searches: no compiled form
        indexer.index()
        pointer = indexer.records.projection("lexical")
    before = CompiledLexicon.load(folder)
    assert before is not None and before.high_water < pointer.high_water
    with Workspace(notes, tmp_path / "store", lanes=("lexical",), refresh="off") as reader:
        assert reader.lexical.search("pager rota", 5)  # replays the edit from the change log
    after = CompiledLexicon.load(folder)
    assert after is not None and after.high_water == pointer.high_water
