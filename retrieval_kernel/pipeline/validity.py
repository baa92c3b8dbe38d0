"""Step 2 of the policy: each note's standing as of the clock (validity window, status, supersession),
and the current successor of a superseded candidate pulled in when the lanes missed it."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..corpus.facts import NoteFacts
from ..corpus.links import Edge, LinkGraph
from ..corpus.status import NEVER_CURRENT
from ..store.records import StoredPassage
from .candidates import EXPIRED, NOT_YET_VALID, SUPERSEDED, Candidate

SERIES_KINDS = frozenset({"record", "report"})  # dated observations: a later one of the same series replaces them
SERIES_OVERLAP = 0.5  # two observations are one series when they share this much of their key shapes


_PATH_SHAPE = "path:"  # marks a dated path's shape among the key shapes
_DATE_IN_PATH = re.compile(r"(?<!\d)\d{4}[-_]?\d{2}[-_]?\d{2}(?!\d)")  # "log-2027-05-12.md", "log_20270512.md"


def series_of(facts: NoteFacts, path: str = "") -> frozenset[str] | None:
    """The key shapes of an observation note, numbers blanked (``stock_2027_02_08.o_negative_units`` and
    ``stock_2027_02_15.o_negative_units`` have one shape), with its path's shape when the path holds a
    date (``records/log-2027-05-12.md`` -> ``records/log-#.md``);
    ``None`` for a note that observes nothing."""
    if (facts.kind or "").lower() not in SERIES_KINDS or not facts.asserts:
        return None
    shapes = {re.sub(r"\d+", "#", key) for key in facts.asserts}
    dated = _DATE_IN_PATH.sub("#", path)
    return frozenset(shapes | ({_PATH_SHAPE + dated} if dated != path else set()))


def one_series(shapes: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two observations make one series: their paths differ only in the date they hold
    (``log-2027-05-05.md`` and ``log-2027-05-12.md``), or at least :data:`SERIES_OVERLAP` of all their
    key shapes are shared (a daily status that adds or drops a line is still the daily status)."""
    if any(shape.startswith(_PATH_SHAPE) for shape in shapes & other):
        return True
    keys, other_keys = ({s for s in group if not s.startswith(_PATH_SHAPE)} for group in (shapes, other))
    return len(keys & other_keys) >= SERIES_OVERLAP * len(keys | other_keys)


@dataclass(frozen=True)
class Observations:
    """The observation notes (``record`` / ``report``) a caller can see: each one's source date and
    key shapes, and for each shape the notes asserting it as ``(observed, path)``. Built once per
    scope view, not per query."""

    series_of: Mapping[str, tuple[frozenset[str], str]] = field(default_factory=dict)  # path -> (shapes, date)
    members: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)  # shape -> (date, path)

    @classmethod
    def of(cls, facts_of: Mapping[str, NoteFacts], observed_of: Mapping[str, str | None]) -> Observations:
        dated = {
            path: (shapes, observed[:10])
            for path, facts in facts_of.items()
            if (shapes := series_of(facts, path)) is not None and (observed := observed_of.get(path) or "")
        }
        members: dict[str, list[tuple[str, str]]] = {}
        for path, (shapes, observed) in sorted(dated.items()):
            for shape in shapes:
                members.setdefault(shape, []).append((observed, path))
        return cls(dated, {shape: tuple(found) for shape, found in members.items()})

    def patched(
        self, changed: Iterable[str], facts_of: Mapping[str, NoteFacts], observed_of: Mapping[str, str | None]
    ) -> Observations:
        """These observations with the notes at ``changed`` taken again from ``facts_of`` (shown notes only:
        a changed path not in it is gone); what :meth:`of` of every shown note gives."""
        changed = set(changed)
        fresh = Observations.of({path: facts_of[path] for path in changed if path in facts_of}, observed_of)
        dated = dict(self.series_of)
        touched = {shape for path in changed if path in dated for shape in dated.pop(path)[0]} | set(fresh.members)
        dated.update(fresh.series_of)
        members = dict(self.members)
        for shape in touched:
            kept = [entry for entry in members.pop(shape, ()) if entry[1] not in changed]
            found = sorted([*kept, *fresh.members.get(shape, ())], key=lambda entry: entry[1])  # by path
            if found:
                members[shape] = tuple(found)
        return Observations(dated, members)

    def series(self, path: str) -> list[tuple[str, str]]:
        """``(observed, path)`` of every other observation in ``path``'s series."""
        if path not in self.series_of:
            return []
        shapes = self.series_of[path][0]
        sharing = {entry for shape in shapes for entry in self.members.get(shape, ()) if entry[1] != path}
        return sorted(entry for entry in sharing if one_series(shapes, self.series_of[entry[1]][0]))


