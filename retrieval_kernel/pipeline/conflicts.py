"""Step 4 of the policy: conflicts as objects (resolved by supersession, then partial supersession, then
authority, else unresolved), and whether an unresolved conflict is what the question is about (only then
does it block)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..corpus.facts import NoteFacts
from ..corpus.status import PARTLY_SUPERSEDED
from ..projections.lexical import analyze
from .answer_type import (
    TYPE_WORDS,
    answers_asked,
    asked_kind,
    asked_type,
    asks_for_no_value,
    asks_or_names,
    counted_thing,
    counts,
    question_parts,
    stating_sentences,
    value_kind,
)
from .answerability import Judgement, content_terms
from .candidates import SUPERSEDED, SUPERSESSION, Candidate, ConflictDraft, Exclusion, Side, effective_status
from .validity import Standing, value_key

LEADING_NOTES = 3  # without a judgement, an unresolved conflict touching one of these notes blocks the answer


def find_conflicts(
    in_play: set[str], eligible: Sequence[Candidate], excluded: Sequence[Exclusion], standing: Standing
) -> list[ConflictDraft]:
    """Conflicts on the propositions of the notes in play, with partners from the whole pool.

    A note asserts once, whichever section is cited; its side is shown by its best-ranked
    passage that states the value (else its best-ranked passage).
    """
    superseded = [e.candidate for e in excluded if e.code == SUPERSEDED]
    old_paths = {c.path for c in superseded}
    passages_of = by_note([*eligible, *superseded])
    pool = [passages[0] for passages in passages_of.values()]
    propositions = sorted({p for c in pool if c.path in in_play for p in c.facts.asserts})
    conflicts: list[ConflictDraft] = []
    linked: set[tuple[str, str]] = set()
    for proposition in propositions:
        sides = [
            _stating(passages_of[c.path], c.facts.asserts[proposition]) for c in pool if proposition in c.facts.asserts
        ]
        if len({value_key(c.facts.asserts[proposition]) for c in sides}) < 2:
            continue
        for old in (c for c in sides if c.path in old_paths):
            for new in (c for c in sides if c.path in {e.new for e in standing.successors(old.path)}):
                if value_key(old.facts.asserts[proposition]) != value_key(new.facts.asserts[proposition]):
                    conflicts.append(_draft(proposition, [old, new], "superseded", [new], [old]))
                    linked.add((old.path, new.path))
        amended = _amended_sides(proposition, sides, standing, conflicts, linked)
        current = [c for c in sides if c.path not in old_paths and c.path not in amended]
        for group in _same_decision_scope(current):
            if len({value_key(c.facts.asserts[proposition]) for c in group}) >= 2:
                conflicts.append(_by_authority(proposition, group))
    for old in pool:
        full = old.path in old_paths
        for edge in standing.successors(old.path) if full else standing.amenders(old.path):
            successor = next((c for c in pool if c.path == edge.new), None)
            if successor is None or (old.path, successor.path) in linked:
                continue
            if {old.path, successor.path} & in_play:
                kind = "superseded" if full else PARTLY_SUPERSEDED
                conflicts.append(_draft(SUPERSESSION, [old, successor], kind, [successor], [old]))
    return conflicts


def _amended_sides(
    proposition: str,
    sides: Sequence[Candidate],
    standing: Standing,
    conflicts: list[ConflictDraft],
    linked: set[tuple[str, str]],
) -> set[str]:
    """Partial supersession on one proposition: where an amending note states another value than the
    note it amends, the amending note governs (a ``partly_superseded`` conflict). Returns the paths of
    the amended sides settled so (they take no part in the authority comparison)."""
    settled: set[str] = set()
    for old in sides:
        amenders = {edge.new for edge in standing.amenders(old.path)}
        for new in (c for c in sides if c.path in amenders):
            if value_key(old.facts.asserts[proposition]) != value_key(new.facts.asserts[proposition]):
                conflicts.append(_draft(proposition, [old, new], PARTLY_SUPERSEDED, [new], [old]))
                linked.add((old.path, new.path))
                settled.add(old.path)
    return settled


def by_note(candidates: Sequence[Candidate]) -> dict[str, list[Candidate]]:
    """Each note's candidate passages, best-ranked first, notes in order of their best passage."""
    grouped: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        grouped.setdefault(candidate.path, []).append(candidate)
    return grouped


def _stating(passages: Sequence[Candidate], value: Any) -> Candidate:
    """The first passage whose text holds ``value`` as a whole word or number, else the first."""
    return next((c for c in passages if mentions(c.stored.passage.text, value)), passages[0])


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


