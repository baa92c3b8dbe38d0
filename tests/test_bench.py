"""The benchmark's synthetic corpus and its processor record (the benchmark itself is too slow to run here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_kernel.corpus.notes import read_note
from retrieval_kernel.evaluation import bench
from retrieval_kernel.evaluation.bench import QUERIES, SECTIONS_PER_NOTE, synthetic_notes


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.mark.slow
def test_synthetic_notes_are_deterministic_and_sized(tmp_path: Path) -> None:
    first = synthetic_notes(tmp_path / "one", 120)
    second = synthetic_notes(tmp_path / "two", 120)
    assert first == second
    assert len(first) == QUERIES == 60
    assert all(query.strip() for query in first)
    assert snapshot(tmp_path / "one") == snapshot(tmp_path / "two")

    files = sorted((tmp_path / "one").glob("*.md"))
    assert [path.name for path in files] == [f"note-{i:05d}.md" for i in range(12)]
    sections = [
        line for path in files for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("## ")
    ]
    assert len(sections) == 120
    for path in files:
        note = read_note(tmp_path / "one", path)
        assert note.module == path.stem
        assert len(note.passages) == SECTIONS_PER_NOTE
        assert note.observed_at == "2026-10-01"
    # every section heading carries its global number, 0..119, once each
    assert sorted(int(line.rsplit(" ", 1)[1]) for line in sections) == list(range(120))


@pytest.mark.slow
def test_synthetic_notes_depend_on_the_seed_and_size(tmp_path: Path) -> None:
    base = synthetic_notes(tmp_path / "base", 120)
    other_seed = synthetic_notes(tmp_path / "seed", 120, seed=7)
    assert other_seed != base
    assert snapshot(tmp_path / "seed") != snapshot(tmp_path / "base")
    synthetic_notes(tmp_path / "odd", 25)
    odd = sorted((tmp_path / "odd").glob("*.md"))
    assert len(odd) == 3
    assert sum(text.count("\n## ") for text in (p.read_text(encoding="utf-8") for p in odd)) == 25


def test_the_processor_record_names_the_vector_instructions_that_move_the_figures(tmp_path: Path) -> None:
    avx512 = tmp_path / "avx512"
    avx512.write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu sse avx2 avx512f avx512_vnni\n\n"
        "processor\t: 1\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu sse avx2 avx512f avx512_vnni\n",
        encoding="utf-8",
    )
    avx2 = tmp_path / "avx2"
    avx2.write_text("model name\t: AMD EPYC\nflags\t\t: fpu sse avx avx2 fma\n", encoding="utf-8")
    with_vnni, without = bench.processor(avx512), bench.processor(avx2)
    assert (with_vnni["model"], with_vnni["avx512"], with_vnni["vnni"]) == ("AMD EPYC 9R14", True, True)
    assert (without["model"], without["avx2"], without["avx512"], without["vnni"]) == ("AMD EPYC", True, False, False)
    assert bench.processor(tmp_path / "missing")["avx2"] is False


def test_the_machine_state_reads_the_load_and_the_unwritten_data(tmp_path: Path) -> None:
    meminfo, loadavg = tmp_path / "meminfo", tmp_path / "loadavg"
    meminfo.write_text("MemTotal:       24000000 kB\nDirty:           3145728 kB\nWriteback:         10240 kB\n")
    loadavg.write_text("2.50 1.20 0.80 3/400 12345\n")
    assert bench._machine_state(meminfo, loadavg) == {"load_1min": 2.5, "dirty_mb": 3072.0, "writeback_mb": 10.0}
    assert bench._machine_state(tmp_path / "none", tmp_path / "none") == {}


@pytest.mark.slow
def test_the_cold_start_says_what_its_first_query_waited_for(tmp_path: Path) -> None:
    from retrieval_kernel.pipeline.workspace import Workspace

    notes = tmp_path / "notes"
    synthetic_notes(notes, 20)
    with Workspace(notes, tmp_path / "store") as workspace:
        workspace.index()
    figures = bench.cold_start(notes, tmp_path / "store")
    waits = figures["cold_start_waits"]
    assert figures["first_query_s"] > 0 and figures["first_query_stages_ms"]["lexical"] > 0
    assert waits["cpu_s"] > 0 and waits["ru_nvcsw"] + waits["ru_nivcsw"] > 0
    assert set(waits) >= {"ru_inblock", "ru_majflt", "load_1min", "dirty_mb"}