_NO_FACTS = NoteFacts()  # a note the view does not hold (frozen: shared, never built per call)


class Standing:
    """Each note's standing as of the clock: admissible, or excluded with a reason."""

    def __init__(
        self,
        as_of: dt.date,
        links: LinkGraph,
        facts_of: Mapping[str, NoteFacts],
        observations: Observations | None = None,
    ) -> None:
        self.as_of = as_of.isoformat()
        self.links = links
        self.facts_of = facts_of
        self.observations = observations or Observations()
        self._cache: dict[str, tuple[str | None, str]] = {}
        self._asserting: dict[str, tuple[str, ...]] | None = None

    def asserting(self, proposition: str) -> tuple[str, ...]:
        """The paths of the visible notes that assert ``proposition``, in path order (indexed on first use)."""
        if self._asserting is None:
            index: dict[str, list[str]] = {}
            for path in sorted(self.facts_of):
                for key in self.facts_of[path].asserts:
                    index.setdefault(key, []).append(path)
            self._asserting = {key: tuple(paths) for key, paths in index.items()}
        return self._asserting.get(proposition, ())

    def of(self, path: str) -> tuple[str | None, str]:
        if path not in self._cache:
            self._cache[path] = self._decide(path)
        return self._cache[path]

    def in_window(self, path: str) -> tuple[str | None, str]:
        facts = self.facts_of.get(path, _NO_FACTS)
        if facts.valid_from and self.as_of < facts.valid_from:
            return NOT_YET_VALID, f"valid from {facts.valid_from}, after the clock {self.as_of}"
        if facts.valid_to and self.as_of > facts.valid_to:
            return EXPIRED, f"valid to {facts.valid_to}, before the clock {self.as_of}"
        if facts.status in NEVER_CURRENT:
            return facts.status, f"status {facts.status}"
        return None, ""

    def _decide(self, path: str) -> tuple[str | None, str]:
        code, detail = self.in_window(path)
        if code is not None:
            return code, detail
        named = self.successors(path, effective_only=False)
        effective = self.successors(path)
        if effective:
            return SUPERSEDED, "superseded by " + ", ".join(edge.new for edge in effective)
        if self.facts_of.get(path, _NO_FACTS).status == SUPERSEDED and not named:
            return SUPERSEDED, "status superseded; no successor note is visible"
        later = self.later_observation(path)
        if later is not None:
            return SUPERSEDED, f"a later observation of the same series: {later[1]} (observed {later[0]})"
        return None, ""

    def later_observation(self, path: str) -> tuple[str, str] | None:
        """``(observed, path)`` of the latest note of ``path``'s series observed after it, by the clock, and
        valid now (a daily stock report is replaced by the next day's)."""
        if path not in self.observations.series_of:
            return None
        observed = self.observations.series_of[path][1]
        later = [
            (when, other)
            for when, other in self.observations.series(path)
            if observed < when <= self.as_of and self.in_window(other)[0] is None
        ]
        return max(later) if later else None

    def heirs(self, path: str) -> list[str]:
        """The admissible notes at the end of ``path``'s supersession chains (A → B → C gives C)."""
        found: list[str] = []
        seen = {path}
        queue = [edge.new for edge in self.successors(path)]
        while queue:
            successor = queue.pop(0)
            if successor in seen:
                continue
            seen.add(successor)
            code, _ = self.of(successor)
            if code is None:
                found.append(successor)
            elif code == SUPERSEDED:
                queue += [edge.new for edge in self.successors(successor)]
        return found

    def amenders(self, path: str) -> list[Edge]:
        """Visible notes valid now that partly supersede (amend) ``path``: it stays current, they govern."""
        edges = self.links.amenders.get(path, ())
        return [edge for edge in edges if edge.new in self.facts_of and self.of(edge.new)[0] is None]

    def successors(self, path: str, effective_only: bool = True) -> list[Edge]:
        """Visible notes that supersede ``path``; effective ones are themselves valid now."""
        facts = self.facts_of.get(path, _NO_FACTS)
        edges = [
            edge
            for edge in self.links.successors.get(path, ())
            if edge.new in self.facts_of and (edge.revision is None or edge.revision == facts.revision)
        ]
        return [edge for edge in edges if self.in_window(edge.new)[0] is None] if effective_only else edges


