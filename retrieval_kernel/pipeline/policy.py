"""Assembly policy: which retrieved passages may enter the packet, in what role, and why.

Steps, in order; a later step never overrides an earlier one:

1. **Scope** (applied in the lanes, before ranking): a note whose ``scope`` is not
   among the caller's never becomes a candidate; only a count leaves the lanes.
2. **Validity as of the clock**: outside ``valid_from``..``valid_to``, a status that is
   never current (draft, deprecated, rejected, withdrawn, moved), or superseded by a
   visible note that is valid now: excluded with a reason code (shown as ``historical``
   under audit). What can never be admitted is set aside before the lanes' pool
   (:mod:`~retrieval_kernel.pipeline.eligibility`) and listed after it. A note *partly*
   superseded (amended) by a valid note stays current, marked ``partly_superseded``;
   where the two differ the amending note governs (step 4) and comes first.
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
from dataclasses import replace
from functools import lru_cache
from typing import Any

from ..corpus.facts import NoteFacts
from ..corpus.links import LinkGraph
from ..corpus.status import PARTLY_SUPERSEDED
from ..store.records import StoredPassage
from .answerability import Judgement
from .candidates import (
    BEYOND_TOP,
    COUNTER,
    CURRENT,
    DUPLICATE,
    EXPLANATION,
    FILTERED_BY_SCOPE,
    FILTERED_BY_VALIDITY,
    HISTORICAL,
    NOT_YET_OBSERVED,
    ROLE_ORDER,
    SUPERSEDED,
    SUPERSESSION,
    VALIDITY_CODES,
    WEAK,
    Admission,
    Candidate,
    ConflictDraft,
    Exclusion,
    Request,
    Selection,
    effective_status,
    observed_after,
)
from .conflicts import find_conflicts, mark_blocking, mentions
from .validity import Observations, Standing, value_key, with_partners, with_predecessors, with_successors

NEAR_DUPLICATE_JACCARD = 0.8  # word-trigram overlap at which two passages say the same thing
AUTHORITY_TIER = 0.5  # verifying orders by authority the passages answering at least this share of the best
CONFLICT_WINDOW = 8  # conflicts are sought on the propositions of this many leading eligible candidates (or top)
_TOKEN = re.compile(r"\w+")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def select(
    candidates: Sequence[Candidate],
    request: Request,
    links: LinkGraph,
    facts_of: Mapping[str, NoteFacts],
    lead_passage: Callable[[str], StoredPassage | None],
    top: int,
    judgement: Judgement | None = None,
    query: str = "",
    observations: Observations | None = None,
    standing: Standing | None = None,
    stating_passage: Callable[[str, Any], StoredPassage | None] | None = None,
) -> Selection:
    """Apply steps 2-6 to in-scope ``candidates`` (fused order) for ``request``.

    ``standing`` (each note's standing at ``request.as_of`` over these links, facts and
    observations) may be kept by the caller between queries: it only remembers what it decided.
    ``stating_passage(path, value)`` gives a note's passage stating a value: with it, a current note
    asserting another value for a fact a note in play asserts is a conflict's side even when the
    lanes missed it (it is never admitted as an answer).

    ``judgement`` says which candidates answer the question: only those are admitted
    (the others are excluded as ``weak_match``), and an unresolved conflict blocks
    only when the question is about its proposition (see :func:`_about`).
    """
    judged = judgement or Judgement.unjudged()
    standing = standing or Standing(request.as_of, links, facts_of, observations)
    eligible: list[Candidate] = []
    excluded: list[Exclusion] = []
    in_play: set[str] = set()  # notes ranked no lower than the CONFLICT_WINDOW-th (or top-th) eligible candidate
    for candidate in with_successors(candidates, standing, lead_passage):
        code, detail = standing.of(candidate.path)
        if code is None:
            code, detail = _observed_after(candidate, request.as_of) or (None, "")
        if len(eligible) < max(top, CONFLICT_WINDOW):
            in_play.add(candidate.path)
        if code is None:
            eligible.append(candidate)
        else:
            excluded.append(Exclusion(candidate, code, detail))
    in_play |= _set_aside_in_play(candidates, eligible[: max(top, CONFLICT_WINDOW)], judged)
    in_play |= _answering_in_play(eligible, judged, top)
    present = {c.path for c in eligible} | {e.candidate.path for e in excluded}
    partners, older = [], []
    if stating_passage is not None:
        partners = with_partners(eligible, present, in_play, standing, stating_passage)
        older = [Exclusion(c, SUPERSEDED, "an older revision's value")
                 for c in with_predecessors(eligible, present, in_play, standing, stating_passage)]  # fmt: skip
    found = find_conflicts(in_play, [*eligible, *partners], [*excluded, *older], standing)
    conflicts = mark_blocking(found, eligible, judged, query)
    blocking = {side.path for conflict in conflicts if conflict.blocking for side in conflict.sides}
    answering = _answering(eligible, judged, blocking)
    answering_ids = {id(c) for c in answering}  # identity: the same candidate objects (dataclass == is deep)
    excluded += [_weak(c, judged) for c in eligible if id(c) not in answering_ids]
    amended = {c.path: tuple(e.new for e in standing.amenders(c.path)) for c in answering}
    amended = {path: successors for path, successors in amended.items() if successors}
    roles = _roles(answering, conflicts, amended)
    kept, duplicates = _dedup(answering, roles, amended)
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


def _observed_after(candidate: Candidate, as_of: dt.date) -> tuple[str, str] | None:
    """A note without a validity window is current from when it was observed (:func:`observed_after`). It
    is not a better answer out of reach either (not a validity code)."""
    if not observed_after(candidate, as_of):
        return None
    return NOT_YET_OBSERVED, f"observed {candidate.stored.observed_at}, after the clock {as_of.isoformat()}"


def _answering_in_play(eligible: Sequence[Candidate], judged: Judgement, top: int) -> set[str]:
    """The notes of the ``top`` candidates that answer best: they lead the packet, wherever fusion ranked them,
    so their conflicts are looked for too."""
    leading = set(judged.leading()[:top])
    return {c.path for c in eligible if c.id in leading}


def _set_aside_in_play(candidates: Sequence[Candidate], window: Sequence[Candidate], judged: Judgement) -> set[str]:
    """The notes of never-current candidates (set aside before the pool, ranked after it) that answer at
    least as well as the conflict window's weakest eligible candidate: they would have been in the window,
    so the conflicts they take part in (an old decision and the one that superseded it) are reported."""
    if not judged.judged or not window:
        return set()
    weakest = min(judged.of(c.pulled_in_for or c.id) or 0.0 for c in window)
    return {c.path for c in candidates if c.set_aside and (judged.of(c.id) or 0.0) >= max(weakest, judged.floor)}


def _out_of_reach(
    eligible: Sequence[Candidate], excluded: Sequence[Exclusion], blocking: set[str], judged: Judgement
) -> str | None:
    """``filtered_by_validity`` / ``filtered_by_scope`` when the best answer may not be used and what may
    be used answers far worse (below OUT_OF_REACH of it): a stand-in is not an answer."""
    if not judged.judged or (blocking and judged.answerable):
        return None  # a conflict the answer is about is shown, not hidden behind a stand-in

    usable = max((judged.of(c.pulled_in_for or c.id) or 0.0 for c in eligible), default=0.0)
    barred = [e.candidate for e in excluded if e.code in VALIDITY_CODES and e.code != SUPERSEDED]  # a successor answers
    invalid = max((judged.reach_of(c.pulled_in_for or c.id) for c in barred), default=0.0)  # stating the value
    if not judged.out_of_reach(usable, max(invalid, judged.hidden_best)):
        return None
    return FILTERED_BY_VALIDITY if invalid >= judged.hidden_best else FILTERED_BY_SCOPE


def _answering(eligible: Sequence[Candidate], judged: Judgement, blocking: set[str]) -> list[Candidate]:
    """Candidates judged to answer, both sides of a blocking conflict, and every note that asserts
    a proposition an answering note asserts (the governing or corroborating statement of the same fact
    answers too, whatever its wording)."""
    answers = [c for c in eligible if judged.answers(c) or c.path in blocking]
    if not answers:
        return []
    stated = {key for c in answers for key in _stated_keys(c)}
    answer_ids = {id(c) for c in answers}
    return [c for c in eligible if id(c) in answer_ids or stated & _stated_keys(c)]


def _stated_keys(candidate: Candidate) -> set[str]:
    """The asserted propositions whose value this passage states in its text (a note's other passages,
    about other things, share its front matter but not its statements)."""
    text = candidate.stored.passage.text
    return {key for key, value in candidate.facts.asserts.items() if mentions(text, value)}


def _weak(candidate: Candidate, judged: Judgement) -> Exclusion:
    if not judged.answerable:
        return Exclusion(candidate, WEAK, judged.why_not())
    probability = judged.of(candidate.pulled_in_for or candidate.id)
    if probability is None:
        return Exclusion(candidate, WEAK, "ranked below the candidates judged for answering")
    return Exclusion(candidate, WEAK, f"answers with probability {probability:.2f}, below {judged.floor:.2f}")


def _counts(excluded: Sequence[Exclusion]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for exclusion in excluded:
        counts[exclusion.code] = counts.get(exclusion.code, 0) + 1
    return counts


# ---------------------------------------------------------------- step 3: roles


def _roles(
    eligible: Sequence[Candidate], conflicts: Sequence[ConflictDraft], amended: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[str, str]]:
    """``passage id -> (role, reason)`` for every eligible candidate."""
    changed = _changed_parts(conflicts)
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
        if candidate.path in amended:
            roles[candidate.id] = _partly_superseded_role(candidate, roles[candidate.id], amended, changed)
    return roles


def _changed_parts(conflicts: Sequence[ConflictDraft]) -> dict[str, list[ConflictDraft]]:
    """Per amended note, the partly_superseded conflicts on a proposition its amending note changes."""
    found: dict[str, list[ConflictDraft]] = {}
    for conflict in conflicts:
        if conflict.kind == PARTLY_SUPERSEDED and conflict.proposition != SUPERSESSION:
            for side in conflict.sides:
                if side.passage_id in conflict.losers:
                    found.setdefault(side.path, []).append(conflict)
    return found


def _partly_superseded_role(
    candidate: Candidate,
    role_reason: tuple[str, str],
    amended: Mapping[str, tuple[str, ...]],
    changed: Mapping[str, list[ConflictDraft]],
) -> tuple[str, str]:
    """A passage of an amended note: still current, unless it states a value its amending note changed
    (then it only explains; the amending note's value governs)."""
    role, reason = role_reason
    successors = ", ".join(amended[candidate.path])
    text = candidate.stored.passage.text
    for conflict in changed.get(candidate.path, []):
        old = next(side for side in conflict.sides if side.path == candidate.path)
        new = next(side for side in conflict.sides if side.passage_id in conflict.winners)
        if mentions(text, old.value):
            return EXPLANATION, (
                f"partly superseded by {successors}: states {conflict.proposition} = {old.value}, "
                f"which {new.path} changes to {new.value}"
            )
    return role, f"{reason}; partly superseded by {successors} (it governs where they differ)"


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
    eligible: Sequence[Candidate], roles: Mapping[str, tuple[str, str]], amended: Mapping[str, tuple[str, ...]]
) -> tuple[list[Admission], list[Exclusion]]:
    """Collapse near-duplicates into the most authoritative, current, newest copy."""
    kept: list[Admission] = []
    dropped: list[Exclusion] = []
    for candidate in eligible:
        role, reason = roles[candidate.id]
        twin = next((i for i, other in enumerate(kept) if _near_duplicates(candidate, other.candidate)), None)
        status = effective_status(candidate.facts, candidate.path in amended)
        successors = amended.get(candidate.path, ())
        if twin is None:
            kept.append(Admission(candidate, role, reason, status=status, partly_superseded_by=successors))
            continue
        other = kept[twin]
        if _preference(candidate, role) > _preference(other.candidate, other.role):
            dropped.append(Exclusion(other.candidate, DUPLICATE, f"near-duplicate of {candidate.id}"))
            kept[twin] = Admission(candidate, role, reason, (*other.duplicates, other.candidate.id), status, successors)
        else:
            dropped.append(Exclusion(candidate, DUPLICATE, f"near-duplicate of {other.candidate.id}"))
            kept[twin] = replace(other, duplicates=(*other.duplicates, candidate.id))
    return kept, dropped


