"""Answerability: does anything the lanes found answer this question, and which passages do?

Each judged candidate gets a few signals, each on a scale that transfers between note
collections (never a raw BM25 score):

- ``coverage``: the idf-weighted share of the question's content words (stop words and
  question words never count) found in the passage, its heading path and its note's name;
- ``rare_miss``: the idf of the most specific content word the passage lacks, over the
  question's most specific word;
- ``cosine`` and ``margin``: the dense lane's cosine, and how far it stands above the
  question's background (the median cosine of the dense lane's whole candidate pool);
- ``agreement``: every one of the lexical and dense lanes that ran proposed it;
- ``intro``: it is a note's opening section while the note has sections of its own (an
  introduction summarises every section, so it resembles many questions it does not answer);
- ``unknown`` (the question's): the idf-weighted share of its words that no passage holds
  (a near-miss question names something the notes never mention).

Two logistic models decide. The *question* model reads the best of these over the judged
candidates and gives the probability that anything answers; below its threshold the packet
abstains. The *passage* model gives each candidate's probability of answering; a candidate
below its floor is not admitted beside the ones that answer. Weights and thresholds are
fitted on calibration data only (never a holdout) by ``scripts/calibrate_answerability.py``
and kept in ``answerability.json`` beside this module; a workspace without the dense lane
uses the lexical-only pair.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..projections.lexical import LexicalProjection, analyze, term_set
from ..store.records import StoredPassage
from .answer_type import (
    AnswerType,
    PassageText,
    asked_type,
    names_whole_question,
    question_parts,
    states_value,
    unstated,
    value_sentences,
)
from .candidates import observed_after
from .echo import only_asks
from .existence import asked_thing, names_thing
from .lanes import LaneRun
from .periods import asked_day, asked_week, asks_next, gives_coming_date, names_day, names_week
from .undecided import says_undecided

if TYPE_CHECKING:
    from .candidates import Candidate

MODEL_FILE = Path(__file__).with_name("answerability.json")
JUDGED = 10  # leading candidates read by the question model
POOL_JUDGED = 50  # candidates given a passage probability (the lanes' whole pool)
TYPED_LEADING = 3  # leading candidates of which one must state the value a question asks for (a time, a price)
OUT_OF_REACH = 0.5  # usable evidence answering under half as well as evidence the caller may not use: abstain
# A typed question whose closest value-stating sentence (with its heading path) is less similar than this
# to the question is answered by none of them: "what does it cost to park a coach" against car prices.
# Chosen on the development suites (docs/answerability.md, the seventh attempt), never on a holdout.
STATED_SIMILARITY = 0.38
VALUE_SENTENCES = 12  # at most this many value-stating sentences are embedded per question
PASSAGE_FEATURES = ("coverage", "rare_miss", "cosine", "margin", "agreement", "intro")
QUESTION_FEATURES = (
    "best_coverage",
    "top_coverage",
    "best_cosine",
    "best_margin",
    "least_miss",
    "top_agreement",
    "unknown",
)
LEXICAL_ONLY = frozenset({"coverage", "rare_miss", "intro", "best_coverage", "top_coverage", "least_miss", "unknown"})

# "last week", "this year", "in week 14": when a value is asked of, which a note states as its own week or year
# (a return's note name holds "14": it must not count as the value's subject)
_ASKED_PERIOD = re.compile(
    r"\b(?:last|this|next|previous)\s+(?:week|month|year|weekend|night|season|term|quarter|summer|winter)\b|"
    r"\b(?:week|wk)\s*\d{1,2}\b",
    re.IGNORECASE,
)

# Words that ask rather than say what about (the analyzer already drops English stop words).
QUESTION_WORDS = frozenset(
    analyze(
        "how what which why when where who whom whose whether should would could can shall must might may "
        "do does did done is are was were be been have has had need needs needed want wants know tell "
        "please anyone anybody someone somebody anything something our ours my mine me i us we you your "
        "they them their there here also just now currently really actually ok okay still ever yet "
        "allowed supposed able many much long often after before during within without about above below "
        "between into onto upon across again further once other another any each every few more most less "
        "least same such very too than then else it its itself his her hers him"
    )
)


def content_terms(text: str) -> list[str]:
    """The analysed terms of ``text`` that say what it is about (question words dropped)."""
    return [term for term in analyze(text) if term not in QUESTION_WORDS]


@dataclass(frozen=True)
class Signals:
    """What one candidate shows about answering the question (``unknown`` is the question's own)."""

    coverage: float
    rare_miss: float
    cosine: float
    margin: float
    agreement: float
    intro: float = 0.0
    unknown: float = 0.0


def question_features(ranked: Sequence[Signals]) -> dict[str, float]:
    """The question model's inputs: the best of each signal over the judged candidates (top = first ranked)."""
    if not ranked:
        return dict.fromkeys(QUESTION_FEATURES, 0.0) | {"least_miss": 1.0}
    return {
        "best_coverage": max(s.coverage for s in ranked),
        "top_coverage": ranked[0].coverage,
        "best_cosine": max(s.cosine for s in ranked),
        "best_margin": max(s.margin for s in ranked),
        "least_miss": min(s.rare_miss for s in ranked),
        "top_agreement": ranked[0].agreement,
        "unknown": ranked[0].unknown,
    }


@dataclass(frozen=True)
class Model:
    """A logistic model: weights by feature name, bias, its decision threshold, and (passage model) the
    stricter probability at which a passage the caller may not use counts as answering."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float
    reach: float = 0.0

    def probability(self, values: Mapping[str, float]) -> float:
        z = self.bias + sum(w * float(values[name]) for w, name in zip(self.weights, self.features, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Model:
        threshold = float(data["threshold"])
        reach = float(data.get("reach", threshold))
        return cls(tuple(data["features"]), tuple(data["weights"]), float(data["bias"]), threshold, reach)


@dataclass(frozen=True)
class ModelPair:
    """The question model and the passage model, for one set of lanes."""

    question: Model
    passage: Model


@dataclass(frozen=True)
class Models:
    """The pair fitted with the dense lane, and the pair for lexical-only workspaces."""

    hybrid: ModelPair
    lexical: ModelPair

    def for_runs(self, runs: Mapping[str, LaneRun]) -> ModelPair:
        dense = runs.get("dense")
        return self.hybrid if dense is not None and dense.report.status != "unavailable" else self.lexical


@lru_cache(maxsize=4)
def load_models(path: Path = MODEL_FILE) -> Models:
    data = json.loads(path.read_text(encoding="utf-8"))
    pairs = {
        name: ModelPair(Model.from_dict(data[name]["question"]), Model.from_dict(data[name]["passage"]))
        for name in ("hybrid", "lexical")
    }
    return Models(pairs["hybrid"], pairs["lexical"])


@dataclass(frozen=True)
class Judgement:
    """One question's answerability: how confident, and each candidate's probability of answering."""

    confidence: float  # probability that something found answers the question
    threshold: float
    probabilities: Mapping[str, float]  # passage id -> probability that this passage answers
    floor: float  # a passage below this is not admitted
    hidden_best: float = 0.0  # the best probability among passages outside the caller's scopes (never shown)
    orders: bool = False  # whether the passage probabilities are good enough to order evidence by (with dense)
    unknown: float = 0.0  # the idf-weighted share of the question's words that no visible passage holds
    reach: float = 0.0  # a passage the caller may not use answers from this probability (at least ``floor``)
    unstated: AnswerType | None = None  # the kind of value asked for that no leading passage states
    stated_similarity: float | None = None  # the closest value-stating sentence's cosine to the question
    unmatched_week: int | None = None  # the numbered week asked about that no leading passage is about
    unmatched_day: tuple[int, int] | None = None  # the (month, day) asked about that no leading passage names
    unscheduled: bool = False  # it asks when the next one is, and no leading passage gives a coming date
    undecided: bool = False  # the passage answering best says what is asked is not decided yet
    echoed: bool = False  # the leading passages ask the question (a chat, an open point) and none answers it
    unnamed: bool = False  # it asks whether a thing exists ("is there a lift?") and no leading passage names it
    # passages that state no value of the type asked for (read when nothing visible answers): not an answer
    # out of reach either ("a lifeguard times each group" in an expired note does not say what they are paid)
    unstating: frozenset[str] = frozenset()

    @classmethod
    def unjudged(cls) -> Judgement:
        """No judgement: everything counts as answering (the policy then decides alone)."""
        return cls(1.0, 0.0, {}, 0.0)

    @property
    def answerable(self) -> bool:
        return self.confidence >= self.threshold and not self._lacking

    @property
    def overruled(self) -> bool:
        """Whether a confident judgement was overruled: by what the leading passages lack (a value, a week,
        a coming date), by the best one saying the thing is not decided yet, or by their only asking it."""
        return self.confidence >= self.threshold and self._lacking

    @property
    def vetoed(self) -> bool:
        """Whether it was overruled by a lack. A passage saying the thing is not decided yet is not a lack:
        two notes disagreeing on it may still be what the question asks about."""
        return self.overruled and not self.undecided

    @property
    def _lacking(self) -> bool:
        return (
            self.unstated is not None
            or self.unmatched_week is not None
            or self.unmatched_day is not None
            or self.unscheduled
            or self.undecided
            or self.echoed
            or self.unnamed
        )

    def why_not(self) -> str:
        """Why nothing found answers (for exclusions and abstentions)."""
        if self.unmatched_week is not None and self.confidence >= self.threshold:
            return (
                f"the question asks about week {self.unmatched_week} and none of the leading passages is about "
                f"that week (confidence {self.confidence:.2f} otherwise)"
            )
        if self.unmatched_day is not None and self.confidence >= self.threshold:
            month, day = self.unmatched_day
            return (
                f"the question asks about {day} {dt.date(2000, month, day):%B} and none of the leading passages "
                f"is about that day (confidence {self.confidence:.2f} otherwise)"
            )
        if self.unscheduled and self.confidence >= self.threshold:
            return (
                "the question asks when the next one is and none of the leading passages gives a coming date "
                f"(confidence {self.confidence:.2f} otherwise)"
            )
        if self.undecided and self.confidence >= self.threshold:
            return (
                "the passage answering best says what is asked is not decided yet "
                f"(confidence {self.confidence:.2f} otherwise)"
            )
        if self.echoed and self.confidence >= self.threshold:
            return (
                "the leading passages ask this question and none answers it "
                f"(confidence {self.confidence:.2f} otherwise)"
            )
        if self.unnamed and self.confidence >= self.threshold:
            return (
                "the question asks whether there is something no leading passage names "
                f"(confidence {self.confidence:.2f} otherwise)"
            )
        if self.unstated is not None and self.confidence >= self.threshold:
            closest = (
                ""
                if self.stated_similarity is None
                else f", the closest statement {self.stated_similarity:.2f} similar"
            )
            return (
                f"the question asks for {self.unstated.label} and none of the leading passages states one "
                f"about it (confidence {self.confidence:.2f} otherwise{closest})"
            )
        return f"nothing found answers the question (confidence {self.confidence:.2f})"

    @property
    def judged(self) -> bool:
        return bool(self.probabilities)

    def of(self, passage_id: str) -> float | None:
        return self.probabilities.get(passage_id)

    @property
    def out_of_scope(self) -> bool:
        """Whether a passage outside the caller's scopes would answer far better than anything visible."""
        return self.out_of_reach(max(self.probabilities.values(), default=0.0), self.hidden_best)

    def reach_of(self, passage_id: str) -> float:
        """How likely a passage the caller may not use answers: 0 when it states no value of the asked type."""
        return 0.0 if passage_id in self.unstating else self.probabilities.get(passage_id) or 0.0

    def out_of_reach(self, usable: float, barred: float) -> bool:
        """Whether evidence the caller may not use (``barred``) answers and what it may use answers under
        ``OUT_OF_REACH`` of it: a stand-in is not an answer."""
        return barred >= max(self.floor, self.reach) and usable < OUT_OF_REACH * barred

    def answers(self, candidate: Candidate) -> bool:
        """Whether ``candidate`` (or the candidate a pulled-in successor stands for) answers the question."""
        if not self.judged:
            return True
        if not self.answerable:
            return False
        probability = self.probabilities.get(candidate.pulled_in_for or candidate.id)
        return probability is not None and probability >= self.floor

    def leading(self) -> list[str]:
        """Answering passage ids, most probable first (ties by id)."""
        ranked = sorted(self.probabilities.items(), key=lambda item: (-item[1], item[0]))
        return [pid for pid, p in ranked if p >= self.floor] if self.answerable else []


@dataclass(frozen=True)
class Unseen:
    """What the passages outside the caller's scopes add to the index's statistics (taken back out)."""

    passages: int = 0
    terms: Mapping[str, int] = field(default_factory=dict)


class Judge:
    """Signals and probabilities for the candidates of one question."""

    def __init__(
        self,
        lexical: LexicalProjection,
        outlines: Callable[[Sequence[str]], Mapping[str, Sequence[tuple[str, ...]]]],
        models: Models | None = None,
        similarity: Callable[[str, Sequence[str]], Sequence[float]] | None = None,
    ) -> None:
        self.lexical = lexical
        self.outlines = outlines  # the heading paths of the passages of each note at the paths given
        self._models = models
        self.similarity = similarity  # cosine of the question to each text (the dense lane's model), if any

    @property
    def models(self) -> Models:
        if self._models is None:
            self._models = load_models()
        return self._models

    def judge(
        self,
        query: str,
        ranked: Sequence[Candidate],
        runs: Mapping[str, LaneRun],
        unseen: Unseen | None = None,
        as_of: dt.date | None = None,
    ) -> Judgement:
        """How likely ``ranked`` answer ``query``; ``as_of`` (the packet's clock) tells coming dates from past ones."""
        pair = self.models.for_runs(runs)
        signals = self.signals(query, ranked[:POOL_JUDGED], runs, unseen)
        named = {pid for pid, _ in runs["identity"].ranking} if "identity" in runs else set()
        probabilities = {
            pid: 1.0 if pid in named else round(pair.passage.probability(vars(s)), 4) for pid, s in signals.items()
        }
        leading = [signals[c.id] for c in ranked[:JUDGED]]
        confidence = 1.0 if named else round(pair.question.probability(question_features(leading)), 4)
        # Without the dense lane the passage model sees words only: it decides admission, but ordering
        # by it put the wrong note first on 2 of the 20 workshop questions that fused rank gets right.
        ordered = pair is self.models.hybrid
        unknown = leading[0].unknown if leading else 0.0
        on_file = ranked if as_of is None else [c for c in ranked if not observed_after(c, as_of)]
        reading = stating_candidates(on_file, named)  # a value written after the clock was not on file then
        week, day = asked_week(query), asked_day(query, as_of)
        about = _about_period(reading, week, day)
        missing, closest = self.unstated_value(query, reading, unseen, dense=pair is self.models.hybrid)
        if missing is None and about and len(about) < len(reading):
            # a value asked of one week or day is read from the passages about it (week 24's takings do
            # not answer "what did we take in week 23?"); with none about it, that lack is the reason
            missing, closest = self.unstated_value(query, about, unseen, dense=pair is self.models.hybrid)
        if week is not None and any(names_week(_identity_texts(c.stored), week) for c in reading):
            week = None
        if day is not None and any(names_day(_identity_texts(c.stored), day) for c in reading):
            day = None
        unscheduled = as_of is not None and self.unscheduled(query, reading, as_of, unseen)
        best = max(ranked[:TYPED_LEADING], key=lambda c: probabilities.get(c.id, 0.0), default=None)
        single = len(question_parts(query)) == 1  # a two-part question is not emptied by one open part
        undecided = best is not None and says_undecided(
            best.stored.passage.text, set(content_terms(query)), asked_type(query) if single else None
        )
        idf, _ = self._idf(content_terms(query), unseen)
        echoed = only_asks(query, idf, [c.stored.passage.text for c in ranked[:TYPED_LEADING]])
        thing = asked_thing(query)
        unnamed = bool(thing) and not names_thing((_words(c.stored) for c in reading), thing)
        judgement = Judgement(
            confidence,
            pair.question.threshold,
            probabilities,
            pair.passage.threshold,
            orders=ordered,
            unknown=unknown,
            reach=pair.passage.reach,
            unstated=missing,
            stated_similarity=closest,
            unmatched_week=week,
            unmatched_day=day,
            unscheduled=unscheduled,
            undecided=undecided,
            echoed=echoed,
            unnamed=unnamed,
        )
        if judgement.answerable:
            return judgement
        return replace(judgement, unstating=self.unstating(query, [c.stored for c in ranked[:POOL_JUDGED]], unseen))

    def unstating(self, query: str, passages: Sequence[StoredPassage], unseen: Unseen | None) -> frozenset[str]:
        """The ids of ``passages`` that state no value of the type ``query`` asks for about what it asks
        (words only; empty when it asks for no type)."""
        typed = self._typed_parts(query, unseen)
        if not typed:
            return frozenset()
        return frozenset(
            stored.passage.id
            for stored in passages
            if not any(
                states_value(kind, weights, stored.passage.text, _context_words(stored), _words(stored))
                for _, kind, weights in typed
            )
        )

    def _typed_parts(self, query: str, unseen: Unseen | None) -> list[tuple[str, AnswerType, dict[str, float]]]:
        """Each question ``query`` asks, with the type of value it asks for and the weights of its own words
        ("last week" is when, not what); empty when a part asks for no type."""
        parts = question_parts(query)
        kinds = [asked_type(part) for part in parts]
        if any(kind is None for kind in kinds):
            return []
        idf, _ = self._idf(content_terms(_ASKED_PERIOD.sub(" ", query)), unseen)
        typed = []
        for part, kind in zip(parts, kinds, strict=True):
            own = set(content_terms(part))
            if kind is not None:
                typed.append((part, kind, {term: weight for term, weight in idf.items() if term in own}))
        return typed

    def unscheduled(self, query: str, leading: Sequence[Candidate], as_of: dt.date, unseen: Unseen | None) -> bool:
        """Whether ``query`` asks when the next one is and no ``leading`` passage about it gives a coming date.

        A passage is about it when it holds the question's most specific word that any leading passage
        holds ("drill" in "when is the next fire drill at Central?", not "Central" of the opening hours).
        """
        if not asks_next(query):
            return False
        idf, _ = self._idf([term for term in content_terms(query) if term != "next"], unseen)  # what, not when
        offered = [_words(c.stored) for c in leading]
        held = [term for term in idf if any(term in words for words in offered)]
        if not held:
            return False
        specific = max(held, key=lambda term: (idf[term], term))
        about = [c for c, words in zip(leading, offered, strict=True) if specific in words]
        return not any(gives_coming_date(text, as_of) for c in about for text in _identity_texts(c.stored))

    def unstated_value(
        self, query: str, leading: Sequence[Candidate], unseen: Unseen | None = None, dense: bool = False
    ) -> tuple[AnswerType | None, float | None]:
        """The kind of value ``query`` asks for (a time, a price) when no ``leading`` passage states one
        about it, and (``dense``: when the dense lane ran) the closest stating sentence's similarity.

        A stating sentence shares the question's words; with the dense lane's model it must also be
        at least ``STATED_SIMILARITY`` similar to the question, or it states a value of something else.
        A question asking several ("Can you post it, and what does it cost?") is unanswered only when
        each part asks for a value and none is stated; a part the rule cannot read leaves it answerable.
        """
        if asked_type(query) is None:  # most questions: nothing to read
            return None, None
        typed = self._typed_parts(query, unseen)
        if not typed:
            return None, None
        read = [
            PassageText(c.stored.passage.text, _context_words(c.stored), _words(c.stored), _title(c.stored))
            for c in leading
        ]
        found = [self._unstated_part(part, weights, read, dense) for part, _, weights in typed]
        if all(missing is not None for missing, _ in found):
            return found[0]
        return None, max((closest for _, closest in found if closest is not None), default=None)

    def _unstated_part(
        self, question: str, weights: Mapping[str, float], read: Sequence[PassageText], dense: bool
    ) -> tuple[AnswerType | None, float | None]:
        """:meth:`unstated_value` for one question (or one part of a question), read by its own words' ``weights``."""
        missing = unstated(question, weights, read)
        if missing is not None or not dense or self.similarity is None:
            return missing, None
        sentences = value_sentences(question, weights, read)[:VALUE_SENTENCES]
        if not sentences:
            return None, None
        closest = round(max(self.similarity(question, sentences)), 4)
        far = closest < STATED_SIMILARITY and not names_whole_question(question, weights, sentences)
        return (asked_type(question) if far else None), closest

    def hidden_best(
        self,
        query: str,
        passages: Sequence[StoredPassage],
        runs: Mapping[str, LaneRun],
        unseen: Unseen,
        stating: bool = False,
    ) -> float:
        """The best passage probability among ``passages`` outside the caller's scopes (judged, never shown);
        with ``stating``, among those stating a value of the type the question asks for."""
        barred = self.barred(query, passages, runs, unseen)
        unstating = self.unstating(query, passages, unseen) if stating else frozenset()
        return max((p for pid, p in barred.items() if pid not in unstating), default=0.0)

    def barred(
        self, query: str, passages: Sequence[StoredPassage], runs: Mapping[str, LaneRun], unseen: Unseen
    ) -> dict[str, float]:
        """Each probability of ``passages`` the lanes dropped (``runs``' ``shadow`` holds their raw scores)."""
        dense = runs.get("dense")
        cosines = dense.shadow if dense is not None else {}
        found = self._signals(query, passages, runs, cosines, [set(run.shadow) for run in _ran(runs)], unseen)
        passage = self.models.for_runs(runs).passage
        return {pid: round(passage.probability(vars(s)), 4) for pid, s in found.items()}

    def signals(
        self, query: str, candidates: Sequence[Candidate], runs: Mapping[str, LaneRun], unseen: Unseen | None = None
    ) -> dict[str, Signals]:
        dense = runs.get("dense")
        cosines = dense.seen if dense is not None else {}
        proposed = [{pid for pid, _ in run.ranking} for run in _ran(runs)]
        return self._signals(query, [c.stored for c in candidates], runs, cosines, proposed, unseen)

    def _signals(
        self,
        query: str,
        passages: Sequence[StoredPassage],
        runs: Mapping[str, LaneRun],
        cosines: Mapping[str, float],
        proposed: Sequence[set[str]],
        unseen: Unseen | None,
    ) -> dict[str, Signals]:
        """Each passage's signals; ``cosines`` are its dense scores, ``proposed`` what each lane that ran proposed."""
        idf, absent = self._idf(content_terms(query), unseen)
        unknown = _share(idf, absent)
        dense = runs.get("dense")
        seen = dense.seen if dense is not None else {}
        background = statistics.median(seen.values()) if seen else 0.0
        floor = min(seen.values()) if seen else 0.0  # a passage the dense pool did not reach is below its last
        out: dict[str, Signals] = {}
        titled = [stored.passage.path for stored in passages if len(stored.passage.heading_path) == 1]
        outlines = self.outlines(titled) if titled else {}
        for stored, words in zip(passages, self._word_sets(passages, idf), strict=True):
            pid = stored.passage.id
            cosine = cosines.get(pid, floor)
            out[pid] = Signals(
                coverage=_share(idf, words),
                rare_miss=_rare_miss(idf, words),
                cosine=round(cosine, 4),
                margin=round(cosine - background, 4),
                agreement=float(all(pid in ids for ids in proposed)),
                intro=_intro(stored, outlines),
                unknown=unknown,
            )
        return out

    def _word_sets(self, passages: Sequence[StoredPassage], terms: Iterable[str]) -> list[Set[str]]:
        """What :func:`_words` says of each passage about ``terms`` (the features read nothing else).

        The heading and body terms come from the lexical index's compiled form when it is at the
        record store's high-water mark, so no passage text is analysed per query; otherwise (or
        for a passage it does not hold) each passage is analysed as before.
        """
        held = self.lexical.held_terms(list(terms), [stored.passage.id for stored in passages])
        if held is None:
            return [_words(stored) for stored in passages]
        return [found | _module_words(stored.passage.module) for found, stored in zip(held, passages, strict=True)]

    def _idf(self, terms: Sequence[str], unseen: Unseen | None = None) -> tuple[dict[str, float], set[str]]:
        """BM25's idf of each content term over the passages the caller may see (heading or body), and the
        terms none holds."""
        unseen = unseen or Unseen()
        total = max(self.lexical.document_count() - unseen.passages, 1)
        weights: dict[str, float] = {}
        absent: set[str] = set()
        for term, holding in self.lexical.passages_with_each(dict.fromkeys(terms), heading=True).items():
            frequency = holding - unseen.terms.get(term, 0)
            if frequency == 0:
                absent.add(term)
            weights[term] = math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))
        return weights, absent


