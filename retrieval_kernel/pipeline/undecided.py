"""Notes that say a thing is not decided: "No supplier for the new machines was chosen."

Meeting minutes and plans often name exactly what a question asks about and then say it is open
("No size, cost or opening date was agreed", "the start date is to be confirmed"). Every lexical and
embedding signal says such a passage answers; what it says is that there is no answer yet. This
module finds those sentences; the judge vetoes an answer whose best passage is one of them and
states nothing else the question could be asking for.
"""

from __future__ import annotations

import re
from collections.abc import Set

from ..projections.lexical import analyze
from .answer_type import TYPE_WORDS, AnswerType, holds_stem, stating_sentences

_DECIDED = (
    r"(?:agreed|decided|chosen|confirmed|fixed|settled|scheduled|approved|finali[sz]ed|announced|arranged|"
    r"picked|selected|set(?!\s+(?:up|off|out|in|aside)\b))"
)
UNDECIDED = re.compile(
    # "the date was not agreed"; not "has not confirmed that ..." (a claim) nor "never arranged privately" (a rule)
    rf"\bnot\s+(?:yet\s+)?(?:been\s+)?{_DECIDED}\b(?!\s+that\b)|"
    rf"\b(?:to be|yet to be|still to be)\s+{_DECIDED}\b|"  # "the start date is to be confirmed"
    # "the destination will be decided at the April meeting" (not "bookings will be confirmed by email": a rule)
    r"\bwill (?:only )?be (?:decided|agreed|chosen|settled|finali[sz]ed|announced|picked|selected|dated)\s+"
    r"(?:at|in|by|after|when|once|later|next)\b|"
    # "the dates will be set at the September meeting" (not "the alarm will be set at 22:00")
    r"\bwill (?:only )?be (?:set|fixed|confirmed)\s+(?:(?:at|in|by)\s+(?:the|a|our|its|next)\s+(?:[\w-]+\s+){0,2}"
    r"(?:meeting|review|board|committee)\b|later\b|once\b|when\b|after\b)|"
    rf"\bno\s+(?:[\w-]+,?\s+){{0,7}}(?:was|were|has been|have been|is|are)\s+(?:yet\s+)?{_DECIDED}\b|"
    r"\bleft open\s+(?:until|pending|for now|for later)\b|\bstill open\s*(?:[.;]|$)|"  # "the title is still open."
    r"\b(?:tbc|tbd|tba|undecided)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n\s*\n")
# "When does the new swim school start?": "new" says which one, not what; "A new slide was discussed but no
# supplier was chosen" is not about the swim school
_WHEN_WORDS = frozenset(analyze("new next"))


def undecided_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that say something is not decided yet."""
    return [sentence for sentence in _SENTENCE_END.split(text) if UNDECIDED.search(sentence)]


def says_undecided(text: str, question_terms: Set[str], asked: AnswerType | None) -> bool:
    """Whether ``text`` says what the question asks is not decided.

    A sentence saying so must hold one of the question's own words (not a word naming the asked type, such
    as "cost" or "date"), or, for a question asking a typed value ("how many rooms ..."), the passage
    must state no value of that type outside such sentences ("No size, cost or opening date was agreed").
    A value of the asked type stated beside every question word the open sentences hold is decided: "The
    posts go live on 1 September. The supplier of the posts is still to be chosen." answers when they go live.
    """
    open_sentences = undecided_sentences(text)
    if not open_sentences:
        return False
    own = set(question_terms) - TYPE_WORDS - _WHEN_WORDS
    stated = [] if asked is None else [s for s in stating_sentences(text, asked) if not UNDECIDED.search(s)]
    open_words = own & set().union(*map(analyze, open_sentences))
    if open_words and any(open_words <= set(analyze(sentence)) for sentence in stated):
        return False
    if any(holds_stem(words, term) for words in map(set, map(analyze, open_sentences)) for term in own):
        return True  # "no contractor was chosen" for "when the contract ends": the same stem
    return asked is not None and not stated
