"""Notes that ask the question instead of answering it: "Who has the key for the parish hall?" in a chat.

A chat export, a meeting's open points or a FAQ draft often hold the very question a person asks,
word for word. Every lexical and embedding signal then says the passage answers; it only asks. The
judge vetoes an answer when the sentence of the leading passages that holds most of the question's
words is itself a question and no statement in them comes close. A FAQ asks too, and answers: a
question in a heading ("## Can I bring my dog?") or on a "Q:" line is not read as asking, nor is one
whose next sentence holds any of the question's words ("Can I bring my dog? Dogs on leads are welcome.").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..projections.lexical import term_set

ASKING_SHARE = 0.6  # the asking sentence holds at least this idf-weighted share of the question's words
STATEMENT_GAP = 0.2  # and every statement holds at least this much less
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_PARAGRAPH = re.compile(r"\n\s*\n")
_FAQ_QUESTION = re.compile(r"\s*(?:#|\W*(?:Q|Question)\s*\d*\s*[:.)])", re.IGNORECASE)  # a heading, or "Q:" / "**Q1.**"


def only_asks(question: str, idf: Mapping[str, float], texts: Sequence[str]) -> bool:
    """Whether ``texts`` ask ``question`` (its content terms weigh ``idf``) rather than answer it.

    Only a question that only asks can be echoed ("Did anyone find the pallet jack? Where is it now?"):
    a case told first ("A patron is borrowing a novel today ... What do I tell her?") is often told
    again in a chat that also asks, and answered elsewhere.
    """
    mass = sum(idf.values())
    sentences = [sentence for sentence in _SENTENCE.split(question.strip()) if sentence.strip()]
    if not mass or (len(sentences) > 1 and not all(sentence.rstrip().endswith("?") for sentence in sentences)):
        return False
    asking = stating = 0.0
    for text in texts:
        for paragraph in _PARAGRAPH.split(text):
            lines = [line for line in paragraph.splitlines() if line.strip() and not _FAQ_QUESTION.match(line)]
            sentences = [sentence for line in lines for sentence in _SENTENCE.split(line) if sentence.strip()]
            for at, sentence in enumerate(sentences):
                words = term_set(sentence)
                share = sum(weight for term, weight in idf.items() if term in words) / mass
                if not sentence.rstrip().endswith("?"):
                    stating = max(stating, share)
                elif not _answered_next(sentences[at + 1 : at + 2], idf):
                    asking = max(asking, share)
    return asking >= ASKING_SHARE and stating <= asking - STATEMENT_GAP


def _answered_next(following: Sequence[str], idf: Mapping[str, float]) -> bool:
    """Whether the sentence after a question is a statement holding one of the question's words (an answer)."""
    return any(not sentence.rstrip().endswith("?") and idf.keys() & term_set(sentence) for sentence in following)
