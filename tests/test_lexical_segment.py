"""A rebuild analyses each passage once and writes the Whoosh segment itself: the same terms and the same bytes."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from whoosh import index as whoosh_index
from whoosh.codec.whoosh3 import W3Codec

from retrieval_kernel.corpus.notes import Passage, read_note
from retrieval_kernel.errors import FrontMatterError
from retrieval_kernel.projections.compiled import CompiledLexicon
from retrieval_kernel.projections.lexical import (
    _analysed,
    _document,
    index_counts,
    make_analyzer,
    make_schema,
    term_words,
)
from retrieval_kernel.projections.segment import BLOCK_LIMIT, write_index

REPO_ROOT = Path(__file__).resolve().parents[1]
ODD_TEXT = [
    "İstanbul ÉCOLE Straße ǅemal ﬁnance Ⅻ ß SS ΣΑΣ Ωμέγα",
    "x.y.z a_b 3.14 ..a.. U.S.A. e.g. v2.0.1 -- __init__ file.tar.gz",
    "**bold** *it* `code` [link](http://example.com/a-b?c=d) #tag @user",
    "The a I A an of THE Is it's don't o'clock",
    "deploy deploys deployment deploying DEPLOYED",
    "日本語のテキスト 中文 한국어 mixed with English words",
    "\u00a0non\u2011breaking\u200bzero width\ttabs\r\nwindows",
    "",
]


def _fixture_passages() -> list[Passage]:
    passages: list[Passage] = []
    for path in sorted((REPO_ROOT / "fixtures").glob("*/notes/**/*.md")):
        try:
            passages += read_note(path.parent, path).passages
        except FrontMatterError:  # a fixture's author may have written front matter that is not YAML
            continue
    return passages


def test_some_terms_span_several_blocks() -> None:
    compiled = CompiledLexicon.from_passages([_analysed(passage) for passage in _passages(3 * BLOCK_LIMIT)])
    assert max(compiled.matrices["body"].getnnz(axis=0)) > 2 * BLOCK_LIMIT


def test_index_counts_equal_the_analyzers_tokens() -> None:
    analyzer = make_analyzer()
    passages = _fixture_passages()
    texts = [*ODD_TEXT, *(p.text for p in passages), *(" / ".join(p.heading_path) for p in passages)]
    for text in texts:
        assert index_counts(text) == Counter(token.text for token in analyzer(text, mode="index")), text


def test_term_words_without_an_analyzer_equal_the_analyzers_own() -> None:
    """Terms, their order and the word each came from: the shared fast path equals the analyzer's tokens."""
    analyzer = make_analyzer()
    passages = _fixture_passages()
    texts = [*ODD_TEXT, *(p.text for p in passages), *(" / ".join(p.heading_path) for p in passages)]
    texts += ["What does the Pump's SEAL cost, e.g. 3.14 EUR?", "Who approves over-time (OT) in İstanbul?"]
    for text in texts:
        fast = term_words(text)
        assert fast == term_words(text, analyzer), text
        assert list(fast) == list(term_words(text, analyzer)), text


def _passages(count: int) -> list[Passage]:
    """Real passages plus made-up ones sharing words, so some terms span several blocks."""
    rng = random.Random(7)
    words = ["pump", "seal", "valve", "owner", "record", "audit", "İstanbul", "straße", "3.14", "e.g"]
    made = []
    for n in range(count):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 40)))
        made.append(Passage(f"m{n:04d}#s", f"made/m{n // 3:04d}.md", "m", "S", ("M", "S"), 1, 2, text, "0" * 64))
    return [*_fixture_passages(), *made]


def _segment_files(folder: Path) -> dict[str, bytes]:
    """The segment's files by kind (names carry a random segment id; the table of contents is left out)."""
    files = [path for path in folder.iterdir() if path.name.startswith("MAIN_") and "." in path.name]
    return {path.name.split(".", 1)[1]: path.read_bytes() for path in files}


def _stop_word_headings() -> list[Passage]:
    """A field no term holds: every heading is a stop word."""
    return [Passage(f"n{n}#a", f"n{n}.md", "n", "A", ("A",), 1, 2, f"gear {n}", "0" * 64) for n in range(3)]


@pytest.mark.parametrize("passages", [_passages(3 * BLOCK_LIMIT), _stop_word_headings()], ids=["blocks", "empty"])
def test_the_written_segment_is_the_one_whoosh_writes(tmp_path: Path, passages: list[Passage]) -> None:
    analysed = [_analysed(passage) for passage in passages]
    compiled = CompiledLexicon.from_passages(analysed)
    lengths = {f"{name}_len": compiled.exact[name].astype(int).tolist() for name in compiled.matrices}
    (tmp_path / "ours").mkdir()
    write_index(tmp_path / "ours", make_schema(), compiled, lengths, compound=False)
    (tmp_path / "whoosh").mkdir()
    writer = whoosh_index.create_in(tmp_path / "whoosh", make_schema()).writer(
        codec=W3Codec(compression=0), compound=False
    )
    for passage, counted in zip(passages, analysed, strict=True):
        writer.add_document(**_document(passage, counted))
    writer.commit()
    ours, theirs = _segment_files(tmp_path / "ours"), _segment_files(tmp_path / "whoosh")
    assert sorted(ours) == sorted(theirs)
    for kind, data in theirs.items():
        assert ours[kind] == data, kind
