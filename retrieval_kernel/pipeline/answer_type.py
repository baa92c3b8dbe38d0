"""What kind of value a question asks for, and whether the leading passages state one about it.

"What time does the canteen open?" asks for a time of day, "how much does a locker cost?" for a
price, "how long are search logs kept?" for a duration. A near miss often lands on the right
note (the canteen, the lockers, the logs) that never states such a value: every lexical and
embedding signal says "answers", yet no sentence near the question's words holds a time, a
price or a duration. This module names the asked type (only where the wording makes it
unambiguous: most questions ask for no typed value and are left to the other signals) and
finds the sentences of a passage that state a value of that type. A count is checked more
closely: "how many snow leopards do we have?" is not answered by a note that names the snow
leopards and states some other number, only by one that puts a number on them; "who is the duty
manager?" only by a sentence that names someone beside the role. A question asking two things
("..., and what does it cost?") is read part by part (:func:`question_parts`). The kind of value a
contested fact holds tells whether a question can be asking for it (:func:`answers_asked`,
:func:`asks_for_no_value`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from ..projections.lexical import analyze, term_set
from .periods import names_day

_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
    "sixty|hundred|thousand|dozen|single|both|once|twice"
)
_NUMBER = rf"(?:\d[\d,.]*|{_NUMBER_WORDS})"
_TIME_UNIT = (
    r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|fortnights?|months?|years?|yrs?|"
    r"quarters?|working days?|business days?|shifts?|sailings?|visits?)"
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_SHARE = (
    rf"\b\d[\d.]*\s?%|\bper ?cent\b|\bhalf\b|\bquarter\b|\bthird\b|\b{_NUMBER} in {_NUMBER}\b|"
    rf"\b{_NUMBER} of (?:every|each)\b"
)
_MEASURE_UNIT = (
    r"(?:°|deg\b|degrees|c\b|f\b|w\b|watts?\b|kw\b|mph\b|km/?h\b|kph\b|knots?\b|kts\b|kn\b|m/s\b|m\b|metres?\b|"
    r"meters?\b|cm\b|mm\b|km\b|kg\b|g\b|tonnes?\b|t\b|lbs?\b|bar\b|psi\b|v\b|volts?\b|ft\b|feet\b|inch(?:es)?\b|"
    r"kilograms?\b|kilos?\b|grams?\b|litres?\b|liters?\b|l\b|ml\b|centimetres?\b|millimetres?\b|kilometres?\b|"
    r"miles?\b|yards?\b|gallons?\b|tons?\b|m2\b|m\u00b2|sq\.? ?m\b|square (?:metres?|meters?|feet)\b|hectares?\b|"
    r"acres?\b)"
)
# Units a question can ask its answer in ("... in watts?"): the value is a measurement in them.
_ASKED_UNIT = (
    r"(?:watts|kilowatts|kw|volts|amps|metres|meters|feet|kilometres|kilometers|km|miles|kilos|kilograms|kg|tonnes|"
    r"litres|liters|gallons|degrees|celsius|fahrenheit|square metres|square meters|square feet|hectares|acres)"
)
# "Who is the depot manager?" asks for the person in a role: a name ("Declan Feehily"), not the role's description.
_WHO_IS = (  # "who" opening a clause, asking who holds something ("can a woman who's pregnant ..." does not)
    r"(?:^\s*|[,.;:!?]\s+|\b(?:and|but|so)\s+)who(?:'s| is| are| was)\s+"
    r"(?!(?:allowed|able|responsible|supposed|going|meant|in|on|at|to|not|there|it|that)\b)"
)
# "Which duty manager is on shift today?", "which person signs ...": a person asked for by role.
_WHICH_PERSON = (
    r"\bwhich ((?:person|member of staff|staff member|colleague|(?:[\w-]+ )?(?:manager|officer|supervisor|lead|clerk|"
    r"nurse|vet|engineer|technician|steward|coordinator|director)))\b(?=[^?]*\b(?:is|are|was)\b)"
)
_WHO_IS_ON = r"\bwho(?:'s| is| are) (on (?:call|duty|shift)\b)"  # "who's on call tonight?": the holder's name
_WHO_DID = r"^\s*who \w+ed\b"  # "Who cleared the fallen branch?": the person who did it
# "Who won the draw?": a past deed with an irregular verb, like "who cleared ..." (a present duty, "who keeps
# climbers out ...", may be answered by a role, and is left to the other signals)
_WHO_WON = r"^\s*who (?:won|wrote|took|gave|made|ran|led|chose|brought|sent|got|found|told|paid|left|lost|broke)\b"
_NAMES_OF = (  # "the names of the other directors": people, by name
    r"\bnames? of (?:the |our |all the )?(?:other )?(?:[\w-]+ )?"
    r"(?:directors|trustees|staff|volunteers|members|managers|people|team)\b"
)
_NOT_NAMES = (  # capitalised at a sentence's start or in a heading, never a name's part
    "The|A|An|Our|Your|Their|Its|His|Her|This|That|These|Those|Each|Every|All|Any|Some|No|If|When|On|In|At|For|From|To|"
    "By|With|And|Or|But|As|Ask|Call|Ring|See|Email|Contact|Staff|Team|Duty|Manager|Head|Chief|Code|Level|Stage|"
    "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|January|February|March|April|May|June|July|August|"
    "September|October|November|December"
)
_NAME_WORD = rf"(?!(?:{_NOT_NAMES})\b)(?:O['\u2019])?(?:Mc|Mac)?[A-Z][a-zà-ÿ'\u2019]+(?:-[A-Z][a-zà-ÿ'\u2019]+)?"
_NAME = rf"(?-i:\b{_NAME_WORD}(?:\s+{_NAME_WORD})+\b)"  # two capitalised words in a row: "Declan Feehily"
# "Carrowbeg Cleaning", "Fenmore Refrigeration Ltd", "collected by Greenway": a company's name.
_ORGANISATION_NAME = (
    rf"{_NAME}|(?-i:\b(?:by|from|with|to|uses?|using|via)\s+[A-Z][\w&'\u2019-]+)|"
    r"(?-i:\b[A-Z][\w&'\u2019-]+\s+(?:Ltd|Limited|plc|Inc|LLC)\b)"
)
_WEEKDAY = r"(?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|weekdays?|weekends?)"
# A time of day stated ("09:30", "7pm", "noon", "30 minutes before")
_STATED_CLOCK = (
    rf"\b\d{{1,2}}(?::|\.)\d{{2}}\b|\b\d{{1,2}}\s?(?:am|pm|a\.m\.|p\.m\.)\b|\bnoon\b|\bmidnight\b|"
    rf"\b\d{{4}}\s?(?:hrs|h)\b|\bo'clock\b|\b{_NUMBER}\s+(?:minutes?|mins?|hours?|hrs?)\s+"
    r"(?:before|after|ahead|prior|from)\b"
)
# An amount of money stated ("£12", "48 pence", "EUR 30"), a length of time stated, and the units a speed and a
# length are stated in
_STATED_AMOUNT = (
    r"[£$€¥]\s?\d|\b\d[\d,.]*\s?(?:pounds?|euros?|dollars?|usd|eur|gbp|chf|pence|p|cents?)\b|"
    r"\b(?:eur|usd|gbp|chf)\s?\d"
)
_STATED_DURATION = (
    rf"\b{_NUMBER}[\s-]*(?:\w+[\s-]+)?{_TIME_UNIT}\b|\b(?:an?|half an?)\s+{_TIME_UNIT}\b|"
    r"\b(?:daily|weekly|monthly|yearly|annually|hourly|nightly|"
    r"quarterly|fortnightly|every)\b|\bindefinitely\b|\bforever\b|\bpermanent(?:ly)?\b|\buntil\b"
)
_SPEED_UNITS = r"mph|km/?h|kph|knots?|kts|miles an hour|miles per hour|kilometres an hour"
_LENGTH_UNITS = (
    r"m|metres?|meters?|cm|centimetres?|mm|millimetres?|km|kilometres?|kilometers?|ft|feet|foot|inch(?:es)?|"
    r"miles?|yards?"
)
# A date stated: ISO, a month, a year, a quarter, "4/10" (what answers "date" and part of what answers "occasion")
_STATED_DATE = rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b{_MONTH}\b|\b(?:19|20)\d\d\b|\bq[1-4]\b|\b\d{{1,2}}/\d{{1,2}}\b"


@dataclass(frozen=True)
class AnswerType:
    """A kind of value: how a question asks for it, and how a sentence states one."""

    name: str
    label: str  # for people: "a price"
    asks: re.Pattern[str]
    states: re.Pattern[str]


def _type(name: str, label: str, asks: str, states: str) -> AnswerType:
    return AnswerType(name, label, re.compile(asks, re.IGNORECASE), re.compile(states, re.IGNORECASE))


# In the order they are tried: the first whose question pattern matches is the asked type.
ANSWER_TYPES: tuple[AnswerType, ...] = (
    _type(
        "money",
        "a price or an amount of money",
        r"\bhow much (?:does|do|is|are|will|would|should|did)\b.*\b(?:cost|charge|pay|paid|price|fee|spend|refund|"
        r"worth|budget)\b|\bhow much (?:money|cash)\b|\bwhat (?:is|are) the (?:price|cost|fee|charge|rate)s?\b|"
        r"\bprice of\b|\bcost of\b|\bhow much is\b|\bwhat (?:does|do|did|will|would) [^?]*\b(?:cost|charge)\b|"
        r"\bwhat(?:'s| is| are)? (?:the |our |a |an )?(?:[\w-]+ ){0,3}(?:fee|price|cost|charge|deposit|fare|fine|"
        r"penalty)s?\b|"
        r"\bhow much (?!notice\b|time\b|warning\b)[^?]*\b(?:claim|earn|charge|cost|pay|deposit|refund)|"
        r"\b(?:hourly|daily|weekly|nightly|day|pay|mileage) rates?\b|\b(?:hourly|daily|weekly|monthly|annual|yearly) "
        r"(?:pay|wages?|salary)\b|\bwhat(?:'s| is| are)? (?:the |our |a )?(?:[\w-]+ ){0,3}(?:wages?|salary|salaries)\b|"
        r"\bhow much (?:was|were)\b|\bpaid (?:per|an|a|by the) (?:hour|day|shift|week|month)\b|"
        # money taken in: "how much did we take in fares", "what were the takings", "what did the shop take"
        r"\bhow much (?:did|do|does|will) [^?]*\b(?:take|took|raise|raised|make|made|earn|bring in)\b|"
        r"\bwhat (?:were|are|was|is) (?:the |our )?(?:[\w-]+ )?takings\b|"
        r"\bwhat did (?:the |our )?[\w -]+ take\b(?! out)",
        # a deposit, a discount or a fee is often a share of something: "a 25 percent deposit"
        rf"{_STATED_AMOUNT}|\b\d[\d,.]*\s?k\b|\bfree\b|\bno charge\b|\bat cost\b|{_SHARE}",
    ),
    _type(
        "percent",
        "a percentage or a share",
        r"\bwhat percentage\b|\bwhat percent\b|\bwhat share\b|\bwhat proportion\b|\bwhat fraction\b",
        _SHARE,
    ),
    _type(
        "identifier",
        "a reference or registration number",
        # asked for ("what's the registration number of ..."), not only named ("my part number came back empty")
        r"\b(?:what|which)(?:'s| is| are| was)? (?:the |our |its |their |a |an )?(?:[\w'-]+ ){0,2}(?:registration|reg|"
        r"serial|licen[cs]e|account|reference|ref|order|invoice|job|booking|case|policy|vat|charity|company|model|part|"
        r"tracking|membership|permit) (?:number|no\.?|code)s?\b|"
        r"\b(?:what|which)(?:'s| is| are| was)? (?:the |our |its |their |my |your |a |an )?(?:[\w'-]+ ){0,2}"
        r"(?:iban|bic|swift code|sort code|post ?code|zip code|eircode|(?:bank|account) details)s?\b|"
        r"\bwhat(?:'s| is| was)? (?:the |our |its |their )?(?:[\w-]+ ){0,2}(?:registration|reg plate|number plate) "
        r"of\b|^\s*(?:the )?(?:post ?code|zip code|eircode)s? (?:for|of)\b|"  # terse: "postcode for the satnav"
        # terse: "lifeboat station charity registration number"
        r"^\s*(?:[\w'-]+ ){0,4}(?:registration|registered|charity|company|vat|account|reference) "
        r"(?:number|no\.?)\s*\??\s*$",
        # a code mixing capitals and digits ("FX-2291", "KD19 BXL", "CHY 20419"), or a long run of digits
        r"(?-i:\b(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9]{1,6}(?:[- ][A-Z0-9]{1,8}){0,3}\b)|\b\d{5,}\b",
    ),
    _type(
        "phone",
        "a phone number",
        r"\bphone number\b|\btelephone number\b|\bnumber to call\b|\bextension\b|\bmobile number\b|"
        r"\bwhat number\b.*\b(?:call|ring|dial|phone|text)\b",
        # a date is no phone number; "extension 4210" is one
        r"(?<![\w-])(?!\d{4}-\d{2}-\d{2}\b)\+?\d[\d\s().-]{5,}\d|\bext(?:\.|ension)?\s?\d+\b|\bx\d{3,}\b",
    ),
    _type(
        "email",
        "an email address",
        r"\be-?mail address\b|\bwhat (?:is|'s) the e-?mail\b|\bwhich (?:e-?mail|inbox|mailbox)\b",
        r"\b[\w.+-]+@[\w-]+\.[\w.]+\b",
    ),
    _type(
        "url",
        "a web address",
        r"\burl\b|\bweb address\b|\bwhat link\b|\bwhich link\b|\bwhat (?:is|'s) the (?:web ?site|address)\b",
        r"https?://|\bwww\.|\b[\w-]+\.(?:com|org|net|io|co\.uk|internal|local)\b",
    ),
    _type(
        "password",
        "a password or an access code",
        r"\bwhat(?:'s| is| are)\s+(?:the\s+|our\s+)?(?:[\w-]+\s+){0,3}(?:password|passcode|passphrase|door code|"
        r"access code|gate code|alarm code|keypad code|lock code|padlock code|safe code|key ?safe code|lock ?box code|"
        r"combination|pin)\b|"
        r"\b(?:password|passcode|door code|access code) (?:for|to|of)\b(?!.*\breset\b)|"
        # "what's the code for the key safe?": a code that opens something
        r"\bwhat(?:'s| is| are)\s+(?:the\s+|our\s+)?codes? (?:for|to|of|on) (?:the |our )?(?:[\w-]+ ){0,2}"
        r"(?:key ?safe|safe|door|gate|padlock|lock ?box|lock|alarm|keypad|locker|cupboard|store|shed|cabinet)s?\b",
        r"\b(?:password|passcode|passphrase|code|pin)\s*(?:is|:|=)\s*(?:[\"'\u201c\u2018][^\"'\u201d\u2019]{3,}"
        r"|[A-Za-z]*\d[\w!@#$%^&*-]*)",
    ),
    _type(
        "organisation",
        "a company's name",
        r"\b(?:which|what) (?:(?!(?:can|could|do|does|did|will|would|is|are|was|were|should|must|may)\b)[\w-]+ ){0,2}?"
        r"(?:company|companies|firm|firms|contractor|contractors|supplier|suppliers|"
        r"vendor|vendors|provider|providers|collector|haulier|installer|caterers?|merchants?|insurers?|agency|"
        r"agencies|printers?|couriers?|accountants?|auditors?|solicitors?|brokers?|pharmac(?:y|ies)|chemists?|pubs?|"
        r"garages?|hotels?|dentists?|breweries|brewery|builders?|electricians?|plumbers?|laundr(?:y|ies)|"
        r"banks?(?! (?:holidays?|accounts?|details|transfers?|cards?|statements?)\b))\b|"  # a bank, not its account
        r"\bwho (?:supplies|provides|insures|delivers)\b",
        _ORGANISATION_NAME,
    ),
    _type(
        "person",
        "a person's name",
        _WHO_IS
        + r"|\bwhat(?:'s| is) the name of\b|"
        + _WHICH_PERSON
        + r"|"
        + _WHO_IS_ON
        + r"|"
        + _WHO_DID
        + r"|"
        + _WHO_WON
        + r"|"
        + _NAMES_OF,
        _NAME,
    ),
    _type(
        "age",
        "an age",
        r"\bhow old (?:do|does|must|should|would)\b|\bhow old (?:is|was) (?-i:[A-Z][a-z]+\b)|"  # "how old is Moss"
        r"\bwhat age\b|\bminimum age\b|\bmin age\b|"
        r"\bage limit\b|\bage restriction\b|\bold enough\b|\b(?:youngest|oldest|lowest|highest) age\b|\bhow young\b",
        r"\b\d{1,2}\s*(?:years?|yrs?)\b|\baged?\s*(?:\d|under|over|between)|"
        r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)[- ]years?[- ]old\b|\bborn\b|"
        r"\b(?:built|bought|founded|opened|made|established|installed|planted)\b[^.]{0,30}?\b(?:19|20)\d\d\b|"
        r"\b(?:over|under|below|above)\s*(?:the age of\s*)?\d{1,2}\b|"
        r"\b\d{1,2}\s*(?:\+|and (?:over|above|under|older|younger)|or (?:over|older|under|younger))|"
        r"\b(?:twelve|fourteen|fifteen|sixteen|seventeen|eighteen|twenty-one)\b|"
        # "stewards must be at least 18" (not "at least 30 minutes", "at least 4 people")
        r"\bat least \d{1,2}\b(?!\s*(?:%|percent|per|[a-z]))",
    ),
    _type(
        "measurement",
        "a measurement",
        r"\bwhat (?:temperature|wattage|speed|wind speed|voltage|height|weight|width|depth|pressure|size|rating)\b|"
        r"\b(?:which|what) (?:wind )?speed\b|\bwind limit\b|\bhow hot\b|\bhow cold\b|\bhow warm\b|"
        r"\b(?:maximum|minimum|max|min) (?:[\w-]+ ){0,2}(?:height|weight|length|width|speed|temperature)\b|"
        r"\b(?:top|cruising) speed\b|"  # terse: "top speed of little tern"
        # a size: "how deep is the lock chamber", "how far apart", "how far does the signal reach" (not "how far
        # in advance", a length of time, nor "how far can the scheduler go on its own", a figure of speech)
        r"\bhow (?:deep|wide|tall|high|heavy)\b|\bhow far (?:apart|away|from|is|are|was|were)\b|"
        r"\bhow far does [^?]*\breach\b|"
        rf"\bin {_ASKED_UNIT}\s*\??\s*$",  # "What's the output power of the main transmitter in watts?"
        rf"\b\d[\d,.]*\s?{_MEASURE_UNIT}|\bbeaufort\b|\bforce \d|\bgale\b",
    ),
    # "When does the cargo bike library open?": a new thing opens on a day ("opens on 1 July 2038"), a shop at
    # a time ("opens at 09:00"); not "when does the shop open on Sundays?"
    _type(
        "opening",
        "a time of day or the day it opens",
        r"\bwhen (?:does|do) (?:the |our |a |an )?[\w'\u2019 -]+ (?:open|reopen)\s*\??\s*$",
        rf"{_STATED_CLOCK}|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|"
        r"\b\d{4}-\d{2}-\d{2}\b",
    ),
    _type(
        "clock",
        "a time of day",
        r"(?<!within )\bwhat times?\b(?!.*\b(?:before|after|ahead|prior)\b)|\bat what (?:times?|hours?)\b|"
        r"\bwhat hour\b|"
        r"\bopening hours\b|\bwhen does .* (?:open|close|run|finish)\b|\bwhen (?:is|are) [^?]*\bopen\b",
        _STATED_CLOCK,
    ),
    _type(
        "weekday",
        "a day of the week",
        r"\b(?:which|what) day\b|\bwhich days\b|\bday of the week\b",
        rf"\b{_WEEKDAY}\b|\bevery day\b|\bdaily\b",
    ),
    _type(
        "date",
        "a date",
        r"\bwhat date\b|\bwhich date\b|\bwhat year\b|\bwhich year\b|\bwhich month\b|\bwhat month\b|"
        r"\bwhen (?:is|was|will|are|were) .*\b(?:due|deadline|expire|renew|opening|launch|available)|"
        r"\bwhen (?:will|was|were) .*\bopen|"  # "when is the shop open?" asks its hours (a time), not a date
        r"\bwhen (?:does|did|will|do|is|was) [^?]*\b(?:end|expire|run out|last (?:replac|servic|check|renew|"
        r"updat|inspect|test|calibrat|clean|repair)\w*)\b|\bwhen was [^?]*\blast\b|"
        r"\bwhen (?:do|does|did|will) [^?]*\b(?:go(?:es)? live|launch|come into force|take effect)\b|"
        # "When was the Bike Works set up?": when it came to be
        r"\bwhen (?:was|were|did) [^?]*\b(?:set up|founded|established|built|formed|registered|incorporated|"
        r"found|establish|build|form)\b",
        # a deadline counted from something ("within 30 days of the end of each grant period") is a date too
        rf"{_STATED_DATE}|\bwithin {_NUMBER} (?:working |business |calendar )?{_TIME_UNIT}\b|"
        rf"\b{_NUMBER} (?:working |business |calendar )?{_TIME_UNIT} (?:after|before|from|of)\b",
    ),
    # "When is the next trustees meeting?": a date, a weekday, a time or a rule of recurrence answers. Tried after
    # "date": "when is the floor next due to be resealed" asks for a due date, which only a date states.
    _type(
        "occasion",
        "when it next happens",
        r"\bwhen(?:'s| is| are| will| do| does)\b[^?]*\bnext\b|"
        # "when does the new course start?": a date ("8 September") or a time ("at 18:00") answers
        r"\bwhen (?:does|do|will|did) [^?]*\b(?:start|begin)s?\b|"
        # "When is the volunteers' summer social?": an event, asked by its name alone
        r"^\s*when(?:'s| is| are) (?:the |our |this year's |this |next )?[\w'\u2019 -]+\?\s*$",
        _STATED_DATE
        + rf"|\b{_WEEKDAY}\b|\b\d{{1,2}}(?::|\.)\d{{2}}\b|\b(?:every|each|once a|twice a)\b|\b(?:daily|weekly|"
        r"monthly|quarterly|annually|yearly|fortnightly)\b|\b(?:today|tomorrow|tonight)\b|\bnext (?:week|month|year)\b|"
        # "the half is called 35 minutes before curtain up": a time counted from something
        rf"\b{_NUMBER}\s+(?:minutes?|mins?|hours?|hrs?|days?|weeks?)\s+(?:before|after|ahead of|prior to|from)\b",
    ),
    # "How long is the lake swim loop?" is a distance as often as a length of time ("How long is the induction?");
    # not "how long are the recordings kept?", how long something lasts
    _type(
        "extent",
        "a length of time or a distance",
        r"\bhow long (?:is|are|was|were) (?:the |a |an |our |each |this |that )?(?:[\w-]+ ){0,2}"
        r"(?![\w-]*[^e\W]ed\b|(?:kept|held|valid|open|good|left|out|off|down|free|away|gone|shut|for)\b)[\w-]+\s*\??\s*$",
        rf"{_STATED_DURATION}|\b\d[\d,.]*\s?(?:{_LENGTH_UNITS})\b",
    ),
    _type(
        "frequency",
        "how often it happens",
        r"\bhow often\b|\bhow frequently\b",
        rf"{_STATED_DURATION}|{_STATED_CLOCK}|\b(?:each|per)\s+(?:day|morning|afternoon|evening|night|week|month|year|"
        rf"session|shift|visit|use)\b|\b(?:once|twice|{_NUMBER}\s+times)\s+(?:a|an|per|each)\b|"
        rf"\bat (?:opening|closing|the start|the end)\b|\b{_WEEKDAY}\b",
    ),
    _type(
        "duration",
        "a length of time",
        r"\bhow long\b|\bhow early\b|\bhow late\b|\bwithin what time\b|\bhow quickly\b|\bby when\b|"
        r"\bhow many (?:seconds|minutes|hours|days|nights|weeks|months|years|working days|business days|shifts)\b|"
        r"\bhow soon\b|\bhow far (?:in advance|ahead)\b|\bhow much notice\b|"
        r"\bwithin how\b|\bhow fast (?:must|should|do|does|will|has|have)\b[^?]*\b(?:get|reach|respond|reply|arrive|"
        r"attend|answer)\b|"
        r"\bminimum gap\b|\btarget time\b|\btime limit\b|\bhow much time\b",
        _STATED_DURATION,
    ),
    _type(
        "count",
        "a number",
        r"\bhow many\b|\b(?:maximum|minimum|max|min) number\b|\bwhat number of\b|"
        r"\bhow much (?:space|room|weight|capacity|memory|storage|disk)\b|\bcapacity\b|\bhow big\b|\bhow large\b|"
        r"\bhow far\b",
        rf"\b{_NUMBER}\b|\bno (?:limit|maximum|minimum)\b|\bunlimited\b",
    ),
    _type(
        "quantity",
        "a number (a rate, a limit, a range)",
        r"\bwhat(?:'s| is| are)\s+(?:the\s+|our\s+|a\s+)?(?:[\w-]+\s+){0,4}(?:rates?|ranges?|limits?|levels?|"
        r"thresholds?|surcharges?|allowances?|running time|doses?|dosage|tolerances?|ratios?|class size)\b",
        rf"\b{_NUMBER}\b|\bno (?:limit|maximum|minimum)\b|\bunlimited\b",
    ),
)

_TYPE_NAMED: dict[str, AnswerType] = {kind.name: kind for kind in ANSWER_TYPES}

# Words that name the asked type rather than what it is about ("the *price* of a locker"): a
# sentence stating a value need not repeat them.
TYPE_WORDS = frozenset(
    analyze(
        "cost costs price fee charge pay time times day days number numbers hour hours week weeks month months "
        "year years date amount percentage percent proportion capacity phone telephone email address url "
        "link website minimum maximum early late quickly soon far take takings raise raised"
    )
)
STATED_SHARE = 0.2  # a stating sentence (with its heading) holds this much of what its passage holds of the question
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")

# "How many snow leopards ...": the counted thing is the words after "how many" up to the verb
# ("how many hacks went out last week": hacks), a time word or a number.
_HOW_MANY = re.compile(r"\bhow many ([\w'-]+(?: [\w'-]+){0,3})", re.IGNORECASE)
_ENDS_COUNTED = frozenset(
    re.findall(
        r"\S+",
        "do does did are is was were can could should would will may might must have has had we you they there "
        "of in on at for per to go get need a an the our your their it this that under over aged with from by who "
        "which went came got took left sold made gave ran fell gone come been so far already still now today tonight "
        "yesterday last next through before after until till during fit fits sit sits",
    )
)
_DETERMINERS = frozenset({"the", "our", "your", "their", "my", "its", "his", "her"})
_PAST_VERB = re.compile(r"^[a-z]{2,}[^e]ed$")  # "signed", "arrived", "booked" end the counted words ("speed" does not)
GENERIC_COUNTED = frozenset(analyze("people persons person staff members things items units times ones"))
_TOKEN = re.compile(r"[\w'+-]+|[:=%°]")
_IS_NUMBER = re.compile(rf"^(?:{_NUMBER}|\d[\d,.]*)$", re.IGNORECASE)
_UNIT_AFTER = frozenset(  # a number followed by one of these measures something rather than counting it
    re.findall(
        r"\S+",
        "c f °c % percent per cent km kmh mph m cm mm kg g h hr hrs hour hours minute minutes min mins second "
        "seconds day days week weeks month months year years am pm",
    )
)
_COUNTED_REACH = 4  # "2 auto belay fault lights": the counted word within this many words after the number
_COUNT_LINKS = frozenset({"of", ":", "=", "is", "are", "total", "totals", "numbering", "x"})  # "a team of four"


# Where a question asks a second question: "... , and what does it cost?", "...? How often do I check in?"
_PART_BREAK = re.compile(
    r"(?<=\?)\s+|;\s*|,?\s+and\s+(?=(?:what|how|who|when|where|which|why|whose|is|are|can|could|do|does|did|will|"
    r"would|should|by when|at what|on what|in what)\b)",
    re.IGNORECASE,
)
_ASKS = re.compile(
    r"^(?:what|how|who|when|where|which|why|whose|is|are|can|could|do|does|did|will|would|should|may|must|by when|"
    r"at what|on what|in what|until what|up to what)\b",
    re.IGNORECASE,
)
_LEADING_LINK = re.compile(r"^(?:and|but|so|also|then)\s+", re.IGNORECASE)
_SENTENCE_START = re.compile(r"(?<=[.!:-])\s+")


def question_parts(question: str) -> list[str]:
    """The questions ``question`` asks, in order ("Can you post it, and what does it cost?" is two);
    statements around them ("I'm putting it in a macro.") are dropped; one part when it asks one."""
    pieces = [_LEADING_LINK.sub("", piece.strip()) for piece in _PART_BREAK.split(question)]
    asked = [piece for piece in pieces if piece.endswith("?") or _ASKS.match(_SENTENCE_START.split(piece)[-1])]
    return asked if len(asked) > 1 else [question]


def asked_type(question: str) -> AnswerType | None:
    """The kind of value ``question`` asks for, or ``None`` when its wording names none."""
    return next((kind for kind in ANSWER_TYPES if kind.asks.search(question)), None)


def stating_sentences(text: str, kind: AnswerType) -> list[str]:
    """The sentences of ``text`` that state a value of ``kind`` (hard-wrapped lines are one sentence)."""
    return [sentence for sentence in _SENTENCE_END.split(text) if kind.states.search(sentence)]


def states_value(kind: AnswerType, idf: Mapping[str, float], text: str, context: Set[str], holds: Set[str]) -> bool:
    """Whether a passage states a value of ``kind`` about what the question asks.

    ``idf`` weighs the question's terms (type words dropped), ``context`` is the terms of the
    passage's heading path and note name, ``holds`` every term the passage offers. A stating
    sentence counts when, with ``context``, it holds at least ``STATED_SHARE`` of the question's
    weight that the whole passage holds (a price next to another item's name does not count).
    """
    asked = {term: weight for term, weight in idf.items() if term not in TYPE_WORDS}
    if not asked:  # the question names nothing but the type: any value of it will do
        return bool(stating_sentences(text, kind))
    whole = sum(weight for term, weight in asked.items() if term in holds)
    if not whole:
        return False
    for sentence in stating_sentences(text, kind):
        words = context | set(analyze(sentence))
        if sum(weight for term, weight in asked.items() if term in words) >= STATED_SHARE * whole:
            return True
    return False


def counted_thing(question: str) -> str | None:
    """The index term of what a "how many" question counts ("how many snow leopards" -> ``leopard``).

    ``None`` when it asks no "how many" or counts something generic ("people", "staff"), which
    notes count under other names.
    """
    found = _HOW_MANY.search(question)
    if found is None:
        return None
    words: list[str] = []
    for word in found.group(1).split():
        lower = word.lower()
        verb = words and _PAST_VERB.match(lower)  # "hacks went out", "printed programmes": a first word is not one
        if lower in _ENDS_COUNTED or verb or _IS_NUMBER.match(word):  # "children under 12": children
            if lower in _DETERMINERS and len(words) > 1:
                words.pop()  # "lifeguards check the pool": the word before "the" is a verb
            break
        words.append(word)
    terms = [term for word in words for term in analyze(word)]
    if not terms or GENERIC_COUNTED.intersection(terms):
        return None
    return terms[-1]


_ROLE = re.compile(
    _WHO_IS_ON + r"|" + _WHICH_PERSON + r"|" + _WHO_IS + r"((?:[\w'\u2019-]+\s*){1,6})|"
    r"\bname of ((?:[\w'\u2019-]+\s*){1,5})",
    re.IGNORECASE,
)
_ENDS_ROLE = frozenset(
    re.findall(
        r"\S+",
        "and or at for in on as by to from with under over about who that which this today tonight tomorrow now "
        "currently covering week weekend year month please if when these nowadays lately right here there",
    )
)
# "today's first aider" asks who holds the role today, not a role named "today"; "who's got the roof key" who has it
_NOT_ROLE_WORDS = frozenset(
    analyze("our my your their his her its person member staff colleague today tonight tomorrow yesterday got")
)
_ROLE_NOUN = re.compile(
    r"^(?:adviser|advisor|officer|manager|lead|clerk|coordinator|supervisor|director|engineer|technician|"
    r"representative|rep|warden|champion|administrator|controller)s?$",
    re.IGNORECASE,
)


# "the treasurer of the co-op": the organisation the notes are about, not part of the role
_OF_OURSELVES = re.compile(
    r"\s+of (?:the|our|this) (?:co-?op(?:erative)?|club|charity|society|union|trust|company|shop|organi[sz]ation|"
    r"centre|center|group|association|school|team|business)\b.*$",
    re.IGNORECASE,
)


def _joins_role(word: str, following: Sequence[str]) -> bool:
    """Whether "and" joins two words of one role ("health and safety adviser"), not two clauses."""
    return word.lower() == "and" and any(_ROLE_NOUN.match(w.strip("?.,!")) for w in following)


def asked_role(question: str) -> frozenset[str]:
    """The index terms of the role whose holder a question asks for ("who is the stores clerk at Fennick" ->
    ``store``, ``clerk``; "the health and safety adviser" -> ``health``, ``safeti``, ``advis``); empty when it
    names none."""
    found = _ROLE.search(question)
    if found is None:
        return frozenset()
    words: list[str] = []
    held = _OF_OURSELVES.sub("", next(group for group in found.groups() if group is not None))
    phrase = re.sub(r"^on\s+", "", held).split()
    for at, word in enumerate(phrase):
        if word.lower().strip("?.,!") in _ENDS_ROLE and not _joins_role(word, phrase[at + 1 : at + 4]):
            break
        words.append(word.strip("?.,!"))
    return frozenset(term for word in words for term in analyze(word)) - _NOT_ROLE_WORDS


# "How much does motorcycle parking cost?": the priced thing is what the question asks the price of,
# up to where it says for whom, per what, where or when ("a junior swim for my 9 year old"); in "what
# does it cost to hire the sports hall" the verb is not part of it.
_PRICED_END = r"(?:\?|$|,| if | when | for | per | at | on | after | from | this | today| now)"
_PRICED = tuple(
    re.compile(pattern + _PRICED_END, re.IGNORECASE)
    for pattern in (
        r"\bhow much (?:does|do|will|would|did) (?:it cost to |it cost for |we charge for )?(.+?) (?:cost|charge)",
        r"\bwhat (?:does|do|will|would|did) (?:it cost to |it cost for |we charge for )?(.+?) (?:cost|charge)",
        r"\bhow much (?:is|are) (?:it to [\w-]+ |it for )?(.+?)",  # "to send a parcel": the parcel is priced
        r"\b(?:cost|charge)s? (?:us |you |me )?to (?:\w+ )(?:off |in |up )?(.+?)",  # the verb is not priced
        r"\b(?:price|cost|fee|charge|rate|fare)s? (?:of|for|to) (.+?)",
        r"\bwhat ((?:[\w-]+ ){0,2}[\w-]+) (?:do|does|will|would|did) (?:we|you|they|i) (?:charge|pay)\b.*?",
    )
)
_OWED = re.compile(r"\b(?:owed?|owing|outstanding|balance|left to pay|paid)\b", re.IGNORECASE)
_NOT_PRICED = frozenset(
    analyze(
        "it cost costs price fee charge much one each whole all every these days something anything over back get use "
        "my your our their"
    )
)
_SAME_STEM = 4  # "photocopy" and "copies", "wheelie" and "wheeled": one term ends or begins the other


def priced_thing(question: str) -> frozenset[str]:
    """The index terms of what a money question asks the price of ("motorcycle parking" -> ``motorcycl``,
    ``park``); empty when its wording names none, or it asks what is owed rather than a price."""
    if _OWED.search(question):
        return frozenset()
    for pattern in _PRICED:
        found = pattern.search(question)
        if found:
            terms = frozenset(_UNABBREVIATED.get(term, term) for term in analyze(found.group(1)))
            return terms - _NOT_PRICED - TYPE_WORDS
    return frozenset()


# "a 30 min lesson" is priced as "a 30 minute lesson" is: an abbreviated unit, as the notes spell it out
_UNABBREVIATED = {"min": "minut", "hr": "hour", "sec": "second", "wk": "week", "yr": "year"}


def prices(text: str, context: Set[str], thing: Set[str]) -> bool:
    """Whether a sentence of ``text`` states an amount and, with the heading path and the sentence before it,
    names the whole ``thing``."""
    money = _TYPE_NAMED["money"]
    sentences = _SENTENCE_END.split(text)
    for at, sentence in enumerate(sentences):
        if money.states.search(sentence) and all(
            holds_stem(_read_with(sentences, at, context), term) for term in thing
        ):
            return True
    return False


def _read_with(sentences: Sequence[str], at: int, context: Set[str]) -> set[str]:
    """The terms sentence ``at`` is read with: its own, its heading path's (``context``) and the sentence
    before's ("Climbing shoes are resoled by Haddon. A resole costs 45 euro a pair.")."""
    return set(context) | set(analyze(sentences[at])) | (set(analyze(sentences[at - 1])) if at else set())


def holds_stem(words: Set[str], term: str) -> bool:
    """Whether ``words`` hold ``term`` or a word of the same stem ("faulty" for "faults")."""
    return term in words or any(_same_stem(term, word) for word in words)


def _same_stem(term: str, word: str) -> bool:
    if term == word:
        return True
    short, long = sorted((term, word), key=len)
    return len(short) >= _SAME_STEM and (long.startswith(short) or long.endswith(short))


# "the Harbour Trust's shared adviser", "Kilrossan Bus Station": capitalised words ending in one of these
# name an organisation or a place, not the person holding a role.
_ORGANISATION = re.compile(
    r"\b(?:Trust|Council|Office|Services?|Ltd|Limited|Company|Group|Team|Centre|Center|Hall|House|Station|Road|"
    r"Street|Lane|Bank|Authority|University|College|School|Hospital|Clinic|Marina|Harbour|Park|Court|Market|Club|"
    r"Society|Association|Board|Committee|Department|Desk|Foundation|Institute|Agency|Partners|Airport|Library)"
    r"(?:['\u2019]s)?$"
)


def names_role(text: str, context: Set[str], role: Set[str]) -> bool:
    """Whether a sentence of ``text`` names a person and, with the heading path (``context``), the whole ``role``.

    A capitalised role ("the Designated Safeguarding Lead") is not a name for itself.
    """
    person = _TYPE_NAMED["person"]
    for sentence in _SENTENCE_END.split(text):
        names = [set(analyze(name)) for name in person.states.findall(sentence) if not _ORGANISATION.search(name)]
        if any(name - role for name in names) and role <= context | set(analyze(sentence)):
            return True
    return False


_RATE_ASKED = re.compile(
    r"\bhow many [\w'-]+(?: [\w'-]+){0,2}? (?:a|an|per|each|every) (second|minute|hour|day|week|month|year)\b",
    re.IGNORECASE,
)
# "20 a minute", "500 messages an hour": a number, at most two words, then per the unit
_STATED_RATE = r"\b(?:\d[\d,.]*|{number})(?:\s+[\w-]+){{0,2}}\s+(?:a|an|per|each|every)\s+{unit}s?\b"


def asked_rate(question: str) -> str | None:
    """The time unit of a rate a "how many" question asks ("how many texts a minute": ``minute``)."""
    found = _RATE_ASKED.search(question)
    return found.group(1).lower() if found else None


def counts_rate(text: str, term: str, unit: str) -> bool:
    """Whether a sentence of ``text`` holding ``term`` states a number per ``unit`` ("texts at up to 20 a minute")."""
    stated = re.compile(_STATED_RATE.format(number=_NUMBER, unit=unit), re.IGNORECASE)
    for sentence in _SENTENCE_END.split(text):
        if stated.search(sentence) and holds_stem(term_set(sentence), term):
            return True
    return False


def counts(text: str, term: str) -> bool:
    """Whether a sentence of ``text`` puts a number on ``term``: "40 parking spaces", "a team of four"."""
    for sentence in _SENTENCE_END.split(text):
        tokens = [token.lower() for token in _TOKEN.findall(sentence)]
        terms = [next(iter(analyze(token)), "") for token in tokens]
        for at, token in enumerate(tokens):
            if not _IS_NUMBER.match(token):
                continue
            unit = at + 1 < len(tokens) and tokens[at + 1] in _UNIT_AFTER and terms[at + 1] != term
            if unit:
                continue
            if any(_same_stem(term, near) for near in terms[at + 1 : at + 1 + _COUNTED_REACH] if near):
                return True
            before = at - 1
            while before >= 0 and tokens[before] in _COUNT_LINKS and at - before <= 2:
                before -= 1
            if 0 <= before < at - 1 and terms[before] and _same_stem(term, terms[before]):
                return True
    return False


# What a stated fact's value is (an asserted key and its values), and which asked types it can answer.
_DURATION_WORDS = frozenset(analyze("seconds minutes hours days weeks months years interval period"))
_KEY_MEASURES = "knots kmh mph metres meters kg tonnes litres celsius degrees volts watts miles kilometres feet yards"
_KEY_UNITS = (  # the first kind whose words the key holds; "response_time_minutes" is a length of time
    ("hours", frozenset(analyze("hours hour minutes minute"))),  # "close_hour": a time of day, or a length of time
    ("duration", _DURATION_WORDS),
    ("percent", frozenset(analyze("pct percent percentage share"))),  # "deposit_pct" is a share
    ("money", frozenset(analyze("eur euro gbp usd price fee cost charge deposit fare"))),
    ("clock", frozenset(analyze("time clock"))),
    ("measurement", frozenset(analyze(_KEY_MEASURES))),
)
_LENGTH_OF_TIME_SUFFIXES = frozenset({"hours", "minutes", "mins", "hrs", "seconds"})
_UNIT_SUFFIXES = frozenset({"c", "f", "kg", "g", "m", "cm", "mm", "km", "l", "ml", "kw", "w", "v", "t"})
_CLOCK_VALUE = re.compile(r"^\d{1,2}[:.]\d{2}$")
_DATE_VALUE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NUMBER_VALUE = re.compile(r"^-?\d+(?:[.,]\d+)?$")
ANSWERED_BY: dict[str, frozenset[str]] = {  # asked type -> the value kinds that can answer it
    "money": frozenset({"money", "percent", "number"}),
    "percent": frozenset({"percent", "money", "number"}),
    "count": frozenset({"number", "measurement"}),  # "how many metres", "how many knots"
    "duration": frozenset({"duration", "hours", "number"}),
    "frequency": frozenset({"duration", "hours", "number", "clock"}),  # "every 6 weeks", "at 14:00"
    "extent": frozenset({"duration", "hours", "number", "measurement"}),
    "opening": frozenset({"clock", "hours", "date"}),
    "clock": frozenset({"clock", "hours"}),  # "opening_hour: 9" reads as hours; an interval in weeks never as a time
    "date": frozenset({"date"}),
    "occasion": frozenset({"date", "clock", "hours"}),
    "identifier": frozenset({"number"}),
    "age": frozenset({"number", "duration"}),
    "measurement": frozenset({"measurement", "number"}),
    "quantity": frozenset({"number", "hours", "duration", "money", "percent", "measurement"}),
}


def value_kind(key: str, values: Sequence[object]) -> str | None:
    """What a fact's values are: a length of time, money, a share, a time of day (from the key's unit
    word), else a date, a time of day or a plain number (from the values); ``None`` when unknown."""
    suffix = re.split(r"[_.]", key.lower())[-1]
    if suffix in _LENGTH_OF_TIME_SUFFIXES:
        return "duration"  # "soup_hot_hold_hours": how long, never a time of day ("cafe_close_hour" may be one)
    words = set(analyze(key.replace("_", " ").replace(".", " ")))
    for kind, units in _KEY_UNITS:
        if words & units:
            return kind
    if suffix in _UNIT_SUFFIXES:
        return "measurement"  # "palm_house_low_temp_alarm_c": degrees, too short a word for the index
    texts = [str(value).strip() for value in values if not isinstance(value, bool)]
    if not texts or len(texts) < len(values):
        return None
    for kind, pattern in (("clock", _CLOCK_VALUE), ("date", _DATE_VALUE), ("number", _NUMBER_VALUE)):
        if all(pattern.match(text) for text in texts):
            return kind
    return None


def asked_kind(question: str) -> str | None:
    """The asked type's name, with a count of days, weeks or hours read as a length of time."""
    kind = asked_type(question)
    if kind is None:
        return None
    if kind.name == "count" and counted_thing(question) in _DURATION_WORDS:
        return "duration"  # "how many shipping days"
    return kind.name


# Questions that ask for a person, a place, a procedure or a quality, never a number, a time or money:
# "who inspects the flying system?", "what happens if a hire is cancelled too late?", "what colour caps ...?".
_ASKS_NO_VALUE = re.compile(
    r"(?:^|[.!?;,]\s+)(?:in\s+)?(?:who\b(?!\s+(?:is|are)\s+(?:allowed|able|eligible))|where\b|what colou?rs?\b|"
    r"(?:which|what) (?:direction|way|side|colou?rs?|room|door|entrance|form|team|supplier|company)\b|what happens\b|"
    r"what (?:details|information|steps|paperwork)\b|what else\b|what goes\b|"
    r"what (?:do|does|should|must|can) (?:[\w-]+ ){1,4}(?:do|check|write|record|say|bring|tell|wear|use|avoid|"
    r"pick up|collect|carry|give|hand|issue|send|show|mark|fill|label|note|attach|enter|sign)\b|"
    r"how (?:do|does|are|is)\b(?!\s+(?:much|many|long|often|soon|far|late|early)\b))|"
    r"\bhow do (?:i|we|you) (?!know\b)\w+",  # "after sharpening a pair, how do I reset the count": a procedure
    re.IGNORECASE,
)
# "Do we fast rabbits before an operation?": whether, not how much; naming no number, it asks for none.
_YES_NO = re.compile(
    r"(?:^|[.!?;,:]\s+)(?:do|does|did|is|are|was|were|can|could|should|will|would|may|must|has|have)\b", re.IGNORECASE
)
_NUMERIC_KINDS = frozenset({"number", "hours", "duration", "money", "percent", "clock", "date", "measurement"})
# A number a question names, with what follows it: "six cows", "12 hours", "€40", "20%", "half ten".
_NAMED_NUMBER = re.compile(
    r"(?P<money>[€£$]\s?)?(?<![\w-])(?P<n>\d[\d,.:]*(?!\d)|(?:one|two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve|fifteen|twenty|thirty|forty|fifty|sixty|hundred|thousand|dozen|once|twice)\b)"
    r"(?:(?:\s*|-)(?P<after>%|[a-z]+)(?:[\s-]+(?P<then>[a-z]+))?)?",
    re.IGNORECASE,
)
_HOURS_UNIT = re.compile(r"^(?:hours?|hrs?|h|minutes?|mins?)$", re.IGNORECASE)
_MONEY_UNIT = re.compile(r"^(?:euros?|eur|pounds?|gbp|dollars?|cents?|p)$", re.IGNORECASE)
_YEARS = re.compile(r"^(?:years?|yrs?)$", re.IGNORECASE)
_CLOCK_UNIT = re.compile(r"^(?:am|pm|o)$", re.IGNORECASE)
_FUNCTION_WORDS = frozenset(("a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "at", "is", "are", "per"))


def named_kinds(question: str) -> set[str]:
    """The kinds of the numbers ``question`` names: a count of something ("six cows") is ``count_of``,
    a bare number ("is it still 12?") is ``number`` (any kind of value)."""
    kinds: set[str] = set()
    for found in _NAMED_NUMBER.finditer(question):
        after = (found["after"] or "").lower()
        if re.fullmatch(_TIME_UNIT, found["then"] or "", re.IGNORECASE):
            after = found["then"].lower()  # "40 rental days"
        if _YEARS.match(after) and (found["then"] or "").lower() == "old":
            kinds.add("age")  # "my 17 year old cousin": a person's age, not a length of time or a count
        elif found["money"] or _MONEY_UNIT.match(after):
            kinds.add("money")
        elif after == "%" or after == "percent":
            kinds.add("percent")
        elif _HOURS_UNIT.match(after):
            kinds.add("hours")
        elif re.fullmatch(_TIME_UNIT, after):
            kinds.add("duration")
        elif _CLOCK_UNIT.match(after) or ":" in found["n"]:
            kinds.add("clock")
        elif re.fullmatch(_MEASURE_UNIT, after, re.IGNORECASE):
            kinds.add("measurement")  # "25 knots", "3 metres"
        elif after and after not in _FUNCTION_WORDS:
            kinds.add("count_of")
        else:
            kinds.add("number")
    return kinds


_NAMED_MAY_BE: dict[str, frozenset[str]] = {  # a named number's kind -> the fact value kinds it may be checking
    "money": frozenset({"money", "percent", "number"}),
    "percent": frozenset({"percent", "money", "number"}),
    "hours": frozenset({"hours", "duration", "clock", "number"}),
    "duration": frozenset({"duration", "hours", "number"}),
    "clock": frozenset({"clock", "hours", "duration", "number"}),  # "sealed at 6am, unpacked at 9pm": how long
    "count_of": frozenset({"number"}),
    "measurement": frozenset({"measurement", "number"}),
    "age": frozenset({"number"}),  # a minimum age is a plain number; a fact in weeks or nights is not an age
    "number": _NUMERIC_KINDS,
}


def _may_name(named: Set[str], value: str) -> bool:
    """Whether a number of the ``named`` kinds may be a value of kind ``value`` (the question checks it)."""
    return any(value in _NAMED_MAY_BE[kind] for kind in named)


# "Which bank account does ...?", "which form is ...?": a thing of the named sort, unless the sort is a value's.
_WHICH_THING = re.compile(
    r"(?:^|[.!?;,]\s+)(?:in\s+|on\s+|to\s+|into\s+)?(?:which|what) ((?:[\w-]+ ){1,5}?)"
    r"(?:do|does|did|is|are|was|were|should|must|can|will|would|has|have|gets?|goes)\b",
    re.IGNORECASE,
)
_VALUE_SORTS = frozenset(
    analyze(
        "day days week weeks month months year years date dates time times hour hours night nights minute minutes "
        "weekday number amount size level rate price fee charge cost figure limit percentage value age speed "
        "temperature weight height length distance band grade stage shift period season term discount deposit fine "
        "allowance wage pay salary"
    )
)


_NAMING_KINDS = frozenset({"person", "organisation", "phone", "email", "url", "password"})  # never a number


def asks_for_no_value(question: str, value: str | None) -> bool:
    """Whether ``question`` asks for a person, a place, a procedure or a quality while a fact's values
    are ``value`` (a count, a length of time, money, a time or a date): then it does not ask for them."""
    if value not in _NUMERIC_KINDS:
        return False
    asked = asked_kind(question)
    if asked is not None:
        return asked in _NAMING_KINDS
    if _ASKS_NO_VALUE.search(question):
        return True
    which = _WHICH_THING.search(question)
    if which and not set(analyze(which[1])) & _VALUE_SORTS:
        return True
    return _YES_NO.search(question) is not None and not _may_name(named_kinds(question), value)


def asks_or_names(question: str, value: str | None) -> bool:
    """Whether ``question`` asks for a value of kind ``value`` or names a number that may be one."""
    if value is None:
        return True
    asked = asked_kind(question)
    return (asked is not None and answers_asked(asked, value)) or _may_name(named_kinds(question), value)


def answers_asked(asked: str, value: str | None) -> bool:
    """Whether a fact whose values are ``value`` can answer a question asking for ``asked`` (unknown: yes)."""
    return value is None or value in ANSWERED_BY.get(asked, frozenset())


@dataclass(frozen=True)
class PassageText:
    """What :func:`unstated` reads of one leading passage."""

    text: str
    context: frozenset[str]  # heading path and note name terms
    holds: frozenset[str]  # every term the passage offers
    title: str = ""  # the heading path, as written ("Winter timetable Route 14X")


def unstated(question: str, idf: Mapping[str, float], leading: Sequence[PassageText]) -> AnswerType | None:
    """The type ``question`` asks for when none of the ``leading`` passages states a value of it."""
    kind = asked_type(question)
    if kind is None or not leading:
        return None
    stating = [p for p in leading if states_value(kind, idf, p.text, p.context, p.holds)]
    if not stating:
        return kind
    counted = counted_thing(question) if kind.name == "count" else None
    rate = asked_rate(question) if counted else None
    if (
        counted
        and any(holds_stem(p.holds, counted) for p in leading)
        and not any(counts(p.text, counted) for p in stating)
        and not (rate and any(counts_rate(p.text, counted, rate) for p in stating))
    ):
        return kind  # the notes name what is counted and never put a number on it
    priced = priced_thing(question) if kind.name == "money" else None
    if priced and not any(prices(p.text, p.context, priced) for p in stating):
        return kind  # prices appear, none beside the thing asked about
    attribute = asked_attribute(question)
    if attribute and not any(_names_attribute(p, kind, attribute) for p in stating):
        return kind  # values appear, none of the attribute asked about ("the rope speed of the Summit Express")
    role = asked_role(question) if kind.name == "person" else None
    if role and not any(names_role(p.text, p.context, role) for p in stating):
        return kind  # names appear, none beside the role asked about
    dimension = asked_dimension(question) if kind.name in _MEASURED_KINDS else None
    if dimension and not any(measures(p.text, dimension) for p in stating):
        return kind  # numbers appear, none in the units asked for ("emptied every 2 weeks" for "how many litres")
    holder = asked_holder(question) if kind.name in _HELD_KINDS else frozenset()
    if holder and not any(_names_attribute(p, kind, holder) for p in stating):
        return kind  # numbers appear, none beside whose number is asked ("the Markets Manager's mobile")
    if kind.name == "organisation" and not any(names_other_company(p.text, question) for p in stating):
        return kind  # the only company named is the one the question names itself
    if kind.name == "date" and _ASKS_DAY.search(question) and not any(_states_day(p) for p in stating):
        return kind  # a month or a year, not the day asked for ("will be held in January 2038")
    holiday = asked_holiday(question)
    if holiday and not any(names_holiday(p, holiday) for p in stating):
        return kind  # the usual closing time does not say when it closes on Christmas Eve
    if kind.name == "person" and _WHO_WON_PRIZE.search(question) and not any(_WON.search(p.text) for p in stating):
        return kind  # names appear, none of a winner ("astrophotography classes will be run by ...")
    if kind.name == "money" and _ASKS_RAISED.search(question) and not any(_RAISED.search(p.text) for p in stating):
        return kind  # "entry is 10 pounds" does not say what the Boxing Day swim raised
    if kind.name == "money" and _ASKS_PAY.search(question) and not any(_AMOUNT.search(p.text) for p in stating):
        return kind  # "volunteers swim free" does not say what lifeguards are paid
    if kind.name == "duration" and asks_retention(question) and not any(_states_retention(p) for p in stating):
        return kind  # lengths of time appear, none of keeping ("counts are kept in Deckcount", no period)
    if kind.name == "organisation":
        # a company named in the trade asked for ("who insures the vans?"), or, when the question names no trade,
        # beside its most specific word ("which company collects the confidential waste?")
        trade = asked_trade(question) or frozenset(filter(None, [_most_specific(idf, leading)]))
        if trade and not any(names_company_in_trade(p.text, p.context, question, trade) for p in stating):
            return kind
    return None


# "How many litres ...", "how much weight can ... lift", "the maximum vehicle height": what the value is
# measured in. A number in other units does not answer ("2 bays for vehicles up to 7.5 tonnes" is no height).
_ASKED_DIMENSION = tuple(
    (dimension, re.compile(asks, re.IGNORECASE))
    for dimension, asks in (
        (
            "weight",
            r"\bhow (?:many|much) (?:kg|kgs|kilos?|kilograms?|tonnes?|tons)\b|\bhow much weight\b|\bhow heavy\b|"
            r"\bwhat weight\b|\b(?:maximum|minimum|max|min) (?:[\w-]+ ){0,2}weight\b|\bweight limit\b",
        ),
        # a depth, a height or a width is a length the passage says it is ("a deep end of 2.2 metres"); a
        # distance ("the loop is 750 metres") does not say how deep the lake is
        ("depth", r"\bhow deep\b|\bwhat depth\b|\b(?:maximum|minimum|max|min) (?:[\w-]+ ){0,2}depth\b"),
        (
            "height",
            r"\bhow (?:tall|high)\b|\bwhat height\b|\b(?:maximum|minimum|max|min) (?:[\w-]+ ){0,2}height\b|"
            r"\bheight limit\b|\bheadroom\b",
        ),
        ("width", r"\bhow wide\b|\bwhat width\b|\b(?:maximum|minimum|max|min) (?:[\w-]+ ){0,2}width\b"),
        ("speed", r"\b(?:top|cruising|maximum|max|what) speed\b|\bspeed limit\b|\bhow fast (?:is|are|can|does|do)\b"),
        (
            "length",
            r"\bhow many (?:metres|meters|feet|inches|miles|kilometres|kilometers|km|centimetres|yards)\b|"
            r"\bwhat length\b",
        ),
        ("volume", r"\bhow many (?:litres|liters|gallons|millilitres|milliliters)\b|\bwhat volume\b"),
        ("power", r"\bin (?:watts|kilowatts|kw)\b|\bhow many (?:watts|kilowatts|kw)\b|\bwhat wattage\b"),
        ("area", r"\b(?:in|how many) (?:square (?:metres|meters|feet)|sq\.? ?(?:m|ft)|hectares|acres)\b|\bwhat area\b"),
    )
)
_MEASURED_KINDS = frozenset({"count", "measurement", "quantity"})  # "the landing fee per tonne" is a price
_UNITS = {
    "weight": r"kg|kgs|kilos?|kilograms?|g|grams?|tonnes?|tons?|t|lbs?",
    "length": _LENGTH_UNITS,
    "volume": r"l|litres?|liters?|ml|millilitres?|gallons?|m3|m\u00b3|cubic",
    "power": r"w|watts?|kw|kilowatts?|mw|megawatts?",
    "area": r"m2|m\u00b2|sq\.? ?m|sq\.? ?ft|square (?:metres?|meters?|feet|foot)|hectares?|ha|acres?",
    "speed": _SPEED_UNITS,
}
_MEASURED = {
    dimension: re.compile(rf"(?<![\w.]){_NUMBER}\s?-?(?:{units})\b", re.IGNORECASE)
    for dimension, units in _UNITS.items()
}
# a depth, a height or a width is a length said to be one ("a deep end of 2.2 metres", "stacked 4 high") or a
# bare one ("Junior at 80 cm"); a length said to be another ("reaches 38 kilometres from the mast", "40 by 20
# metres", "round the buoys and back, 750 metres") is not
_LENGTH_WORDS = {
    "depth": r"deep|depths?|shallow",
    "height": r"tall|high|heights?|headroom|clearance",
    "width": r"wide|widths?|narrow|across",
    "distance": r"long|lengths?|by|from|away|reach(?:es)?|distance|round|radius",
}
_LENGTH_NAMED = {
    dimension: re.compile(rf"\b(?:{words})\b|\b{_NUMBER}\s+(?:{words})\b", re.IGNORECASE)
    for dimension, words in _LENGTH_WORDS.items()
}


def asked_dimension(question: str) -> str | None:
    """What ``question`` asks a value to be measured in (``weight``, ``length``, ``volume``), or ``None``."""
    return next((dimension for dimension, asks in _ASKED_DIMENSION if asks.search(question)), None)


def measures(text: str, dimension: str) -> bool:
    """Whether ``text`` states a number in units of ``dimension`` ("7.5 tonnes", "2.1m", "200 litre"); a depth,
    a height or a width is a length named as one ("2.2 metres deep", "a height limit of 2.1m")."""
    if dimension not in _LENGTH_WORDS:
        return bool(_MEASURED[dimension].search(text))
    return any(_says_length_of(sentence, dimension) for sentence in _SENTENCE_END.split(text))


def _says_length_of(sentence: str, dimension: str) -> bool:
    """Whether ``sentence`` gives a length that is a ``dimension`` (named so, or a bare length)."""
    named = _LENGTH_NAMED[dimension].search(sentence)
    if named and _IS_NUMBER.match(named[0].split()[0]):
        return True  # "not stacked more than 4 high"
    if not _MEASURED["length"].search(sentence):
        return False
    return bool(named) or not any(_LENGTH_NAMED[other].search(sentence) for other in _LENGTH_WORDS)


# "What is the Markets Manager's mobile number?": whose number is asked; another person's does not answer.
_HELD_KINDS = frozenset({"phone", "email"})
_HOLDER = re.compile(
    r"\b(?:the\s+|our\s+)?((?:[\w-]+\s+){0,3}?[\w-]+)['\u2019]s\s+(?:[\w-]+\s+)?(?:phone|telephone|mobile|e-?mail|"
    r"extension|number|address)\b|\b(?:phone|telephone|mobile|e-?mail|extension) (?:number |address )?(?:of|for) "
    r"(?:the\s+|our\s+)?((?:[\w-]+\s*){1,4})",
    re.IGNORECASE,
)
_NOT_HOLDER = frozenset(analyze("what whats who is are the our my your their a an number call ring text"))


def asked_holder(question: str) -> frozenset[str]:
    """The index terms of whose phone number or email ``question`` asks (``market``, ``manag``); empty if unnamed."""
    found = _HOLDER.search(question)
    if found is None:
        return frozenset()
    return frozenset(analyze(found[1] or found[2])) - _NOT_HOLDER - TYPE_WORDS


# "Fish and Meat Row", "Weir Lane": capitalised words naming a place, not a company.
_PLACE = re.compile(
    r"\b(?:Row|Street|Road|Lane|Avenue|Square|Yard|Aisle|Quay|Pier|Wharf|Way|Place|Bay|Wing|Floor|Gate|Bridge|Park|"
    r"Hall|House|Station|Centre|Center|Room|Building|Block|Terrace|Close|Drive)$"
)


# "Which insurer ...", "who insures ...", "which cleaning company ...": the trade a company is asked for.
# A generic word ("company", "supplier", "who supplies") names no trade; the word before it may.
_GENERIC_TRADE = frozenset(
    analyze(
        "which what who company companies firm firms contractor contractors supplier suppliers supplies vendor "
        "vendors provider providers provides agency agencies delivers collector"
    )
)


# "Which company insures the vans?": a generic company named by what it does, as "who insures" is
_TRADE_DONE = re.compile(r"^\s*(?:will |would |should |does |do )?(insur|print|audit|clean|repair|servic|cater)\w*\b")


def asked_trade(question: str) -> frozenset[str]:
    """The index terms of the trade an organisation question asks for (``insur`` for "which insurance
    company", ``pub`` for "which pub"); empty when its words name none ("which company collects ...")."""
    found = _TYPE_NAMED["organisation"].asks.search(question)
    if found is None:
        return frozenset()
    *before, noun = analyze(found[0])  # "message broker": the broker is the trade, whatever it brokers
    if noun not in _GENERIC_TRADE:
        return frozenset({noun})
    done = _TRADE_DONE.search(question[found.end() :])  # "which company insures the vans?": who insures
    return frozenset(set(before) - _GENERIC_TRADE or ({done[1]} if done else set()))


def _most_specific(idf: Mapping[str, float], leading: Sequence[PassageText]) -> str | None:
    """The question's rarest word (type words aside) that a leading passage holds, or ``None``."""
    held = [term for term in idf if term not in TYPE_WORDS and any(holds_stem(p.holds, term) for p in leading)]
    return max(held, key=lambda term: (idf[term], term), default=None)


def names_company_in_trade(text: str, context: Set[str], question: str, trade: Set[str]) -> bool:
    """Whether a sentence of ``text`` names a company other than the question's and, with the heading path
    and the sentence before it, holds every ``trade`` term ("insured with Harbour Mutual" for ``insur``)."""
    sentences = _SENTENCE_END.split(text)
    for at, sentence in enumerate(sentences):
        if names_other_company(sentence, question) and all(
            holds_stem(_read_with(sentences, at, context), term) for term in trade
        ):
            return True
    return False


# "What time does the counter close on Christmas Eve?": a holiday asked about is named (or its date given)
# where the value is stated; the usual rule does not say what happens that day
_HOLIDAY = re.compile(
    r"\b(christmas eve|christmas day|boxing day|new year['\u2019]?s eve|new year['\u2019]?s day|"
    r"easter(?: sunday| monday)?|good friday|bank holidays?|whit monday|st\.? stephen['\u2019]?s day|"
    r"hallowe['\u2019]?en)\b",
    re.IGNORECASE,
)
_HOLIDAY_DATE = {
    "christmas eve": (12, 24),
    "christmas day": (12, 25),
    "boxing day": (12, 26),
    "new year's eve": (12, 31),
    "new year's day": (1, 1),
    "st stephen's day": (12, 26),
}


def asked_holiday(question: str) -> str | None:
    """The holiday ``question`` asks about ("christmas eve", "bank holiday"), or ``None``."""
    return next(iter(sorted(_holidays(question))), None)


def names_holiday(passage: PassageText, holiday: str) -> bool:
    """Whether ``passage`` (with its heading path) names ``holiday`` or gives its date."""
    texts = (passage.title, passage.text)
    day = _HOLIDAY_DATE.get(holiday)
    return any(holiday in _holidays(text) for text in texts) or (day is not None and names_day(texts, day))


def _holidays(text: str) -> set[str]:
    """The holidays ``text`` names, spelled one way ("new year's day", "bank holiday")."""
    spelled = (re.sub(r"['\u2019]", "'", found.lower()).replace("st. ", "st ") for found in _HOLIDAY.findall(text))
    return {re.sub(r"^bank holidays$", "bank holiday", holiday) for holiday in spelled}


# "Who won the astrophotography competition?": a winner is named as one
_WHO_WON_PRIZE = re.compile(r"\bwho won\b", re.IGNORECASE)
_WON = re.compile(
    r"\b(?:won|wins?|winners?|winning|prizes?|awards?|awarded|champions?|trophy|trophies)\b", re.IGNORECASE
)


# "How much did last year's Boxing Day swim raise?": money raised is stated as raised, a total or takings
_ASKS_RAISED = re.compile(
    r"\bhow much (?:did|do|does|will|has|have) [^?]*\b(?:raise|raised|bring in|brought in)\b", re.I
)
_RAISED = re.compile(r"\b(?:rais\w*|totall?\w*|takings|took|brought in|collected|made)\b", re.IGNORECASE)


# "What do lifeguards get paid an hour?": what someone earns is an amount, never "free" or a share
_ASKS_PAY = re.compile(
    r"\b(?:get|gets|are|is) paid\b|\bwages?\b|\bsalar(?:y|ies)\b|\bearns?\b|\brate of pay\b|\bpay rates?\b|"
    r"\bhourly (?:rate|pay)\b",
    re.IGNORECASE,
)
_AMOUNT = re.compile(_STATED_AMOUNT, re.IGNORECASE)


# "What date is the AGM?" asks for a day; "the AGM will be held in January 2038" names only its month.
_ASKS_DAY = re.compile(r"\b(?:what|which) (?:date|day)\b|\bon what date\b", re.IGNORECASE)
_STATED_DAY = re.compile(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b|"
    rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?!\d)|\b(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)\b|"
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|\b(?:today|tomorrow|tonight)\b",
    re.IGNORECASE,
)


def _states_day(passage: PassageText) -> bool:
    """Whether a sentence of ``passage`` stating a date names a day (not only a month or a year)."""
    return any(_STATED_DAY.search(sentence) for sentence in stating_sentences(passage.text, _TYPE_NAMED["date"]))


# "How long do we keep the door logs?", "how long is lost property held?": how long something is kept.
_RETENTION_ASKED = re.compile(
    r"\bhow long (?:do|does|should|must|will|are|is|have)\b(?:\s+[\w'\u2019-]+){0,6}?\s+"
    r"(?:keep|kept|hold|held|retain|retained|store|stored)\b|\bretention (?:period|time)\b",
    re.IGNORECASE,
)
_RETENTION_WORDS = frozenset(
    analyze(
        "keep kept keeps keeping hold held holds retain retained retention store stored delete deleted destroy "
        "destroyed"
    )
)


def asks_retention(question: str) -> bool:
    """Whether ``question`` asks how long something is kept (a retention period)."""
    return bool(_RETENTION_ASKED.search(question))


def _states_retention(passage: PassageText) -> bool:
    """Whether a sentence of ``passage`` stating a length of time says (with its heading path) what is kept."""
    duration = _TYPE_NAMED["duration"]
    return any(
        (passage.context | set(analyze(sentence))) & _RETENTION_WORDS
        for sentence in stating_sentences(passage.text, duration)
    )


def names_other_company(text: str, question: str) -> bool:
    """Whether a sentence of ``text`` names a company (not a place) other than those ``question`` names itself."""
    kind = _TYPE_NAMED["organisation"]
    named = set(analyze(question))
    return any(
        set(analyze(name)) - named
        for sentence in stating_sentences(text, kind)
        for name in kind.states.findall(sentence)
        if not _PLACE.search(name)
    )


# "What's the rope speed of the Summit Express?": the attribute asked is named before "of"; a value of
# another attribute of the same thing ("its cabins seat 8") does not answer.
_ATTRIBUTE = re.compile(
    r"\bwhat(?:'s| is| are| was)\s+(?:the\s+|its\s+|their\s+|our\s+|your\s+|my\s+)?((?:[\w-]+\s+){0,2}?[\w-]+)\s+"
    r"(?:of|for|on|in)\s+"
    r"(?:the\s+|a\s+|an\s+|our\s+)?[\w-]",
    re.IGNORECASE,
)


GENERIC_ATTRIBUTE = frozenset(  # words any attribute may carry, which a note states in other words
    analyze("limit rate daily real usual normal standard current typical size total maximum minimum max min")
)


def asked_attribute(question: str) -> frozenset[str]:
    """The index terms of the attribute a "what is the X of Y" question asks (``rope``, ``speed``), type
    words ("price", "time") left out; empty when it asks no such thing."""
    found = _ATTRIBUTE.search(question)
    if found is None:
        return frozenset()
    return frozenset(analyze(found[1])) - TYPE_WORDS - GENERIC_ATTRIBUTE


def _names_attribute(passage: PassageText, kind: AnswerType, attribute: Set[str]) -> bool:
    """Whether a sentence of ``passage`` stating a value of ``kind`` names the whole ``attribute``."""
    for sentence in stating_sentences(passage.text, kind):
        words = passage.context | set(analyze(sentence)) | _unit_attributes(sentence)
        if all(holds_stem(words, term) for term in attribute):
            return True
    return False


# "What's the speed limit on the fell road?": "15 miles an hour" names the speed by its unit
_SPEED = re.compile(rf"\b\d[\d,.]*\s?(?:{_SPEED_UNITS})\b", re.IGNORECASE)


def _unit_attributes(sentence: str) -> frozenset[str]:
    """The attribute a value's unit names ("15 miles an hour" is a speed)."""
    return frozenset(analyze("speed")) if _SPEED.search(sentence) else frozenset()


# "How deep is the deep end?", "how big is the till float?": the word after "how" names the asked type; "when
# was the unit first set up?": an adverb only stresses it
_HOW_WORD = re.compile(
    r"\bhow ([\w-]+)|\b(?:first|originally|ever|actually|exactly|usually|normally|currently)\b", re.IGNORECASE
)
WHOLE_QUESTION = 2  # a sentence naming every word of a question that names at least this many states its value


def names_whole_question(question: str, idf: Mapping[str, float], sentences: Sequence[str]) -> bool:
    """Whether one of the value-stating ``sentences`` (each after its heading path) holds every word of
    ``question`` (``idf``'s terms) but those naming the asked type or only stressing it, and the question
    names at least ``WHOLE_QUESTION`` ("The pool has a deep end of 2.2 metres" states how deep the deep end
    is, however far its embedding is from the question's)."""
    named = set(idf) & set(analyze(_HOW_WORD.sub(" ", question))) - TYPE_WORDS
    if len(named) < WHOLE_QUESTION:
        return False
    return any(all(holds_stem(words, term) for term in named) for words in map(set, map(analyze, sentences)))


def value_sentences(question: str, idf: Mapping[str, float], leading: Sequence[PassageText]) -> list[str]:
    """The sentences of the ``leading`` passages that state a value of the type ``question`` asks for
    about what it asks, each after its passage's heading path (empty when it asks for no type)."""
    kind = asked_type(question)
    if kind is None:
        return []
    return [
        f"{p.title}: {sentence.strip()}" if p.title else sentence.strip()
        for p in leading
        if states_value(kind, idf, p.text, p.context, p.holds)
        for sentence in stating_sentences(p.text, kind)
        if sentence.strip()
    ]
