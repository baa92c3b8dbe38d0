"""Assembly policy: which retrieved passages may enter the packet, in what role, and why.

Steps, in order; a later step never overrides an earlier one:

1. **Scope** (applied in the lanes, before ranking): a note whose ``scope`` is not
   among the caller's never becomes a candidate; only a count leaves the lanes.
2. **Validity as of the clock**: outside ``valid_from``..``valid_to``, status
   draft / deprecated / rejected, or superseded by a visible note that is valid
   now: excluded with a reason code (shown as ``historical`` under audit).
3. **Authority**: for one proposition, a note of lower declared authority than
   another admitted note asserting a different value is kept only as
   ``explanation``, ordered after the governing evidence.
4. **Conflicts**: different values for one proposition among the candidates, or a
   supersession link between two candidates, become conflict objects, resolved by
   supersession, then by authority, else ``unresolved`` (abstain or escalate). An
   unresolved conflict *blocks* the packet (it abstains, showing both sides) only
   when the question is about its proposition; a conflict on a side topic is
   reported, with the same required behaviour for its proposition, and the answer goes out.
5. **Relevance**: only candidates judged to answer the question are admitted
   (:mod:`~retrieval_kernel.pipeline.answerability`); the fused order, inside each role.
6. **Dedup, intent and top**: near-duplicates collapse to the most authoritative,
   current copy (disagreements never collapse); the intent orders roles; then
   ``top`` items by priority: both sides of a blocking conflict (always), the best
   item, each resolved conflict's governing passage, one counter-evidence slot.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..corpus.facts import NoteFacts
from ..corpus.links import Edge, LinkGraph
from ..store.records import StoredPassage
from .answerability import OUT_OF_REACH, Judgement, content_terms

INTENTS = ("orient", "verify", "plan", "audit")
DEFAULT_INTENT = "orient"
ALL_SCOPES = "*"
NEAR_DUPLICATE_JACCARD = 0.8  # word-trigram overlap at which two passages say the same thing
SUPERSESSION = "supersession"  # the proposition of a conflict made by a link, not by asserts
CONFLICT_WINDOW = 8  # conflicts are sought on the propositions of this many leading eligible candidates (or top)
LEADING_NOTES = 3  # without a judgement, an unresolved conflict touching one of these notes blocks the answer
FILTERED_BY_VALIDITY, FILTERED_BY_SCOPE = "filtered_by_validity", "filtered_by_scope"

# Roles of admitted evidence, and the order each intent shows them in.
CURRENT, EXPLANATION, COUNTER, HISTORICAL = "current", "explanation", "counter", "historical"
ROLE_ORDER: dict[str, tuple[str, ...]] = {
    "orient": (CURRENT, EXPLANATION, COUNTER),
    "verify": (CURRENT, COUNTER, EXPLANATION),
    "plan": (CURRENT, COUNTER, EXPLANATION),
    "audit": (CURRENT, EXPLANATION, COUNTER),
}

# Exclusion reason codes (scope is only ever counted, never listed).
SCOPE = "scope"
NOT_YET_VALID = "not_yet_valid"
EXPIRED = "expired"
SUPERSEDED = "superseded"
DRAFT, DEPRECATED, REJECTED = "draft", "deprecated", "rejected"
DUPLICATE = "duplicate"
WEAK = "weak_match"  # found by a lane, but judged not to answer the question
BEYOND_TOP = "beyond_top"
BUDGET = "budget"
VALIDITY_CODES = (NOT_YET_VALID, EXPIRED, SUPERSEDED, DRAFT, DEPRECATED, REJECTED)

USE_WINNER = "use_winner"
ABSTAIN_OR_ESCALATE = "abstain_or_escalate"

_TOKEN = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Request:
    """The caller's terms: who is asking, as of when, and for what."""

    as_of: dt.date
    scopes: frozenset[str] = frozenset()
    intent: str = DEFAULT_INTENT
    audit: bool = False

    @property
    def shows_history(self) -> bool:
        return self.audit or self.intent == "audit"