@lru_cache(maxsize=8192)  # the same passages come back query after query
def _shingles_of(text: str) -> frozenset[Any]:
    lines = text.split("\n")
    body = lines[1:] if len(lines) > 1 and lines[0].lstrip().startswith("#") else lines
    words = _TOKEN.findall(" ".join(body).lower())
    if len(words) < 3:
        return frozenset(words)
    return frozenset(zip(words, words[1:], words[2:], strict=False))


@lru_cache(maxsize=8192)
def _numbers_of(text: str) -> tuple[str, ...]:
    return tuple(sorted(_NUMBER.findall(text)))


def _near_duplicates(a: Candidate, b: Candidate) -> bool:
    """Same wording (trigram Jaccard) and no disagreement: same numbers, no differing assertion.

    The numbers are compared first: they are cheaper than the trigrams, and most pairs differ there.
    """
    a_text, b_text = a.stored.passage.text, b.stored.passage.text
    if _numbers_of(a_text) != _numbers_of(b_text):
        return False
    a_shingles, b_shingles = _shingles_of(a_text), _shingles_of(b_text)
    if not a_shingles or not b_shingles:
        return False
    smaller, larger = sorted((len(a_shingles), len(b_shingles)))
    if smaller < NEAR_DUPLICATE_JACCARD * larger:  # Jaccard is at most smaller / larger
        return False
    shared_shingles = len(a_shingles & b_shingles)
    jaccard = shared_shingles / (len(a_shingles) + len(b_shingles) - shared_shingles)  # the union, not built
    if jaccard < NEAR_DUPLICATE_JACCARD:
        return False
    shared = set(a.facts.asserts) & set(b.facts.asserts)
    return all(value_key(a.facts.asserts[p]) == value_key(b.facts.asserts[p]) for p in shared)


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
    present = {admission.candidate.path for admission in kept}

    def answers(admission: Admission) -> float:
        candidate = admission.candidate
        return (judged.of(candidate.pulled_in_for or candidate.id) or 0.0) if judged.orders else 0.0

    best = max((answers(admission) for admission in kept), default=0.0)

    def key(item: tuple[int, Admission]) -> tuple[int, int, int, int, float, int]:
        position, admission = item
        # Verifying puts authority first among the passages that answer about as well as the best one:
        # a policy that barely answers does not push today's log, which answers, past the top.
        probability = answers(admission)
        weak = int(probability < AUTHORITY_TIER * best)
        authority = -admission.candidate.facts.authority_level if intent == "verify" else 0
        amended = int(bool(set(admission.partly_superseded_by) & present))  # its amending note answers first
        return (order.index(admission.role), weak, authority, amended, -probability, position)

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
    chosen: set[int] = set()  # by identity: the same admission objects (dataclass == is deep)
    always_ids = {id(a) for a in always}
    for admission in priority:
        if id(admission) not in chosen and (len(chosen) < top or id(admission) in always_ids):
            chosen.add(id(admission))
    return [admission for admission in ranked if id(admission) in chosen]


def _first_admission_per_note(ranked: Sequence[Admission]) -> list[Admission]:
    seen: set[str] = set()
    first = []
    for admission in ranked:
        if admission.candidate.path not in seen:
            seen.add(admission.candidate.path)
            first.append(admission)
    return first