def mark_blocking(
    conflicts: list[ConflictDraft], eligible: Sequence[Candidate], judged: Judgement, query: str
) -> list[ConflictDraft]:
    """An unresolved conflict blocks the answer only when the question is about its proposition."""
    if not judged.judged:  # no judgement: a conflict on one of the leading notes blocks (the old rule)
        leading = set(list(by_note(eligible))[:LEADING_NOTES])
        return [
            replace(c, blocking=c.kind == "unresolved" and any(side.path in leading for side in c.sides))
            for c in conflicts
        ]
    admissible = {c.id: c for c in eligible}
    if judged.vetoed:  # a confident match that lacks the value or the week asked for: not a tie's question
        return [replace(c, blocking=False) for c in conflicts]
    about = _about if judged.answerable else _contested_lead
    return [replace(c, blocking=c.kind == "unresolved" and about(c, judged, query, admissible)) for c in conflicts]


UNIT_WORDS = frozenset(
    content_terms(
        "hours hour days day minutes minute weeks week months month years year per pct percent count max "
        "min number amount limit value rate total interval"
    )
)
CONTESTED_LEAD = 3  # an unanswered question is about a conflict whose stating passages are all among this many
FOREIGN = 0.5  # ... unless this much of it (idf-weighted) is words no note holds: then it asks about something else


def _about(conflict: ConflictDraft, judged: Judgement, query: str, admissible: Mapping[str, Candidate]) -> bool:
    """Whether the question asks about the contested proposition, not only about a note that states it.

    A side's note must be among the two admissible notes that answer best (when another note answers
    best, a passage stating a side's value must answer second: "how quickly must the warden reach a
    noise complaint at night" is the noise procedure's, not the overnight guests' tie), and the side
    note's best answer must not be a passage stating another of its facts instead; a question asking for a kind
    of value the contested values cannot be (a time of day, when they are counts) is about something
    else. Then the question is about the
    conflict when it names what the proposition asserts (the last word of its key that is not a
    unit: ``window`` in ``refund_window_days``, ``retries`` in ``order_events_max_retries``) and
    either its best answer states a side's value, or it names the whole key with its unit ("refund
    window and shipping days"), or it asks for (or names) a value of the contested kind ("in which
    week are pupils assessed" names the pupils of a contested class size, answered by the
    assessment section), or
    when the best answer is a side's and the question names a side's value, or when the two best
    answering passages are the two passages that state the values. Before those last two, a question
    that asks for no typed value and states no number (but a name's) is about something else when a sentence
    of a tied passage that states no value holds more of its own words than any sentence that states
    one ("which shelf of Fridge 3 do leftovers go on", beside how many days they keep).
    """
    answering = [pid for pid in judged.leading() if pid in admissible]
    notes = {_note_of(side.passage_id) for side in conflict.sides}
    leading_notes = list(dict.fromkeys(_note_of(pid) for pid in answering))[:2]
    if not notes & set(leading_notes):
        return False
    if _note_of(answering[0]) not in notes:
        if not _stating_passages(conflict, admissible) & set(answering[:2]):
            return False  # the best answer is another note's, and no passage stating a value is close behind it
        if _counts_asked(query, admissible[answering[0]]):
            return False  # "how many night shifts a week ...": the best answer puts a number on them itself
        if _held_elsewhere(query, conflict, admissible, answering[0]):
            return False  # "how often are the first aid kits checked", beside the buoyancy aids' contested weeks
    best_side = admissible[next(pid for pid in answering if _note_of(pid) in notes)]
    if _counts_another_thing(query, conflict, best_side) and best_side.id in _stating_passages(conflict, admissible):
        return False  # "how many volunteers go on a log delivery" beside the contested free-delivery miles
    if _states_other_fact(best_side, conflict.proposition):
        return False  # "what does a day in the long stay cost" asks the note's rate, not its contested stay
    asked = asked_kind(query)
    contested = value_kind(conflict.proposition, [s.value for s in conflict.sides])
    if asked is not None and not answers_asked(asked, contested):
        return False  # "at what times are items fetched" does not ask how many items may be out at once
    if asks_for_no_value(query, contested):
        return False  # "who inspects the flying system" does not ask how many months between inspections
    tied = _tied_sentences(conflict, admissible)  # read once for both side-topic checks below
    if _answered_beside(query, conflict, best_side, tied):
        return False  # "when is the signed invoice sheet back" is answered beside the contested loan period
    key = [term for term in _key_terms(conflict.proposition) if term not in UNIT_WORDS]
    query_terms = set(content_terms(query))
    best_states_side = answering[0] in {side.passage_id for side in conflict.sides}
    names_whole_key = _names_whole_key(query, conflict.proposition)
    if key and key[-1] in query_terms and (best_states_side or names_whole_key or asks_or_names(query, contested)):
        return True
    texts = [candidate.stored.passage.text for candidate in admissible.values()]
    untyped = asked is None and not _names_a_number(query, texts)
    if untyped and _asked_beside_the_values(query, conflict, tied):
        return False  # "which shelf of Fridge 3 do leftovers go on": another sentence of a tied passage
    if leading_notes[0] in notes and any(names_value(query, side.value, texts) for side in conflict.sides):
        return True
    stating = _stating_passages(conflict, admissible)
    return len(stating) == len(conflict.sides) and set(answering[:2]) == stating  # the two best answers disagree


