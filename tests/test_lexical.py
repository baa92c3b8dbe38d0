"""The lexical lane: analysis, safe query handling, heading boost, tie order, BM25 parity."""

from __future__ import annotations

import re
from pathlib import Path

import bm25s
import pytest

from retrieval_kernel import Workspace
from retrieval_kernel.evaluation.beir import load_beir
from retrieval_kernel.evaluation.bench import default_shared
from retrieval_kernel.projections.lexical import WORD_PATTERN, analyze, make_analyzer, stem


@pytest.fixture
def indexed(ws_for):
    """Index ``{path: text}`` into a fresh lexical-only store and return the workspace."""
    return ws_for


def ids(ws: Workspace, text: str, limit: int = 50) -> list[str]:
    return [hit.passage_id for hit in ws.lexical.search(text, limit)]


# ---------------------------------------------------------------- analysis


def test_stemming_keeps_deploy_family_together() -> None:
    forms = ["deploy", "deploys", "deployment", "deployments", "deploying", "deployed", "Deployed", "DEPLOYMENT"]
    stems = {tuple(analyze(form)) for form in forms}
    assert len(stems) == 1
    (stem,) = stems
    assert len(stem) == 1 and stem[0].startswith("deploy")
    assert analyze("deploy deployment deploying deployed") == list(stem)  # distinct terms only


def test_the_c_stemmer_gives_whooshs_porter2_stems_on_a_real_vocabulary(workshop_notes: Path) -> None:
    """PyStemmer (pinned at Snowball 2.2) stands in for Whoosh's pure-Python porter2: every word of
    SciFact and of the workshop notes gets the same stem (Snowball 3 would move "organic", "skis")."""
    from whoosh.lang.porter2 import stem as porter2_stem

    scifact = default_shared() / "datasets" / "scifact"
    if not scifact.is_dir():
        pytest.skip(f"SciFact not found at {scifact} (set RETRIEVAL_KERNEL_SHARED)")
    texts = [f"{title} {text}" for title, text in load_beir(scifact).corpus.values()]
    texts += [path.read_text(encoding="utf-8") for path in sorted(workshop_notes.rglob("*.md"))]
    words = sorted({match.group().lower() for text in texts for match in re.finditer(WORD_PATTERN, text)})
    assert len(words) > 30_000
    differing = [(word, stem(word), porter2_stem(word)) for word in words if stem(word) != porter2_stem(word)]
    assert differing == []
    assert [stem(word) for word in ("organic", "skis", "evening", "added")] == ["organ", "ski", "even", "ad"]


def test_analyze_drops_stop_words_and_keeps_order_of_first_appearance() -> None:
    assert analyze("the of and") == []
    assert analyze("Zebra apple zebra mango apple") == ["zebra", "appl", "mango"]
    assert analyze("Überprüfung der Kalibrierung") == ["überprüfung", "der", "kalibrierung"]


def test_stemmed_query_finds_other_word_forms(indexed) -> None:
    ws = indexed({"a.md": "# Notes\n\nWe deployed the service on Monday.\n", "b.md": "# Other\n\nNothing here.\n"})
    hits = ws.lexical.search("deployment", 10)
    assert [h.passage_id for h in hits] == ["a#notes"]
    assert hits[0].matched_terms == ("deployment",)  # the query word as typed, not the stem
    assert hits[0].score > 0


def test_matched_terms_are_query_words_in_query_order(indexed) -> None:
    ws = indexed({"a.md": "# Notes\n\nWe deployed the service; services restart nightly.\n"})
    (hit,) = ws.lexical.search("Services absent Deploying SERVICE", 10)
    assert hit.matched_terms == ("services", "deploying")


# ---------------------------------------------------------------- query syntax is never parsed


@pytest.mark.parametrize(
    ("query", "plain"),
    [
        ('deploy AND (staging OR "prod") NOT?', "deploy staging prod"),
        ("title:deploy", "title deploy"),
        ('"unbalanced quote deploy', "unbalanced quote deploy"),
        ("(((deploy", "deploy"),
        ("deploy)]}", "deploy"),
        ("deploy ~2 ^3 +must -not", "deploy must"),
        ("body:[deploy TO z]", "body deploy"),
        ("NOT deploy", "deploy"),
        ("\\ / : ; ! ? deploy", "deploy"),
    ],
)
def test_query_syntax_characters_are_plain_words(indexed, query: str, plain: str) -> None:
    ws = indexed(
        {
            "a.md": "# Alpha\n\nHow to deploy to staging and prod.\n",
            "b.md": "# Bravo\n\nThe title of a record is not its body.\n",
            "c.md": "# Charlie\n\nUnrelated text about coffee.\n",
        }
    )
    assert analyze(query) == analyze(plain)
    hits = ws.lexical.search(query, 50)
    assert [(h.passage_id, h.score) for h in hits] == [(h.passage_id, h.score) for h in ws.lexical.search(plain, 50)]
    got = [h.passage_id for h in hits]
    assert "a#alpha" in got  # every query mentions deploy; NOT must not exclude it
    assert "c#charlie" not in got