@dataclass(frozen=True)
class Candidate:
    """A passage proposed by the lanes, in fused order, with the note facts policy reads."""

    stored: StoredPassage
    score: float
    retrieved_by: tuple[Any, ...]
    matched_terms: tuple[str, ...] = ()
    pulled_in_for: str | None = None  # set when added as the successor of a superseded candidate

    @property
    def id(self) -> str:
        return self.stored.passage.id

    @property
    def path(self) -> str:
        return self.stored.passage.path

    @property
    def facts(self) -> NoteFacts:
        return self.stored.facts


@dataclass(frozen=True)
class Admission:
    """A candidate allowed into the packet, its role and why."""

    candidate: Candidate
    role: str
    reason: str
    duplicates: tuple[str, ...] = ()
    status: str | None = None  # as of the clock: a declared "superseded" whose successor is not valid yet is current


@dataclass(frozen=True)
class Exclusion:
    """An in-scope candidate kept out of the packet as current evidence, and why."""

    candidate: Candidate
    code: str
    detail: str


@dataclass(frozen=True)
class Side:
    """One note's position in a conflict."""

    passage_id: str
    path: str
    value: Any
    authority: str | None
    status: str | None


@dataclass(frozen=True)
class ConflictDraft:
    """A conflict before evidence refs are known (assembly numbers the evidence)."""

    proposition: str
    sides: tuple[Side, ...]
    kind: str  # "superseded" | "authority" | "unresolved"
    winners: tuple[str, ...] = ()
    losers: tuple[str, ...] = ()
    blocking: bool = False  # unresolved and about the leading evidence: the packet must abstain

    @property
    def required_behavior(self) -> str:
        return ABSTAIN_OR_ESCALATE if self.kind == "unresolved" else USE_WINNER


@dataclass(frozen=True)
class Selection:
    """What the policy decided for one query."""

    admitted: tuple[Admission, ...]
    history: tuple[Admission, ...]
    excluded: tuple[Exclusion, ...]
    conflicts: tuple[ConflictDraft, ...]
    counts: Mapping[str, int] = field(default_factory=dict)
    out_of_reach: str | None = None  # nothing admitted: the answer is excluded as of the clock, or outside the scopes

    @property
    def blocked(self) -> bool:
        """Whether an unresolved conflict on the leading evidence requires abstaining."""
        return any(conflict.blocking for conflict in self.conflicts)


# ---------------------------------------------------------------- scope


def visible(facts: NoteFacts, scopes: frozenset[str]) -> bool:
    """Whether a caller with ``scopes`` may see a note (a note without scope is public)."""
    return not facts.scope or ALL_SCOPES in scopes or not scopes.isdisjoint(facts.scope)


# ---------------------------------------------------------------- the policy