def _answered_beside(query: str, conflict: ConflictDraft, side: Candidate, tied: Sequence[tuple[str, bool]]) -> bool:
    """Whether each part of ``query`` is answered in a sentence of the tied ``side`` passage that states none
    of the tie's values: the one holding most of the question's own words (the key's and the type's left out),
    more of them than any sentence of the tied passages that states a value.

    "How soon must a borrower return the signed invoice sheet?" is answered by "... returns the signed
    invoice sheet within 2 weeks", beside "Loans last 12 months" in the same section.
    """
    values = [s.value for s in conflict.sides]
    for part in question_parts(query):
        kind = asked_type(part)
        own = _own_words(part, conflict)
        if kind is None or not own:
            return False
        beside = [
            len(own & _words(sentence, values, query))
            for sentence in stating_sentences(side.stored.passage.text, kind)
            if not any(_states(sentence, value) for value in values)
        ]
        if max(beside, default=0) <= _held_by_stating(own, query, values, tied):
            return False
    return True


def _asked_beside_the_values(query: str, conflict: ConflictDraft, tied: Sequence[tuple[str, bool]]) -> bool:
    """Whether the question's own words (the key's and the type's left out) are held most by a sentence of a
    tied passage that states none of the tie's values, more than by any sentence that states one.

    "What do I clean the hoof shears with between goats?" is answered by "The foot shears ... are cleaned
    with Brightstep after each goat", beside "Goats have their feet trimmed every 8 weeks".
    """
    own = _own_words(query, conflict)
    values = [side.value for side in conflict.sides]
    beside = [len(own & _words(s, values, query)) for s, states in tied if not states]
    return bool(own) and max(beside, default=0) > _held_by_stating(own, query, values, tied)


def _held_elsewhere(query: str, conflict: ConflictDraft, admissible: Mapping[str, Candidate], best: str) -> bool:
    """Whether a sentence of ``best`` (another note's passage, answering best) that states a value of the kind
    asked, if one is, holds more of the question's own words (the key's and the type's left out) than any
    sentence of the tied passages does. Not for a question in parts, one stating a case with a number, or one
    naming the whole contested key: each may ask the tie in passing ("98 days ago: long enough?")."""
    texts = [candidate.stored.passage.text for candidate in admissible.values()]
    if len(question_parts(query)) > 1 or _names_a_number(query, texts):
        return False
    if _names_whole_key(query, conflict.proposition):
        return False  # "refund window and shipping days" asks the tie itself
    kind = asked_type(query)
    text = admissible[best].stored.passage.text
    stating = _SENTENCE.split(text) if kind is None else stating_sentences(text, kind)
    own = _own_words(query, conflict)
    values = [side.value for side in conflict.sides]

    def held(sentences: Sequence[str]) -> int:
        return max((len(own & _words(s, values, query)) for s in sentences), default=0)

    tied = [sentence for sentence, _ in _tied_sentences(conflict, admissible)]
    return held(stating) > held(tied)


def _own_words(question: str, conflict: ConflictDraft) -> set[str]:
    """The question's words that are neither the contested key's nor a type word ("how long", "cost")."""
    return set(content_terms(question)) - TYPE_WORDS - set(_key_terms(conflict.proposition))


def _held_by_stating(own: set[str], query: str, values: Sequence[Any], tied: Sequence[tuple[str, bool]]) -> int:
    """The most of ``own`` that one of the ``tied`` sentences stating a value holds (:func:`_tied_sentences`)."""
    return max((len(own & _words(s, values, query)) for s, states in tied if states), default=0)