def test_markdown_emphasis_does_not_hide_words(indexed) -> None:
    """``**mandatory**`` and ``*deploying*`` in a note must be found by ``mandatory`` / ``deploy``."""
    ws = indexed({"a.md": "# Alpha\n\nA rollback is **mandatory** before *deploying*.\n", "b.md": "# B\n\nOther.\n"})
    assert analyze("**mandatory** *deploying*") == analyze("mandatory deploying")
    assert ids(ws, "mandatory") == ["a#alpha"]
    assert ids(ws, "deploy") == ["a#alpha"]


def test_asterisk_in_a_query_is_punctuation(indexed) -> None:
    """``deploy*`` is the word deploy followed by punctuation, like ``deploy?``."""
    ws = indexed({"a.md": "# Alpha\n\nHow to deploy to staging.\n", "b.md": "# Bravo\n\nOther text.\n"})
    assert analyze("deploy*") == analyze("deploy?") == ["deploy"]
    assert ids(ws, "deploy*") == ["a#alpha"]


def test_field_prefix_is_a_word_not_a_field(indexed) -> None:
    ws = indexed({"a.md": "# Alpha\n\nThe title of this record.\n", "b.md": "# Bravo\n\nzzz other.\n"})
    # As Whoosh syntax this would search the (non-existent) 'title' field for zzz and find nothing.
    assert set(ids(ws, "title:zzz")) == {"a#alpha", "b#bravo"}


def test_only_stop_words_or_unknown_words_find_nothing(indexed) -> None:
    ws = indexed({"a.md": "# Alpha\n\nsome words\n"})
    assert ids(ws, "the of and") == []
    assert ids(ws, "xylophone") == []
    assert ids(ws, "") == []


# ---------------------------------------------------------------- ranking


def test_heading_match_outranks_same_term_only_in_body(indexed) -> None:
    ws = indexed(
        {
            # the term appears once in each; in h.md only in the heading, in b.md only in the body
            "h.md": "# Workshop\n\n## Calibration\n\nvalues are logged daily by the bench\n",
            "b.md": "# Workshop\n\n## Logging\n\ncalibration values are logged daily\n",
        }
    )
    hits = ws.lexical.search("calibration", 10)
    assert [h.passage_id for h in hits] == ["h#calibration", "b#logging"]
    assert hits[0].score > hits[1].score


def _tied_notes() -> dict[str, str]:
    # Files are indexed in path order (a, b, c) but their ids sort the other way round.
    body = "identical tie words here\n"
    return {
        "a.md": f"---\nid: zeta\ntitle: Same\n---\n{body}",
        "b.md": f"---\nid: mid\ntitle: Same\n---\n{body}",
        "c.md": f"---\nid: alpha\ntitle: Same\n---\n{body}",
    }


def test_ties_are_sorted_by_passage_id(indexed) -> None:
    ws = indexed(_tied_notes())
    hits = ws.lexical.search("identical tie", 10)
    assert [h.passage_id for h in hits] == ["alpha#same", "mid#same", "zeta#same"]
    assert len({round(h.score, 9) for h in hits}) == 1


def test_ties_at_the_limit_are_cut_by_passage_id(indexed) -> None:
    """'Top ``limit`` passages; ties broken by passage id' must hold at the cut, too."""
    ws = indexed(_tied_notes())
    assert ids(ws, "identical tie", limit=2) == ["alpha#same", "mid#same"]


def test_search_limit_and_scores_descending(indexed) -> None:
    ws = indexed({f"n{i}.md": f"# N{i}\n\n" + "gear " * (i + 1) + "filler " * 10 + "\n" for i in range(6)})
    hits = ws.lexical.search("gear", 3)
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert ws.lexical.document_count() == 6


def test_incremental_sync_matches_a_full_rebuild(indexed, tmp_path: Path, make_notes) -> None:
    ws = indexed({"a.md": "# A\n\ngear train notes\n", "b.md": "# B\n\ngear box\n", "c.md": "# C\n\nbelt drive\n"})
    notes = make_notes({"a.md": "# A\n\nbelt tension notes and gear\n", "d.md": "# D\n\ngear gear belt\n"})
    (notes / "b.md").unlink()
    ws.index()
    with Workspace(notes, store_dir=tmp_path / "fresh_store", lanes=("lexical",)) as fresh:
        fresh.index()
        for query in ["gear", "belt", "notes", "box", "gear belt tension"]:
            assert ids(ws, query) == ids(fresh, query), query
    assert "b#b" not in ids(ws, "gear box")


# ---------------------------------------------------------------- parity with an independent BM25 (bm25s)

