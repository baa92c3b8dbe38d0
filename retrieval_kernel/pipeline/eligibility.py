"""Eligibility before the pool: what can never be admitted as current is set aside inside the lanes.

Scope is applied inside each lane as a set of passage ids the lane drops before it counts,
thresholds and ranks (``hidden``). Eligibility composes the same way: the passages of every
note that, as of the clock, can never be current evidence (not yet valid, expired, a status
that is never current, or superseded by a note valid now; :class:`~.validity.Standing`) join
the set the lanes drop, so a long-lived collection's stale revisions cannot push current notes
out of the candidate pool. The lanes stay unaware of why a passage is dropped (whatever scores
it), and the drops are split back afterwards: scope's are counted as before, eligibility's
become the *set-aside* hits, ranked after the pool so the policy still names them (excluded with
their reason, the successor of a superseded one pulled in, ``filtered_by_validity`` when only
they answer). Under ``--audit`` nothing is set aside: the policy sees every candidate.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..corpus.links import LinkGraph
from ..store.records import RecordStore
from .lanes import LEXICAL_MIN_SCORE, LaneRun
from .scope import ScopeView
from .validity import Standing


@dataclass(frozen=True)
class Eligibility:
    """The passages one caller may never be shown as current evidence as of one clock, by note."""

    ineligible: frozenset[str] = frozenset()  # passage ids
    codes: Mapping[str, str] | None = None  # note path -> the reason code (expired, draft, moved...)
    by_note: Mapping[str, frozenset[str]] = field(default_factory=dict, repr=False)  # path -> its ineligible ids

    @classmethod
    def build(cls, records: RecordStore, view: ScopeView, as_of: dt.date) -> Eligibility:
        standing = Standing(as_of, view.links, view.facts)
        codes = {path: code for path in sorted(view.facts) if (code := standing.of(path)[0]) is not None}
        return cls._of(records, codes, {})

    def patched(
        self, records: RecordStore, old: ScopeView, new: ScopeView, changed: set[str], as_of: dt.date
    ) -> Eligibility:
        """This eligibility of ``old`` for ``new``, where the notes at ``changed`` differ: only the notes whose
        standing they can move are decided again (what :meth:`build` of ``new`` gives)."""
        affected = _affected(old.links, new.links, changed)
        standing = Standing(as_of, new.links, new.facts)
        codes = {path: code for path, code in (self.codes or {}).items() if path not in affected}
        for path in affected & new.facts.keys():
            if (code := standing.of(path)[0]) is not None:
                codes[path] = code
        kept = {path: ids for path, ids in self.by_note.items() if path not in affected}
        return Eligibility._of(records, dict(sorted(codes.items())), kept)

    @classmethod
    def _of(cls, records: RecordStore, codes: dict[str, str], known: dict[str, frozenset[str]]) -> Eligibility:
        """The eligibility with ``codes``; ``known``: the passage ids of some of those notes, still current."""
        by_note = {**known, **records.passage_ids_of(path for path in codes if path not in known)}
        return cls(frozenset().union(*by_note.values()), codes, by_note)

    def screen(self, hidden: frozenset[str]) -> frozenset[str]:
        """What the lanes drop: the caller's hidden passages and the ineligible ones."""
        return hidden | self.ineligible if self.ineligible else hidden


def _affected(old: LinkGraph, new: LinkGraph, changed: set[str]) -> set[str]:
    """The notes whose standing a change of the notes at ``changed`` can move: those notes, the notes
    they supersede (before or after), and every note whose successors changed."""
    affected = set(changed)
    for graph in (old, new):
        affected.update(edge.old for path in changed for edge in graph.predecessors.get(path, ()))
    successors = old.successors.keys() | new.successors.keys()
    affected.update(path for path in successors if old.successors.get(path) != new.successors.get(path))
    return affected


def split_runs(
    runs: Mapping[str, LaneRun], scope_hidden: frozenset[str], eligibility: Eligibility, dense_floor: float
) -> tuple[dict[str, LaneRun], dict[str, LaneRun]]:
    """``(runs as scope alone leaves them, the set-aside hits as runs)`` from lanes that dropped both.

    A set-aside run ranks the lane's ineligible hits that pass its own threshold, best first; its
    ``hidden`` and ``shadow`` hold them too, so the answerability judge can weigh them like scope's.
    """
    if not eligibility.ineligible:
        return dict(runs), {}
    scoped: dict[str, LaneRun] = {}
    aside: dict[str, LaneRun] = {}
    for name, run in runs.items():
        scoped[name] = replace(
            run,
            hidden=run.hidden & scope_hidden,
            shadow={pid: score for pid, score in run.shadow.items() if pid in scope_hidden},
        )
        aside[name] = _set_aside(name, run, eligibility.ineligible, dense_floor)
    return scoped, aside


def _set_aside(name: str, run: LaneRun, ineligible: frozenset[str], dense_floor: float) -> LaneRun:
    if name == "identity":  # names resolved exactly: no scores, no threshold
        hits = {pid: 1.0 for pid in sorted(run.hidden & ineligible)}
    else:
        floor_passes = (lambda s: s > LEXICAL_MIN_SCORE) if name == "lexical" else (lambda s: s >= dense_floor)
        hits = {pid: score for pid, score in run.shadow.items() if pid in ineligible and floor_passes(score)}
    ranking = sorted(hits.items(), key=lambda item: (-item[1], item[0]))
    # ``seen`` stays the lane's own (the judge's background for dense margins).
    return replace(run, ranking=ranking, matched={}, below_threshold=0, hidden=frozenset(hits), shadow=hits)


def set_aside_count(aside: Mapping[str, LaneRun]) -> int:
    """How many distinct passages the lanes found and set aside as never current."""
    return len(frozenset().union(*(run.hidden for run in aside.values()))) if aside else 0