def _tied_sentences(conflict: ConflictDraft, admissible: Mapping[str, Candidate]) -> list[tuple[str, bool]]:
    """Each sentence of the tied passages that state their value, and whether it states one of the tie's values."""
    values = [side.value for side in conflict.sides]
    return [
        (sentence, any(_states(sentence, value) for value in values))
        for pid in sorted(_stating_passages(conflict, admissible))
        for sentence in _SENTENCE.split(admissible[pid].stored.passage.text)
    ]


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n\s*\n")

_NUMBER_NAMES = tuple(
    re.findall(
        r"\S+",
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty",
    )
)


def _states(text: str, value: Any) -> bool:
    """Whether ``text`` holds ``value``, a small whole number also as a word ("two consecutive rounds"), and
    not only as the number of a name ("Fridge 3", "Locker 6": a capitalised word before it, no unit after)."""
    wanted = str(value).strip()
    if wanted and any(not _names_by_number(text, found) for found in _whole(wanted).finditer(text)):
        return True
    return wanted.isdigit() and int(wanted) < len(_NUMBER_NAMES) and mentions(text, _NUMBER_NAMES[int(wanted)])


def _words(sentence: str, values: Sequence[Any], question: str) -> set[str]:
    """The analysed words of ``sentence`` without the names numbered like a value ("Fridge 3" when 3 is one)
    that ``question`` does not name itself: a question about "the fridge" does not ask about that sentence's
    other facts for naming it, while "can cakes go in Fridge 4" asks about the sentence naming Fridge 4."""
    for value in {str(value).strip() for value in values}:
        if value:
            names = [m for m in _whole(value).finditer(sentence) if _names_by_number(sentence, m)]
            for found in reversed(names):
                word = re.search(r"([A-Za-z][\w'-]*)\s+$", sentence[: found.start()])
                if word and re.search(rf"(?<!\w){re.escape(word.group(1))}\s+{re.escape(value)}(?!\w)", question, re.I):
                    continue
                sentence = sentence[: word.start() if word else found.start()] + sentence[found.end() :]
    return set(analyze(sentence))


def _names_a_number(query: str, texts: Sequence[str]) -> bool:
    """Whether ``query`` holds a number that is not the number of a name ("17 days ago", "is 17 in June",
    not "Fridge 3"): a question stating a case may ask about a threshold."""
    return any(names_value(query, number, texts) for number in set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?!\w)", query)))


def _names_by_number(text: str, found: re.Match[str]) -> bool:
    """Whether the number ``found`` in ``text`` is part of a name: after a capitalised word, before no unit."""
    before = re.search(r"([A-Za-z][\w'-]*)\s+$", text[: found.start()])
    after = re.match(r"\s*([A-Za-z]+)", text[found.end() :])
    if before is None or not before.group(1)[0].isupper() or not found.group().isdigit():
        return False
    return after is None or not set(analyze(after.group(1))) & UNIT_WORDS


def _counts_asked(query: str, candidate: Candidate) -> bool:
    """Whether ``candidate`` puts a number on what a "how many" question counts."""
    thing = counted_thing(query)
    return thing is not None and counts(candidate.stored.passage.text, thing)


def _counts_another_thing(query: str, conflict: ConflictDraft, side: Candidate) -> bool:
    """Whether a "how many" question counts a thing the contested key does not name, and a sentence of
    ``side`` (a passage stating a tied value) puts a number on that thing: by a number that is not one of
    the tie's values, or by one that is while the values have a unit ("up to 10 bags" beside "within 10 miles")."""
    thing = counted_thing(query)
    if thing is None or thing in _key_terms(conflict.proposition):
        return False
    values = [tied.value for tied in conflict.sides]
    measured = value_kind(conflict.proposition, values) in _UNIT_KINDS
    return any(
        counts(sentence, thing) and (measured or not any(_states(sentence, value) for value in values))
        for sentence in _SENTENCE.split(side.stored.passage.text)
    )


_UNIT_KINDS = frozenset({"duration", "hours", "measurement", "money", "percent"})  # values a count of things is not


def _names_whole_key(query: str, proposition: str) -> bool:
    """Whether ``query`` names every term of the fact's key, unit and all ("refund window and shipping days")."""
    return set(_key_terms(proposition)) <= set(content_terms(query))


def _key_terms(proposition: str) -> list[str]:
    """The content terms of a fact's key (``shipping_days``: ship, day)."""
    return content_terms(proposition.replace("_", " ").replace(".", " "))