PARITY_DOCS = [
    "Gasket, gasket, gasket: the gasket seals the sensor housing against water.",
    "The bracket holds the sensor housing; a bent bracket is scrapped.",
    "Firmware for the sensor is built nightly and every firmware build is signed.",
    "Calibration of the sensor uses the reference jig; calibration drifts over weeks of use.",
    "The housing drawing names the gasket groove depth and the bracket holes.",
    "Supplier lead times for gaskets and brackets are reviewed every quarter by purchasing.",
    "A failed calibration sends the sensor back to the bench with the calibration log and jig notes attached"
    " for review.",
    "Housing batches are inspected for cracks, the gasket seat and surface finish before coating.",
    "The coating oven runs a warm-up cycle; coated housings cool on the rack overnight.",
    "Firmware releases need a test run on a sensor housing from the current batch.",
    "Brackets, gaskets and housings share one bill of materials per sensor assembly and per order.",
    "The drawing revision is checked against the part before any bracket or housing ships.",
]
PARITY_QUERIES = [
    "gasket housing",
    "sensor calibration",
    "firmware sensor build",
    "bracket housing drawing",
    "coating housing batch",
    "supplier gasket bracket",
    "calibration jig",
    "drawing revision part",
    "bracket",
]


def test_ranking_parity_with_bm25s(indexed) -> None:
    """Whoosh BM25F over the body field ranks like bm25s (k1=1.2, b=0.75) on the same tokens.

    Whoosh's idf is ``log(N/(df+1)) + 1`` and its tf part carries a ``(k1+1)`` factor; bm25s
    'lucene' uses ``log(1 + (N-df+.5)/(df+.5))`` and no factor. The factor does not change
    rankings and both idfs fall with df, so rankings are compared, not scores. Notes have no
    headings, so the heading field holds only the file stem (d00…d11), which no query mentions.
    """
    ws = indexed({f"d{i:02d}.md": text + "\n" for i, text in enumerate(PARITY_DOCS)})
    analyzer = make_analyzer()
    corpus_tokens = [[token.text for token in analyzer(text)] for text in PARITY_DOCS]
    for text, tokens in zip(PARITY_DOCS, corpus_tokens, strict=True):
        assert analyze(text) == list(dict.fromkeys(tokens))  # same analysis as the lane uses
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index(corpus_tokens, show_progress=False)

    for query in PARITY_QUERIES:
        terms = analyze(query)
        assert terms, query
        scores = retriever.get_scores(terms)
        expected = sorted((i for i in range(len(PARITY_DOCS)) if scores[i] > 0), key=lambda i: (-scores[i], i))
        # the corpus must not hinge on razor-thin margins at the compared positions
        assert len(expected) >= 2
        assert scores[expected[0]] > scores[expected[1]] * 1.03, query
        if len(expected) > 3:
            assert scores[expected[2]] > scores[expected[3]] * 1.01, query

        hits = ws.lexical.search(query, 50)
        got = [int(hit.passage_id[1:3]) for hit in hits]
        assert [hit.passage_id for hit in hits] == [f"d{i:02d}#d{i:02d}" for i in got]
        assert set(got) == set(expected), query  # OR semantics: every doc with any term, no others
        assert got[0] == expected[0], (query, got, expected)
        assert set(got[:3]) == set(expected[:3]), (query, got, expected)


def test_vectorised_scores_equal_whooshs_own_collector(tmp_path: Path, workshop_notes: Path) -> None:
    """Our numpy BM25F over Whoosh's postings gives Whoosh's own scores; updated in place (two
    segments, a deleted document) it gives the scores Whoosh gives the same notes indexed afresh.

    (Whoosh itself keeps counting deleted documents in its statistics until segments merge;
    ours count live documents only, so incremental and rebuilt indexes rank identically.)
    """
    import shutil

    notes = tmp_path / "notes"
    shutil.copytree(workshop_notes, notes)
    queries = [
        "How is ownership of a record decided?",
        "record audit trail owner",
        "Who approves a production deployment?",
        "observed dates and staleness",
        "checkpoint sign-off batch",
    ]
    with Workspace(notes, store_dir=tmp_path / "store", lanes=("lexical",)) as ws:
        ws.index()
        for query in queries:  # one segment, no deletions: identical to Whoosh's collector
            ours, whoosh = ws.lexical.search(query, 50), ws.lexical.search_with_whoosh(query, 50)
            assert [(h.passage_id, round(h.score, 6)) for h in ours] == [
                (h.passage_id, round(h.score, 6)) for h in whoosh
            ], query
        edited = notes / "record-ownership.md"
        extra = "\n## Audit trail\n\nEvery record keeps an audit trail.\n"
        edited.write_text(edited.read_text(encoding="utf-8") + extra)
        (notes / "source-age.md").unlink()
        ws.index()
        assert ws.lexical._get_searcher().reader().has_deletions()
        with Workspace(notes, store_dir=tmp_path / "fresh", lanes=("lexical",)) as fresh:
            fresh.index()
            for query in queries:
                ours = ws.lexical.search(query, 50)
                whoosh = fresh.lexical.search_with_whoosh(query, 50)
                assert [h.passage_id for h in ours] == [h.passage_id for h in whoosh], query
                assert [round(h.score, 6) for h in ours] == [round(h.score, 6) for h in whoosh], query
                assert not any(h.passage_id.startswith("workshop-source-age") for h in ours)