def select(
    candidates: Sequence[Candidate],
    request: Request,
    links: LinkGraph,
    facts_of: Mapping[str, NoteFacts],
    lead_passage: Callable[[str], StoredPassage | None],
    top: int,
    judgement: Judgement | None = None,
    query: str = "",
) -> Selection:
    """Apply steps 2-6 to in-scope ``candidates`` (fused order) for ``request``.

    ``judgement`` says which candidates answer the question: only those are admitted
    (the others are excluded as ``weak_match``), and an unresolved conflict blocks
    only when the question is about its proposition (see :func:`_about`).
    """
    judged = judgement or Judgement.unjudged()
    standing = _Standing(request.as_of, links, facts_of)
    eligible: list[Candidate] = []
    excluded: list[Exclusion] = []
    in_play: set[str] = set()  # notes ranked no lower than the CONFLICT_WINDOW-th (or top-th) eligible candidate
    for candidate in _with_successors(candidates, standing, lead_passage):
        code, detail = standing.of(candidate.path)
        if len(eligible) < max(top, CONFLICT_WINDOW):
            in_play.add(candidate.path)
        if code is None:
            eligible.append(candidate)
        else:
            excluded.append(Exclusion(candidate, code, detail))
    conflicts = _mark_blocking(_conflicts(in_play, eligible, excluded, standing), eligible, judged, query)
    blocking = {side.path for conflict in conflicts if conflict.blocking for side in conflict.sides}
    answering = _answering(eligible, judged, blocking)
    excluded += [_weak(c, judged) for c in eligible if c not in answering]
    roles = _roles(answering, conflicts)
    kept, duplicates = _dedup(answering, roles)
    excluded += duplicates
    admitted = _order(kept, roles, request.intent, conflicts, top, judged)
    beyond = len(kept) - len(admitted)
    history = tuple(
        Admission(e.candidate, HISTORICAL, f"{e.code}: {e.detail}", status=e.candidate.facts.status or e.code)
        for e in excluded[:top]
        if request.shows_history and e.code not in (DUPLICATE, WEAK)
    )
    counts = _counts(excluded)
    if beyond:
        counts[BEYOND_TOP] = beyond
    reach = _out_of_reach(eligible, excluded, blocking, judged)
    if reach is not None:
        admitted, counts = [], {**counts, WEAK: counts.get(WEAK, 0) + len(admitted)}
    elif not admitted and any(e.code in VALIDITY_CODES and judged.answers(e.candidate) for e in excluded):
        reach = FILTERED_BY_VALIDITY
    return Selection(tuple(admitted), history, tuple(excluded), tuple(conflicts), counts, reach)


def _out_of_reach(
    eligible: Sequence[Candidate], excluded: Sequence[Exclusion], blocking: set[str], judged: Judgement
) -> str | None:
    """``filtered_by_validity`` / ``filtered_by_scope`` when the best answer may not be used and what may
    be used answers far worse (below OUT_OF_REACH of it): a stand-in is not an answer."""
    if not judged.judged or blocking:
        return None

    def best(candidates: Sequence[Candidate]) -> float:
        return max((judged.of(c.pulled_in_for or c.id) or 0.0 for c in candidates), default=0.0)

    usable = best(eligible)
    invalid = best(
        [e.candidate for e in excluded if e.code in VALIDITY_CODES and e.code != SUPERSEDED]
    )  # a successor answers
    barred = max(invalid, judged.hidden_best)
    if barred < judged.floor or usable >= OUT_OF_REACH * barred:
        return None
    return FILTERED_BY_VALIDITY if invalid >= judged.hidden_best else FILTERED_BY_SCOPE


def _answering(eligible: Sequence[Candidate], judged: Judgement, blocking: set[str]) -> list[Candidate]:
    """Candidates judged to answer, both sides of a blocking conflict, and every note that asserts
    a proposition an answering note asserts (the governing or corroborating statement of the same fact
    answers too, whatever its wording)."""
    answers = [c for c in eligible if judged.answers(c) or c.path in blocking]
    if not answers:
        return []
    stated = {key for c in answers for key in c.facts.asserts}
    return [c for c in eligible if c in answers or stated & c.facts.asserts.keys()]


def _weak(candidate: Candidate, judged: Judgement) -> Exclusion:
    if not judged.answerable:
        return Exclusion(candidate, WEAK, f"nothing found answers the question (confidence {judged.confidence:.2f})")
    probability = judged.of(candidate.pulled_in_for or candidate.id)
    if probability is None:
        return Exclusion(candidate, WEAK, "ranked below the candidates judged for answering")
    return Exclusion(candidate, WEAK, f"answers with probability {probability:.2f}, below {judged.floor:.2f}")


