"""Step 2 of the policy: each note's standing as of the clock (validity window, status, supersession),
and the current successor of a superseded candidate pulled in when the lanes missed it."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..corpus.facts import NoteFacts
from ..corpus.links import Edge, LinkGraph
from ..corpus.status import NEVER_CURRENT
from ..store.records import StoredPassage
from .candidates import EXPIRED, NOT_YET_VALID, SUPERSEDED, Candidate

SERIES_KINDS = frozenset({"record", "report"})  # dated observations: a later one of the same series replaces them


def series_of(facts: NoteFacts) -> frozenset[str] | None:
    """The series an observation note belongs to: the shapes of the keys it asserts, numbers blanked
    (``stock_2027_02_08.o_negative_units`` and ``stock_2027_02_15.o_negative_units`` are one series)."""
    if (facts.kind or "").lower() not in SERIES_KINDS or not facts.asserts:
        return None
    return frozenset(re.sub(r"\d+", "#", key) for key in facts.asserts)


@dataclass(frozen=True)
class Observations:
    """The observation notes (``record`` / ``report``) a caller can see: each one's source date and
    series, and each series' members as ``(observed, path)``. Built once per scope view, not per query."""

    series_of: Mapping[str, tuple[frozenset[str], str]] = field(default_factory=dict)  # path -> (series, date)
    members: Mapping[frozenset[str], tuple[tuple[str, str], ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, facts_of: Mapping[str, NoteFacts], observed_of: Mapping[str, str | None]) -> Observations:
        dated = {
            path: (series, observed[:10])
            for path, facts in facts_of.items()
            if (series := series_of(facts)) is not None and (observed := observed_of.get(path) or "")
        }
        members: dict[frozenset[str], list[tuple[str, str]]] = {}
        for path, (series, observed) in dated.items():
            members.setdefault(series, []).append((observed, path))
        return cls(dated, {series: tuple(found) for series, found in members.items()})

    def patched(
        self, changed: Iterable[str], facts_of: Mapping[str, NoteFacts], observed_of: Mapping[str, str | None]
    ) -> Observations:
        """These observations with the notes at ``changed`` taken again from ``facts_of`` (shown notes only:
        a changed path not in it is gone); what :meth:`of` of every shown note gives."""
        changed = set(changed)
        fresh = Observations.of({path: facts_of[path] for path in changed if path in facts_of}, observed_of)
        dated = dict(self.series_of)
        touched = {dated.pop(path)[0] for path in changed if path in dated} | set(fresh.members)
        dated.update(fresh.series_of)
        members = dict(self.members)
        for series in touched:
            kept = [entry for entry in members.pop(series, ()) if entry[1] not in changed]
            found = sorted([*kept, *fresh.members.get(series, ())], key=lambda entry: entry[1])  # by path
            if found:
                members[series] = tuple(found)
        return Observations(dated, members)


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

    def of(self, path: str) -> tuple[str | None, str]:
        if path not in self._cache:
            self._cache[path] = self._decide(path)
        return self._cache[path]

    def in_window(self, path: str) -> tuple[str | None, str]:
        facts = self.facts_of.get(path, NoteFacts())
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
        if self.facts_of.get(path, NoteFacts()).status == SUPERSEDED and not named:
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
        series, observed = self.observations.series_of[path]
        later = [
            (when, other)
            for when, other in self.observations.members[series]
            if observed < when <= self.as_of and other != path and self.in_window(other)[0] is None
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
        facts = self.facts_of.get(path, NoteFacts())
        edges = [
            edge
            for edge in self.links.successors.get(path, ())
            if edge.new in self.facts_of and (edge.revision is None or edge.revision == facts.revision)
        ]
        return [edge for edge in edges if self.in_window(edge.new)[0] is None] if effective_only else edges


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