def stating_candidates(ranked: Sequence[Candidate], named: Set[str]) -> list[Candidate]:
    """The candidates read for a stated value (a time, a price, a week): the first ``TYPED_LEADING``, and when
    the identity lane named some of them, the first candidate after them that it did not name.

    An identifier in a question names a note ("How many people are available on Fellpage right now?" names
    the Fellpage how-to), and the named passages lead; the value asked for is often in another note (the
    morning's duty log). Reading the first three unnamed ones instead answered as many no-answer questions
    as it rescued answerable ones on the development suites; the first one alone, 2 against 10.
    """
    leading = list(ranked[:TYPED_LEADING])
    if not any(c.id in named for c in leading):
        return leading
    return leading + [c for c in ranked[TYPED_LEADING:] if c.id not in named][:1]


def _about_period(reading: Sequence[Candidate], week: int | None, day: tuple[int, int] | None) -> list[Candidate]:
    """The ``reading`` passages about the asked ``week`` and ``day`` (each when asked); all when neither is."""
    return [
        c
        for c in reading
        if (week is None or names_week(_identity_texts(c.stored), week))
        and (day is None or names_day(_identity_texts(c.stored), day))
    ]


def _ran(runs: Mapping[str, LaneRun]) -> list[LaneRun]:
    """The lexical and dense lanes that ran (a lane not run is no vote against agreement)."""
    return [runs[name] for name in ("lexical", "dense") if name in runs and runs[name].report.status != "unavailable"]


