"""Would "a part of the question no cited passage mentions" flag the answers that answer nothing? A measurement.

    .venv/bin/python scripts/unmentioned_words_probe.py policy-holdout40 policy-holdout41 ... [--bars 0.3,0.4,0.5,0.6]

For every answerable or no-answer question of the named policy suites (development data: each has been
scored once) that ``%context`` answers, each asking part of the question (``applicability.needs.need_parts``)
is weighed: the idf-weighted share of its subject words (``subject_terms``) that no admitted passage holds in
its text, heading path or note name. A packet is flagged when some part's unmentioned share reaches a bar,
and separately when some subject word is in no passage of the collection at all. Printed: how many answered
answerable and answered no-answer questions each flag catches. Nothing here changes ``%context``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from reader_experiment import asked, scored_suites  # scripts/ is on sys.path when a script runs

from retrieval_kernel.applicability.needs import need_parts, subject_terms
from retrieval_kernel.pipeline.answerability import _words
from retrieval_kernel.pipeline.workspace import Workspace


def unmentioned(workspace: Workspace, question: str, held: frozenset[str]) -> tuple[float, bool]:
    """The largest unmentioned share over the question's asking parts, and whether a subject word is unknown."""
    worst, unknown = 0.0, False
    for need in need_parts(question):
        terms = list(dict.fromkeys(subject_terms(need.text)))
        if not terms:
            continue
        idf, absent = workspace.judge._idf(terms)
        mass = sum(idf.values())
        if mass:
            worst = max(worst, sum(idf[term] for term in terms if term not in held) / mass)
        unknown = unknown or any(term in absent and term not in held for term in terms)
    return worst, unknown


def answered_questions(suites: Sequence[str]) -> list[tuple[bool, float, bool]]:
    """``(answerable, worst unmentioned share, unknown word)`` for each question ``%context`` answers."""
    rows = []
    for _, row, workspace, packet in asked(suites):
        if packet.abstained or not packet.evidence:
            continue
        stored = workspace.passages([item.id for item in packet.evidence]).values()
        held = frozenset().union(*(_words(passage) for passage in stored))
        rows.append((row["expected_abstention"] is None, *unmentioned(workspace, row["question"], held)))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="+", help="policy suites under fixtures/ (scored ones only)")
    parser.add_argument("--bars", default="0.3,0.4,0.5,0.6", help="unmentioned shares that flag a packet")
    args = parser.parse_args(argv)
    unscored = sorted(set(args.suites) - set(scored_suites()))
    if unscored:
        parser.error(f"not a scored policy suite (a frozen one is never read): {', '.join(unscored)}")
    rows = answered_questions(args.suites)
    answerable = sum(ok for ok, _, _ in rows)
    no_answer = len(rows) - answerable
    print(f"answered: {answerable} answerable, {no_answer} no-answer")
    for bar in (float(b) for b in args.bars.split(",")):
        caught = [ok for ok, share, _ in rows if share >= bar]
        print(f"unmentioned share >= {bar}: {sum(caught)} answerable, {len(caught) - sum(caught)} no-answer flagged")
    caught = [ok for ok, _, unknown in rows if unknown]
    print(f"a word no passage holds: {sum(caught)} answerable, {len(caught) - sum(caught)} no-answer flagged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