def _counts(excluded: Sequence[Exclusion]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for exclusion in excluded:
        counts[exclusion.code] = counts.get(exclusion.code, 0) + 1
    return counts


# ---------------------------------------------------------------- step 2: validity and supersession


class _Standing:
    """Each note's standing as of the clock: admissible, or excluded with a reason."""

    def __init__(self, as_of: dt.date, links: LinkGraph, facts_of: Mapping[str, NoteFacts]) -> None:
        self.as_of = as_of.isoformat()
        self.links = links
        self.facts_of = facts_of
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
        if facts.status in (DRAFT, DEPRECATED, REJECTED):
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
        return None, ""

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

    def successors(self, path: str, effective_only: bool = True) -> list[Edge]:
        """Visible notes that supersede ``path``; effective ones are themselves valid now."""
        facts = self.facts_of.get(path, NoteFacts())
        edges = [
            edge
            for edge in self.links.successors.get(path, ())
            if edge.new in self.facts_of and (edge.revision is None or edge.revision == facts.revision)
        ]
        return [edge for edge in edges if self.in_window(edge.new)[0] is None] if effective_only else edges


def _with_successors(
    candidates: Sequence[Candidate], standing: _Standing, lead_passage: Callable[[str], StoredPassage | None]
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


# ---------------------------------------------------------------- step 4: conflicts


def _conflicts(
    in_play: set[str], eligible: Sequence[Candidate], excluded: Sequence[Exclusion], standing: _Standing
) -> list[ConflictDraft]:
    """Conflicts on the propositions of the notes in play, with partners from the whole pool.

    A note asserts once, whichever section is cited; its side is shown by its best-ranked
    passage that states the value (else its best-ranked passage).
    """
    superseded = [e.candidate for e in excluded if e.code == SUPERSEDED]
    old_paths = {c.path for c in superseded}
    by_note = _by_note([*eligible, *superseded])
    pool = [passages[0] for passages in by_note.values()]
    propositions = sorted({p for c in pool if c.path in in_play for p in c.facts.asserts})
    conflicts: list[ConflictDraft] = []
    linked: set[tuple[str, str]] = set()
    for proposition in propositions:
        sides = [
            _stating(by_note[c.path], c.facts.asserts[proposition]) for c in pool if proposition in c.facts.asserts
        ]
        if len({_value_key(c.facts.asserts[proposition]) for c in sides}) < 2:
            continue
        for old in (c for c in sides if c.path in old_paths):
            for new in (c for c in sides if c.path in {e.new for e in standing.successors(old.path)}):
                if _value_key(old.facts.asserts[proposition]) != _value_key(new.facts.asserts[proposition]):
                    conflicts.append(_draft(proposition, [old, new], "superseded", [new], [old]))
                    linked.add((old.path, new.path))
        for group in _same_decision_scope([c for c in sides if c.path not in old_paths]):
            if len({_value_key(c.facts.asserts[proposition]) for c in group}) >= 2:
                conflicts.append(_by_authority(proposition, group))
    for old in (c for c in pool if c.path in old_paths):
        for edge in standing.successors(old.path):
            successor = next((c for c in pool if c.path == edge.new), None)
            if successor is None or (old.path, successor.path) in linked:
                continue
            if {old.path, successor.path} & in_play:
                conflicts.append(_draft(SUPERSESSION, [old, successor], "superseded", [successor], [old]))
    return conflicts


def _by_note(candidates: Sequence[Candidate]) -> dict[str, list[Candidate]]:
    """Each note's candidate passages, best-ranked first, notes in order of their best passage."""
    grouped: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        grouped.setdefault(candidate.path, []).append(candidate)
    return grouped


def _stating(passages: Sequence[Candidate], value: Any) -> Candidate:
    """The first passage whose text holds ``value`` as a whole word or number, else the first."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(str(value).strip())}(?![\w])", re.IGNORECASE)
    return next((c for c in passages if pattern.search(c.stored.passage.text)), passages[0])


def _same_decision_scope(sides: Sequence[Candidate]) -> list[list[Candidate]]:
    """Group sides that speak for the same audience: both unscoped, or sharing a scope.

    Values for different audiences (a tenant's contract and the public terms, or two
    tenants) are compatible, not a conflict (seed 003: "same decision scope?").
    """
    groups: list[list[Candidate]] = []
    for side in sides:
        joined = [g for g in groups if any(_shares_scope(side.facts, other.facts) for other in g)]
        merged = [item for g in joined for item in g] + [side]
        groups = [g for g in groups if g not in joined] + [merged]
    return [sorted(g, key=sides.index) for g in sorted(groups, key=lambda g: min(map(sides.index, g)))]


def _shares_scope(a: NoteFacts, b: NoteFacts) -> bool:
    return (not a.scope and not b.scope) or bool(set(a.scope) & set(b.scope))


def _mark_blocking(
    conflicts: list[ConflictDraft], eligible: Sequence[Candidate], judged: Judgement, query: str
) -> list[ConflictDraft]:
    """An unresolved conflict blocks the answer only when the question is about its proposition."""
    if not judged.judged:  # no judgement: a conflict on one of the leading notes blocks (the old rule)
        leading = set(list(_by_note(eligible))[:LEADING_NOTES])
        return [
            replace(c, blocking=c.kind == "unresolved" and any(side.path in leading for side in c.sides))
            for c in conflicts
        ]
    admissible = {c.id for c in eligible}
    return [replace(c, blocking=c.kind == "unresolved" and _about(c, judged, query, admissible)) for c in conflicts]


UNIT_WORDS = frozenset(
    content_terms(
        "hours hour days day minutes minute weeks week months month years year per pct percent count max "
        "min number amount limit value rate total interval"
    )
)


def _about(conflict: ConflictDraft, judged: Judgement, query: str, admissible: set[str]) -> bool:
    """Whether the question asks about the contested proposition, not only about a note that states it.

    A side's note must be among the two admissible notes that answer best. Then the question is about the
    conflict when it names what the proposition asserts (the last word of its key that is not a
    unit: ``window`` in ``refund_window_days``, ``retries`` in ``order_events_max_retries``), or
    when the best answer is a side's and the question names a side's value, or when the two best
    answering passages are the two passages that state the values.
    """
    answering = [pid for pid in judged.leading() if pid in admissible]
    notes = {_note_of(side.passage_id) for side in conflict.sides}
    leading_notes = list(dict.fromkeys(_note_of(pid) for pid in answering))[:2]
    if not notes & set(leading_notes):
        return False
    key = [
        term
        for term in content_terms(conflict.proposition.replace("_", " ").replace(".", " "))
        if term not in UNIT_WORDS
    ]
    if key and key[-1] in content_terms(query):
        return True
    if leading_notes[0] in notes and any(_mentions(query, side.value) for side in conflict.sides):
        return True
    return set(answering[:2]) == {side.passage_id for side in conflict.sides}  # the two best answers disagree


def _note_of(passage_id: str) -> str:
    return passage_id.split("#", 1)[0]


def _mentions(query: str, value: Any) -> bool:
    text = str(value).strip()
    return bool(text) and re.search(rf"(?<![\w.]){re.escape(text)}(?![\w])", query, re.IGNORECASE) is not None


def _by_authority(proposition: str, sides: Sequence[Candidate]) -> ConflictDraft:
    top_level = max(c.facts.authority_level for c in sides)
    at_top = [c for c in sides if c.facts.authority_level == top_level]
    top_values = {_value_key(c.facts.asserts[proposition]) for c in at_top}
    if top_level > 0 and len(top_values) == 1:
        # Lower-authority sides that agree with the winner corroborate it; only disagreeing ones lose.
        losers = [c for c in sides if _value_key(c.facts.asserts[proposition]) not in top_values]
        return _draft(proposition, sides, "authority", at_top, losers)
    return _draft(proposition, sides, "unresolved", [], [])


def _draft(
    proposition: str, sides: Sequence[Candidate], kind: str, winners: Sequence[Candidate], losers: Sequence[Candidate]
) -> ConflictDraft:
    def status(side: Candidate) -> str | None:  # as of the clock, like the evidence item's status
        return SUPERSEDED if kind == "superseded" and side in losers else effective_status(side.facts)

    return ConflictDraft(
        proposition=proposition,
        sides=tuple(
            Side(
                c.id,
                c.path,
                c.facts.asserts.get(proposition) if proposition != SUPERSESSION else status(c),
                c.facts.authority,
                status(c),
            )
            for c in sides
        ),
        kind=kind,
        winners=tuple(c.id for c in winners),
        losers=tuple(c.id for c in losers),
    )


def _value_key(value: Any) -> str:
    """Values compare as text, case and surrounding space ignored (``14`` equals ``"14"``)."""
    return str(value).strip().lower()


# ---------------------------------------------------------------- step 3: roles


def _roles(eligible: Sequence[Candidate], conflicts: Sequence[ConflictDraft]) -> dict[str, tuple[str, str]]:
    """``passage id -> (role, reason)`` for every eligible candidate."""
    loser_paths = {
        side.path: conflict
        for conflict in conflicts
        if conflict.kind == "authority"
        for side in conflict.sides
        if side.passage_id in conflict.losers
    }
    roles: dict[str, tuple[str, str]] = {}
    for candidate in eligible:
        facts = candidate.facts
        lost = loser_paths.get(candidate.path)
        if lost is not None:
            winner = lost.winners[0]
            roles[candidate.id] = (
                EXPLANATION,
                f"lower authority ({facts.authority or 'unknown'}) than {winner} on {lost.proposition}",
            )
        elif facts.status == "disputed":
            roles[candidate.id] = (COUNTER, "disputed: shown as counter-evidence, never governs")
        elif facts.is_counter_evidence:
            roles[candidate.id] = (COUNTER, f"{facts.kind} note: counter-evidence")
        else:
            roles[candidate.id] = (CURRENT, _current_reason(candidate))
        if facts.status == SUPERSEDED:
            role, reason = roles[candidate.id]
            roles[candidate.id] = (role, f"{reason}; declared superseded, but no successor is valid as of the clock")
    return roles


def effective_status(facts: NoteFacts) -> str | None:
    """The status of an admitted note as of the clock (it passed step 2, so it is not superseded now)."""
    return "current" if facts.status == SUPERSEDED else facts.status


def _current_reason(candidate: Candidate) -> str:
    if candidate.pulled_in_for:
        return f"current successor of superseded {candidate.pulled_in_for}"
    lanes = ", ".join(f"{hit.lane} #{hit.rank}" for hit in candidate.retrieved_by)
    reason = f"ranked by {lanes}"
    if candidate.matched_terms:
        reason += f"; matched terms: {', '.join(candidate.matched_terms)}"
    if candidate.facts.authority:
        reason += f"; {candidate.facts.authority}"
    return reason


# ---------------------------------------------------------------- step 6: dedup, intent, top


def _dedup(
    eligible: Sequence[Candidate], roles: Mapping[str, tuple[str, str]]
) -> tuple[list[Admission], list[Exclusion]]:
    """Collapse near-duplicates into the most authoritative, current, newest copy."""
    kept: list[Admission] = []
    shingles: list[frozenset[Any]] = []
    dropped: list[Exclusion] = []
    for candidate in eligible:
        role, reason = roles[candidate.id]
        mine = _shingles(candidate)
        twin = next(
            (i for i, other in enumerate(kept) if _near_duplicates(candidate, mine, other.candidate, shingles[i])), None
        )
        status = effective_status(candidate.facts)
        if twin is None:
            kept.append(Admission(candidate, role, reason, status=status))
            shingles.append(mine)
            continue
        other = kept[twin]
        if _preference(candidate, role) > _preference(other.candidate, other.role):
            dropped.append(Exclusion(other.candidate, DUPLICATE, f"near-duplicate of {candidate.id}"))
            kept[twin] = Admission(candidate, role, reason, (*other.duplicates, other.candidate.id), status)
            shingles[twin] = mine
        else:
            dropped.append(Exclusion(candidate, DUPLICATE, f"near-duplicate of {other.candidate.id}"))
            kept[twin] = replace(other, duplicates=(*other.duplicates, candidate.id))
    return kept, dropped


def _shingles(candidate: Candidate) -> frozenset[Any]:
    lines = candidate.stored.passage.text.split("\n")
    body = lines[1:] if len(lines) > 1 and lines[0].lstrip().startswith("#") else lines
    words = _TOKEN.findall(" ".join(body).lower())
    if len(words) < 3:
        return frozenset(words)
    return frozenset(zip(words, words[1:], words[2:], strict=False))


def _near_duplicates(a: Candidate, a_shingles: frozenset[Any], b: Candidate, b_shingles: frozenset[Any]) -> bool:
    """Same wording (trigram Jaccard) and no disagreement: same numbers, no differing assertion."""
    if not a_shingles or not b_shingles:
        return False
    smaller, larger = sorted((len(a_shingles), len(b_shingles)))
    if smaller < NEAR_DUPLICATE_JACCARD * larger:  # Jaccard is at most smaller / larger
        return False
    jaccard = len(a_shingles & b_shingles) / len(a_shingles | b_shingles)
    if jaccard < NEAR_DUPLICATE_JACCARD:
        return False
    if sorted(_NUMBER.findall(a.stored.passage.text)) != sorted(_NUMBER.findall(b.stored.passage.text)):
        return False
    shared = set(a.facts.asserts) & set(b.facts.asserts)
    return all(_value_key(a.facts.asserts[p]) == _value_key(b.facts.asserts[p]) for p in shared)


def _preference(candidate: Candidate, role: str) -> tuple[int, int, str]:
    return (candidate.facts.authority_level, int(role == CURRENT), candidate.stored.observed_at or "")


def _order(
    kept: Sequence[Admission],
    roles: Mapping[str, tuple[str, str]],
    intent: str,
    conflicts: Sequence[ConflictDraft],
    top: int,
    judged: Judgement,
) -> list[Admission]:
    """Order by the intent's roles, then how likely each answers (then fused rank), and take ``top`` by priority.

    Priority: both sides of a blocking conflict (always, even past ``top``), the best item,
    the governing note of each resolved conflict, one counter-evidence slot, then the rest.
    """
    order = ROLE_ORDER[intent]

    def key(item: tuple[int, Admission]) -> tuple[int, int, float, int]:
        position, admission = item
        authority = -admission.candidate.facts.authority_level if intent == "verify" else 0
        candidate = admission.candidate
        answers = (judged.of(candidate.pulled_in_for or candidate.id) or 0.0) if judged.orders else 0.0
        return (order.index(admission.role), authority, -answers, position)

    ranked = [admission for _, admission in sorted(enumerate(kept), key=key)]
    blocking = {side.path for conflict in conflicts if conflict.blocking for side in conflict.sides}
    winners = {pid for c in conflicts if c.kind != "unresolved" for pid in c.winners}
    always = [a for a in ranked if a.candidate.path in blocking]  # both sides of a blocking conflict, even past top
    # Each resolved conflict's governing passage: the winner's passage stating the value, else its note's best.
    stated = [a for a in ranked if a.candidate.id in winners]
    notes = {side.path for c in conflicts for side in c.sides if side.passage_id in winners}
    notes -= {a.candidate.path for a in stated}
    governing = stated + [a for a in _first_admission_per_note(ranked) if a.candidate.path in notes]
    counter = [a for a in ranked if a.role == COUNTER][:1] if top > 1 else []  # a single slot goes to the best
    priority = [*always, *ranked[:1], *governing, *counter, *ranked]
    chosen: list[Admission] = []
    for admission in priority:
        if admission not in chosen and (len(chosen) < top or admission in always):
            chosen.append(admission)
    return [admission for admission in ranked if admission in chosen]


def _first_admission_per_note(ranked: Sequence[Admission]) -> list[Admission]:
    seen: set[str] = set()
    first = []
    for admission in ranked:
        if admission.candidate.path not in seen:
            seen.add(admission.candidate.path)
            first.append(admission)
    return first
