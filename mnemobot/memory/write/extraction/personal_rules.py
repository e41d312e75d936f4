"""The statement rules: what a sentence of the user says about them and their world.

A table of data. Each rule is a pattern over one sentence, the item type and tag it
gives, and its confidence and salience. Confidence is the rule's own precision, set
against the promotion threshold (`write_path.PROMOTION_MIN_CONFIDENCE`, 0.75): explicit
first-person statements ("I prefer tea", "my sister lives in Oslo") score above it and
become durable; looser readings ("I'd rather", "we use") stay episodes. It belongs to
its pattern (changing one without the other breaks the balance), so it is not a
runtime setting. Where several rules match, the most confident one wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mnemobot.memory.store.items import ItemType


@dataclass(frozen=True, slots=True)
class StatementRule:
    """One kind of statement: a pattern over a sentence and what an item of it is worth."""

    type: ItemType
    pattern: re.Pattern[str]
    confidence: float
    salience: float
    tag: str
    # "after": the words after the match must name something; "before": the words
    # before it ("Jazz is my favourite"); None: the pattern is specific enough.
    needs_object: str | None = "after"


def _rule(
    item_type: ItemType,
    pattern: str,
    confidence: float,
    salience: float,
    tag: str,
    needs_object: str | None = "after",
) -> StatementRule:
    return StatementRule(
        item_type, re.compile(pattern, re.IGNORECASE), confidence, salience, tag, needs_object
    )


# The same builder for the rule tables of the other languages.
statement_rule = _rule


# "I", then adverbs that do not change the statement ("I really like").
_I = (
    r"\bi\s+(?:(?:really|also|just|truly|absolutely|totally|definitely|still|do|much"
    r"|genuinely)\s+)*"
)
_I_AM = r"\bi(?:'m|\s+am)\s+(?:(?:currently|still|now|also|actually|really)\s+)*"
# Short tags, so a rule stays on one line.
_F = "fact"
_P = "preference"
_RELATIVES = (
    r"(?:sister|brother|sibling|mother|mom|mum|father|dad|parents?|wife|husband|partner"
    r"|spouse|fianc[ée]e?|sons?|daughters?|kids?|children|child|baby|grand(?:ma|pa|mother"
    r"|father|parents?|son|daughter)|aunt|uncle|cousin|niece|nephew|(?:best\s+)?friend"
    r"|roommate|flatmate|boss|manager|colleague|coworker|co-worker|girlfriend|boyfriend"
    r"|family|dog|cat|pet|puppy|kitten|horse|bird|parrot|hamster|rabbit|bunny|fish)s?"
)
_PROFESSIONS = (
    r"(?:engineer|developer|programmer|coder|teacher|professor|nurse|doctor|physician"
    r"|student|designer|manager|writer|author|artist|painter|lawyer|scientist|researcher"
    r"|consultant|founder|owner|parent|mom|mum|dad|mother|father|musician|singer"
    r"|photographer|chef|cook|accountant|analyst|architect|counselor|counsellor|therapist"
    r"|psychologist|journalist|pilot|farmer|mechanic|electrician|plumber|carpenter"
    r"|pharmacist|dentist|veterinarian|vet|firefighter|officer|soldier|veteran|athlete"
    r"|coach|freelancer|entrepreneur|intern|volunteer|retiree|vegetarian|vegan)s?"
)

PERSONAL_RULES: tuple[StatementRule, ...] = (
    # Preferences.
    _rule(ItemType.PREFERENCE, _I + r"prefer\b", 0.9, 0.7, "preference"),
    _rule(ItemType.PREFERENCE, r"\bi(?:'d|\s+would)\s+(?:much\s+)?rather\b", 0.7, 0.6, _P),
    _rule(ItemType.PREFERENCE, _I + r"(?:like|love|adore|enjoy)\b", 0.85, 0.65, "preference"),
    _rule(
        ItemType.PREFERENCE,
        _I + r"(?:hate|dislike|detest|can't\s+stand|cannot\s+stand|don't\s+(?:really\s+)?"
        r"(?:like|enjoy|care\s+for)|do\s+not\s+(?:like|enjoy))\b",
        0.85,
        0.65,
        "dislike",
    ),
    _rule(ItemType.PREFERENCE, _I_AM + r"(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\b", 0.85, 0.65, _P),
    _rule(ItemType.PREFERENCE, _I_AM + r"(?:really\s+)?into\b", 0.8, 0.6, "preference"),
    _rule(
        ItemType.PREFERENCE,
        r"\bmy\s+(?:all[- ]time\s+|absolute\s+)?(?:favou?rite|fave)\s+[\w\s'-]{1,40}?"
        r"\s+(?:is|are)\b",
        0.85,
        0.7,
        "preference",
    ),
    _rule(
        ItemType.PREFERENCE,
        r"\b(?:is|are)\s+(?:still\s+)?my\s+(?:all[- ]time\s+|absolute\s+)?(?:favou?rites?|fave)\b",
        0.85,
        0.7,
        "preference",
        needs_object="before",
    ),
    # Facts about the person and their world.
    _rule(
        ItemType.PROJECT_FACT,
        r"\bmy\s+(?:[\w-]+\s+){0,2}?" + _RELATIVES + r"(?:\s+[\w'-]+){0,4}?\s+"
        r"(?:lives?|lived|works?|worked|studies|studied|is\s+named|was\s+named|named|called"
        r"|just\s+turned|turns?|moved|was\s+born|teaches|is\s+allergic|passed\s+away"
        r"|got\s+married|is\s+(?:a|an))\b",
        0.85,
        0.7,
        "fact",
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bmy\s+(?:[\w-]+\s+){0,2}?" + _RELATIVES + r"(?:\s+[\w'-]+){0,4}?\s+"
        r"(?:is|are|has|have|loves?|likes?|hates?|plays?|owns?|goes)\b",
        0.7,
        0.6,
        "fact",
    ),
    _rule(
        ItemType.PROJECT_FACT, r"\bi\s+(?:currently\s+)?work\s+(?:at|for|as|in)\b", 0.85, 0.7, _F
    ),
    _rule(ItemType.PROJECT_FACT, _I_AM + r"working\s+(?:at|for|as)\b", 0.85, 0.7, "fact"),
    _rule(
        ItemType.PROJECT_FACT,
        _I_AM + r"(?:a|an)\s+(?:[\w-]+\s+){0,2}?" + _PROFESSIONS + r"\b",
        0.85,
        0.7,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        _I_AM + r"(?:severely\s+|very\s+)?allergic\s+to\b|\bi\s+have\s+(?:an?\s+)?"
        r"(?:[\w-]+\s+)?allerg(?:y|ies)\b",
        0.9,
        0.85,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        _I_AM + r"(?:vegetarian|vegan|pescatarian|diabetic|lactose[- ]intolerant|celiac"
        r"|coeliac|gluten[- ]intolerant|pregnant|married|engaged|divorced|retired|single"
        r"|left[- ]handed|colou?r[- ]blind|deaf|blind)\b",
        0.85,
        0.75,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bi\s+(?:have|own|got|adopted)\s+(?:a|an|one|two|three|four|five|\d+)\s+"
        r"(?:[\w-]+\s+){0,3}?(?:named|called)\s+\w+",
        0.9,
        0.7,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bi\s+(?:have|own)\s+(?:a|an|one|two|three|four|five|\d+)\s+(?:[\w-]+\s+)?"
        + _RELATIVES
        + r"\b",
        0.85,
        0.65,
        "fact",
        needs_object=None,
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bmy\s+(?:[\w-]+\s+)?(?:birthday|anniversary|name|nickname|email|e-mail"
        r"|phone\s+number|address|age|blood\s+type|time\s*zone|pronouns|zodiac\s+sign)"
        r"\s+(?:is|are)\b",
        0.9,
        0.75,
        "fact",
    ),
    _rule(ItemType.PROJECT_FACT, r"\bi\s+was\s+born\s+(?:in|on|at)\b", 0.9, 0.7, "fact"),
    _rule(ItemType.PROJECT_FACT, _I_AM + r"\d{1,3}\s+(?:years?\s+old|y/?o)\b", 0.85, 0.6, _F, None),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bi\s+(?:currently\s+|still\s+)?live\s+(?:in|at|near|with|on|by)\b"
        r"|\bi(?:'ve|\s+have)\s+been\s+living\s+(?:in|at|near|with)\b"
        r"|\bi\s+grew\s+up\s+(?:in|on|near)\b|" + _I_AM + r"from\b",
        0.85,
        0.7,
        "fact",
    ),
    _rule(ItemType.PROJECT_FACT, r"\bi\s+(?:just\s+)?moved\s+(?:to|from)\b", 0.8, 0.65, "fact"),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bi\s+(?:study|speak|teach)\b|" + _I_AM + r"(?:studying|majoring\s+in)\b",
        0.8,
        0.6,
        "fact",
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\b(?:our|the|this|my)\s+(?:app|application|project|service|repo|repository|codebase"
        r"|backend|frontend|api|bot|server|database|db|stack|site|website|product|cluster"
        r"|ci|pipeline|company|team)\s+(?:is\s+written\s+in|is\s+built\s+(?:with|on)"
        r"|uses|runs\s+on|runs|depends\s+on|targets|deploys\s+to|is\s+deployed\s+(?:to|on)"
        r"|is\s+hosted\s+on|lives\s+in|is\s+based\s+on)\b",
        0.8,
        0.7,
        "fact",
    ),
    _rule(
        ItemType.PROJECT_FACT,
        r"\bwe(?:'re|\s+are)?\s+(?:currently\s+)?(?:use|using|run|running|deploy|host|hosting)\b",
        0.7,
        0.6,
        "fact",
    ),
    # Decisions.
    _rule(
        ItemType.DECISION,
        r"\b(?:we|i)(?:'ve|\s+have)?\s+(?:finally\s+|just\s+)?decided\b"
        r"|\blet'?s\s+(?:go\s+with|use|stick\s+with|switch\s+to)\b"
        r"|\bwe(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to)\s+(?:use|go\s+with"
        r"|stick\s+with|switch\s+to|adopt|move\s+to|migrate\s+to)\b"
        r"|\b(?:we|i)(?:'re|'m|\s+are|\s+am)\s+going\s+with\b|\bi(?:'ll|\s+will)\s+go\s+with\b"
        r"|\bwe\s+(?:agreed|chose|settled\s+on|picked)\b|\b(?:the|our|my)\s+decision\s+(?:is|was)\b",
        0.85,
        0.75,
        "decision",
    ),
    # Task state.
    _rule(ItemType.TASK_STATE, _I_AM + r"working\s+on\b", 0.8, 0.6, "task"),
    _rule(
        ItemType.TASK_STATE,
        r"\bnext,?\s+i(?:'ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to|\s+need\s+to)\b"
        r"|\b(?:my|the|our)\s+next\s+step\s+(?:is|will\s+be)\b"
        r"|\bi(?:'m|\s+am)\s+planning\s+to\b|\bi\s+plan\s+to\b|\bi\s+still\s+(?:need|have)\s+to\b"
        r"|\bi(?:'m|\s+am)\s+in\s+the\s+middle\s+of\b|\bi(?:'m|\s+am)\s+halfway\s+through\b",
        0.8,
        0.55,
        "task",
    ),
    _rule(ItemType.TASK_STATE, r"(?:^|\s)(?:TODO|todo)\b:?", 0.8, 0.55, "task"),
    _rule(
        ItemType.TASK_STATE,
        r"\bi(?:'ve|\s+have)\s+(?:just\s+)?(?:finished|completed|started|shipped|released)\b"
        r"|" + _I_AM + r"(?:learning|building|writing|preparing\s+for|training\s+for)\b",
        0.7,
        0.5,
        "task",
    ),
)
