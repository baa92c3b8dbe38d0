"""Questions asking whether a thing exists: "Is there a lift up to Screen 3?", "Do you sell hot dogs?".

Such a question is answered by a passage that names the thing, yes or no ("There is no lift; Screen 3
is up two flights of stairs"). When no leading passage names it, the notes are silent on it, however
close they are otherwise (the screens, the bar): nothing answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set

from ..projections.lexical import analyze
from .answer_type import GENERIC_ATTRIBUTE, TYPE_WORDS, holds_stem

# the thing asked about runs to the first word that says where, for whom, when or why
_THING_END = (
    r"(?=\s+(?:for|to|at|in|on|when|if|up|near|that|which|we|you|from|with|by|after|before|during|and|or|"
    r"while|this|these|anywhere)\b|\s*[?,.!]|\s*$)"
)
_ASKS_THING = re.compile(
    r"^\s*(?:(?:is|are) there (?:a |an |any |some )?(?P<there>[\w' -]+?)"
    r"|(?:do|does) (?:you|we|they) (?:sell|serve|stock|offer|have) (?:a |an |any |some )?(?P<sell>[\w' -]+?)"
    r"|does (?:the |our )?[\w' -]+? have (?!to\b)(?:a |an |any |some )?(?P<have>[\w' -]+?))" + _THING_END,
    re.IGNORECASE,
)
_NOT_A_THING = frozenset(analyze("anyone anybody anything anywhere somewhere someone something still way enough"))
# words a limit or a price is often stated without ("no box over 10 kilograms", "texts are free"): not looked for
_STATED_OTHERWISE = GENERIC_ATTRIBUTE | TYPE_WORDS | frozenset(analyze("cap caps weight height width length age"))


def asked_thing(question: str) -> frozenset[str]:
    """The index terms of the thing ``question`` asks the existence of; empty when it asks no such thing."""
    found = _ASKS_THING.search(question)
    if found is None:
        return frozenset()
    thing = next(group for group in found.groups() if group)
    terms = frozenset(analyze(thing))
    return frozenset() if terms & _NOT_A_THING else terms - _STATED_OTHERWISE


def names_thing(held: Iterable[Set[str]], thing: Set[str]) -> bool:
    """Whether one of the passages (each the set of terms it holds) holds every term of ``thing``."""
    return any(all(holds_stem(words, term) for term in thing) for words in held)