def _words(stored: StoredPassage) -> frozenset[str]:
    """The terms a passage offers: its text, its heading path and its note's name."""
    passage = stored.passage
    return term_set(" ".join([passage.text, *passage.heading_path, passage.module.replace("-", " ")]))


def _identity_texts(stored: StoredPassage) -> tuple[str, ...]:
    """Where a passage says what it is about: its id (its note's), its path, its heading path and its text."""
    passage = stored.passage
    return (passage.id, passage.path, *passage.heading_path, passage.text)


def _title(stored: StoredPassage) -> str:
    """A passage's heading path as one line of text."""
    return " ".join(stored.passage.heading_path)


def _context_words(stored: StoredPassage) -> frozenset[str]:
    """The terms of a passage's heading path and its note's name."""
    passage = stored.passage
    return term_set(" ".join([*passage.heading_path, passage.module.replace("-", " ")]))


def _intro(stored: StoredPassage, outlines: Mapping[str, Sequence[tuple[str, ...]]]) -> float:
    """1.0 for a note's title section when the note has sections under that title."""
    head = stored.passage.heading_path
    if len(head) != 1:
        return 0.0
    return float(any(len(other) > 1 and other[0] == head[0] for other in outlines.get(stored.passage.path, ())))


def _module_words(module: str) -> frozenset[str]:
    """The terms of a note's name (the one part of :func:`_words` the lexical index does not hold)."""
    return term_set(module.replace("-", " "))


def _share(idf: Mapping[str, float], words: Set[str]) -> float:
    """The idf-weighted share of the question's terms that are in ``words``."""
    mass = sum(idf.values())
    return round(sum(w for term, w in idf.items() if term in words) / mass, 4) if mass else 0.0


def _rare_miss(idf: Mapping[str, float], words: Set[str]) -> float:
    rarest = max(idf.values(), default=0.0)
    missing = [w for term, w in idf.items() if term not in words]
    return round(max(missing, default=0.0) / rarest, 4) if rarest else 0.0