def _contested_lead(
    conflict: ConflictDraft, judged: Judgement, query: str, admissible: Mapping[str, Candidate]
) -> bool:
    """For a question nothing answers confidently: whether the passages stating the conflict's values are
    all among the few most probable answers (two notes that disagree are what the question finds first),
    and the question is mostly in the notes' own words (a question about CCTV footage is not about how
    long a car may stay, however close the two sound)."""
    if judged.unknown >= FOREIGN:
        return False
    stating = _stating_passages(conflict, admissible)
    if len(stating) != len(conflict.sides):
        return False
    ranked = sorted(judged.probabilities, key=lambda pid: (-judged.probabilities[pid], pid))  # excluded ones too
    return stating <= set(ranked[:CONTESTED_LEAD])


def _stating_passages(conflict: ConflictDraft, admissible: Mapping[str, Candidate]) -> set[str]:
    """The sides' passages that state their value in their text (a side shown by a fallback passage does not)."""
    return {
        side.passage_id
        for side in conflict.sides
        if side.passage_id in admissible and mentions(admissible[side.passage_id].stored.passage.text, side.value)
    }


def _states_other_fact(candidate: Candidate, proposition: str) -> bool:
    """Whether the passage states another fact its note asserts, and not ``proposition``'s value."""
    asserts = candidate.facts.asserts
    text = candidate.stored.passage.text
    if proposition in asserts and mentions(text, asserts[proposition]):
        return False
    return any(mentions(text, value) for key, value in asserts.items() if key != proposition)


def _note_of(passage_id: str) -> str:
    return passage_id.split("#", 1)[0]


def names_value(query: str, value: Any, texts: Sequence[str]) -> bool:
    """Whether ``query`` holds ``value`` as a value, not as the number in a name: "Kiln 3" (or "kiln 3")
    names a kiln when the notes (``texts``) write "Kiln 3" inside a sentence, so it is no count of 3."""
    wanted = str(value).strip()
    if not wanted:
        return False
    for found in _whole(wanted).finditer(query):
        before = re.search(r"([A-Za-z][\w'-]*)\s+$", query[: found.start()])
        if before is None or not _names_thing(before.group(1), wanted, texts):
            return True
    return False


def _names_thing(word: str, number: str, texts: Sequence[str]) -> bool:
    """Whether the notes write ``word number`` as a name: capitalised, inside a sentence or before a comma or
    full stop ("Plot 14, next to the gate" names a plot where "Every 14 days" states a value)."""
    name = re.compile(rf"(?<!\w){re.escape(word[:1].upper() + word[1:].lower())} {re.escape(number)}(?!\w)")
    for text in texts:
        for found in name.finditer(text):
            inside = re.search(r"[a-z0-9,;:(] $", text[: found.start()]) is not None
            if inside or re.match(r"[,;:.)]|$", text[found.end() :]):
                return True
    return False


def mentions(text: str, value: Any) -> bool:
    """Whether ``text`` holds ``value`` as a whole word or number (case ignored)."""
    wanted = str(value).strip()
    return bool(wanted) and _whole(wanted).search(text) is not None


def _whole(wanted: str) -> re.Pattern[str]:
    """``wanted`` as a whole word or number, case ignored (not inside "1.5" or "A3")."""
    return re.compile(rf"(?<![\w.]){re.escape(wanted)}(?![\w])", re.IGNORECASE)


def _by_authority(proposition: str, sides: Sequence[Candidate]) -> ConflictDraft:
    top_level = max(c.facts.authority_level for c in sides)
    at_top = [c for c in sides if c.facts.authority_level == top_level]
    top_values = {value_key(c.facts.asserts[proposition]) for c in at_top}
    if top_level > 0 and len(top_values) == 1:
        # Lower-authority sides that agree with the winner corroborate it; only disagreeing ones lose.
        losers = [c for c in sides if value_key(c.facts.asserts[proposition]) not in top_values]
        return _draft(proposition, sides, "authority", at_top, losers)
    return _draft(proposition, sides, "unresolved", [], [])


def _draft(
    proposition: str, sides: Sequence[Candidate], kind: str, winners: Sequence[Candidate], losers: Sequence[Candidate]
) -> ConflictDraft:
    def status(side: Candidate) -> str | None:  # as of the clock, like the evidence item's status
        if side in losers and kind in (SUPERSEDED, PARTLY_SUPERSEDED):
            return kind
        return effective_status(side.facts)

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