def with_partners(
    eligible: Sequence[Candidate],
    present: set[str],
    in_play: set[str],
    standing: Standing,
    stating_passage: Callable[[str, Any], StoredPassage | None],
) -> list[Candidate]:
    """For the facts the ``eligible`` notes in play assert, the current notes not ``present`` among the
    candidates that assert another value.

    A tie is a tie whether or not retrieval found its other side: each partner comes as its passage
    stating the value (for the conflict only; it is never admitted as an answer).
    """
    return _pulled_in(
        eligible, present, in_play, standing, stating_passage, lambda path, _: standing.of(path)[0] is None
    )


def with_predecessors(
    eligible: Sequence[Candidate],
    present: set[str],
    in_play: set[str],
    standing: Standing,
    stating_passage: Callable[[str, Any], StoredPassage | None],
) -> list[Candidate]:
    """For the facts the ``eligible`` notes in play assert, the notes they supersede that asserted another
    value and are not ``present`` among the candidates: revision A's 4 months behind revision B's 6.

    A change of value is shown whether or not retrieval found the old revision; each predecessor comes
    as its passage stating the old value (a superseded side of a conflict, never admitted as an answer).
    """

    def supersedes(path: str, candidate: Candidate) -> bool:
        succeeded = standing.of(path)[0] == SUPERSEDED
        return succeeded and candidate.path in {edge.new for edge in standing.successors(path)}

    return _pulled_in(eligible, present, in_play, standing, stating_passage, supersedes)


def _pulled_in(
    eligible: Sequence[Candidate],
    present: set[str],
    in_play: set[str],
    standing: Standing,
    stating_passage: Callable[[str, Any], StoredPassage | None],
    takes: Callable[[str, Candidate], bool],
) -> list[Candidate]:
    """The notes not ``present`` that assert another value for a fact a note in play asserts and that
    ``takes(path, candidate)`` accepts, each as its passage stating its value, pulled in for that candidate."""
    present = set(present)
    pulled: list[Candidate] = []
    for candidate in eligible:
        if candidate.path not in in_play:
            continue
        for proposition, value in candidate.facts.asserts.items():
            for path in standing.asserting(proposition):
                other = standing.facts_of[path].asserts[proposition]
                if path in present or value_key(other) == value_key(value) or not takes(path, candidate):
                    continue
                stated = stating_passage(path, other)
                if stated is not None:
                    present.add(path)
                    pulled.append(Candidate(stated, 0.0, (), (), pulled_in_for=candidate.id))
    return pulled


def with_successors(
    candidates: Sequence[Candidate], standing: Standing, lead_passage: Callable[[str], StoredPassage | None]
) -> list[Candidate]:
    """Candidates, each superseded one followed by its current successor if the lanes missed it."""
    present = {candidate.path for candidate in candidates}
    out: list[Candidate] = []
    for candidate in candidates:
        out.append(candidate)
        for heir in standing.heirs(candidate.path):
            if heir in present:
                continue
            lead = lead_passage(heir)
            if lead is not None:
                present.add(heir)
                out.append(Candidate(lead, 0.0, (), (), pulled_in_for=candidate.id))
    return out


def value_key(value: Any) -> str:
    """Values compare as text, case and surrounding space ignored (``14`` equals ``"14"``)."""
    return str(value).strip().lower()
