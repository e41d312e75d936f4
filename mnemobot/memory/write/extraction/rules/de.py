"""German statement rules: what a user's German sentence says about them (data).

Confidences mean what they mean for the English rules (memory.extraction.personal_rules).
German puts verbs last in many clauses ("Wir haben uns für Postgres entschieden"), so
several rules carry their object inside the match (`needs_object=None`); the statement
check then asks the whole sentence to name two things.
"""

from __future__ import annotations

import re

from mnemobot.memory.store.items import ItemType
from mnemobot.memory.write.extraction.language import GERMAN, LanguageRules, word_set
from mnemobot.memory.write.extraction.personal_rules import statement_rule

_F = "fact"
_P = "preference"
_ADVERBS = (
    r"(?:(?:wirklich|sehr|total|echt|auch|einfach|schon|noch|besonders|absolut|ja|momentan"
    r"|derzeit|gerade|jetzt|zurzeit|inzwischen|mittlerweile|seit\s+[\w-]+(?:\s+jahren)?)\s+)*"
)
_I = r"\bich\s+" + _ADVERBS
_MY = r"\b(?:mein|meine|meinen|meinem|meiner|meines)\s+(?:[\w-]+\s+){0,2}?"
_RELATIVES = (
    r"(?:frau|mann|ehefrau|ehemann|partner(?:in)?|freundin|freund|verlobte[rn]?|schwester"
    r"|bruder|mutter|mama|vater|papa|eltern|sohn|tochter|kinder|kind|oma|opa|großmutter"
    r"|großvater|tante|onkel|cousin|cousine|nichte|neffe|chef(?:in)?|kollege|kollegin"
    r"|mitbewohner(?:in)?|nachbar(?:in)?|hund|hündin|katze|kater|haustier|welpe|kätzchen"
    r"|pferd|vogel|papagei|hamster|kaninchen|fisch)(?:e|en|s|es|n)?"
)
_PROFESSIONS = (
    r"[\w-]*(?:entwickler|ingenieur|programmierer|lehrer|arzt|ärztin|pfleger|krankenschwester"
    r"|student|designer|anwalt|anwältin|manager|koch|köchin|verkäufer|wissenschaftler|forscher"
    r"|berater|architekt|journalist|künstler|musiker|fotograf|buchhalter|rentner|vegetarier"
    r"|veganer|informatiker|tischler|elektriker|mechaniker|polizist|pilot|autor|schriftsteller"
    r"|therapeut|psychologe|erzieher|beamter|beamtin|freiberufler|unternehmer|gründer"
    r"|selbstständig|selbständig)(?:in|innen)?\b"
)

PERSONAL = (
    statement_rule(ItemType.PREFERENCE, _I + r"bevorzuge\b", 0.9, 0.7, _P),
    statement_rule(
        ItemType.PREFERENCE, r"\bich\s+ziehe\s+(?:[\w-]+\s+){1,3}?vor\b", 0.9, 0.7, _P, None
    ),
    statement_rule(
        ItemType.PREFERENCE, r"\bich\s+(?!bin\b|habe\b|hab\b)[\w-]+\s+lieber\b", 0.9, 0.7, _P
    ),
    statement_rule(ItemType.PREFERENCE, _I + r"(?:liebe|mag|vergöttere)\b", 0.85, 0.65, _P),
    statement_rule(
        ItemType.PREFERENCE,
        r"\bich\s+(?!bin\b|habe\b|hab\b|würde\b)[\w-]+\s+(?:sehr\s+|total\s+|echt\s+)?"
        r"(?:gerne?|am\s+liebsten)\b",
        0.85,
        0.65,
        _P,
    ),
    statement_rule(
        ItemType.PREFERENCE,
        _I + r"(?:hasse|verabscheue|mag\s+(?:kein(?:e|en|er)?|nicht))\b",
        0.85,
        0.65,
        "dislike",
    ),
    statement_rule(
        ItemType.PREFERENCE,
        r"\b(?:mein|meine|meinen)\s+(?:absolut(?:e|er|es)?\s+)?lieblings[\w-]*\s+"
        r"(?:ist|sind|heißt|heisst)\b",
        0.85,
        0.7,
        _P,
    ),
    statement_rule(
        ItemType.PREFERENCE,
        r"\bich\s+bin\s+(?:ein\s+|eine\s+)?(?:großer\s+|riesiger\s+)?fan\s+von\b",
        0.85,
        0.65,
        _P,
    ),
    # Where they live and come from.
    statement_rule(
        ItemType.PROJECT_FACT,
        _I + r"(?:wohne|lebe)\s+" + _ADVERBS + r"(?:[\w-]+\s+){0,2}?(?:in|im|bei|nahe|am|an|auf|mit"
        r"|zusammen"
        r"|außerhalb|ausserhalb)\b",
        0.85,
        0.7,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT, r"\bich\s+komme\s+(?:ursprünglich\s+)?aus\b", 0.85, 0.7, _F
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bich\s+(?:bin|wurde)\s+(?:[\w-]+\s+){0,2}?(?:in|im|auf|am)\s+(?:[\w-]+\s+){1,4}?"
        r"(?:geboren|aufgewachsen)\b",
        0.9,
        0.7,
        _F,
        needs_object=None,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bich\s+bin\s+(?:[\w-]+\s+){0,3}?nach\s+[\w-]+\s+(?:gezogen|umgezogen)\b",
        0.8,
        0.65,
        _F,
        needs_object=None,
    ),
    # Work and study.
    statement_rule(
        ItemType.PROJECT_FACT,
        _I + r"arbeite\s+" + _ADVERBS + r"(?:[\w-]+\s+){0,2}?(?:bei|als|für|fuer|in|im)\b",
        0.85,
        0.7,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bich\s+bin\s+(?:von\s+beruf\s+)?(?!kein\w*\b|nicht\b)(?:ein\s+|eine\s+)?"
        r"(?:[\w-]+\s+)?" + _PROFESSIONS,
        0.85,
        0.7,
        _F,
        needs_object=None,
    ),
    statement_rule(
        ItemType.PROJECT_FACT, r"\bich\s+(?:studiere|spreche|unterrichte)\b", 0.8, 0.6, _F
    ),
    # Family, partner and pets.
    statement_rule(
        ItemType.PROJECT_FACT,
        _MY + _RELATIVES + r"(?:\s+[\w'-]+){0,4}?\s+(?:heißt|heisst|heißen|wohnt|wohnen|lebt"
        r"|leben|arbeitet|arbeiten|studiert|ist\s+(?:ein|eine)|ist\s+allergisch"
        r"|wurde\s+geboren|kommt\s+aus|ist\s+\d+)\b",
        0.85,
        0.7,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        _MY + _RELATIVES + r"(?:\s+[\w'-]+){0,4}?\s+(?:ist|sind|hat|haben|mag|mögen|liebt"
        r"|lieben|spielt|spielen)\b",
        0.7,
        0.6,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bich\s+bin\s+(?:[\w-]+\s+){0,3}?(?:verheiratet|verlobt|geschieden|ledig|single"
        r"|schwanger|laktoseintolerant|glutenintolerant|diabetiker(?:in)?|linkshänder(?:in)?"
        r"|farbenblind|in\s+rente|pensioniert)\b",
        0.85,
        0.75,
        _F,
        needs_object=None,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bich\s+habe\s+(?:ein|eine|einen|zwei|drei|vier|fünf|\d+)\s+(?:[\w-]+\s+)?"
        + _RELATIVES
        + r"\b",
        0.85,
        0.65,
        _F,
        needs_object=None,
    ),
    # Health and diet.
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bich\s+bin\s+(?:[\w-]+\s+)?allergisch\s+(?:gegen|auf)\b",
        0.9,
        0.85,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bich\s+habe\s+(?:eine\s+)?[\w-]*allergie\b",
        0.9,
        0.85,
        _F,
        needs_object=None,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bich\s+(?:esse|trinke|vertrage)\s+(?:kein(?:e|en)?|nicht)\b",
        0.85,
        0.75,
        _F,
    ),
    # Name, age, contacts.
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\b(?:mein|meine)\s+(?:telefonnummer|handynummer|nummer|handy|telefon"
        r"|e-mail(?:-adresse)?|email(?:-adresse)?|mailadresse|adresse|anschrift|geburtstag"
        r"|name|spitzname|blutgruppe|zeitzone)\s+(?:ist|lautet)\b",
        0.9,
        0.75,
        _F,
    ),
    statement_rule(ItemType.PROJECT_FACT, r"\bich\s+hei(?:ß|ss)e\b", 0.9, 0.75, _F),
    statement_rule(
        ItemType.PROJECT_FACT, r"\bich\s+bin\s+\d{1,3}\s+jahre\s+alt\b", 0.85, 0.6, _F, None
    ),
    # The project.
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\b(?:unser|unsere|mein|meine|das|die|der)\s+(?:app|anwendung|projekt|dienst|service"
        r"|repo|repository|backend|frontend|api|bot|server|datenbank|stack|website|seite"
        r"|produkt|cluster|pipeline|firma|team)\s+(?:ist\s+in\s+[\w+#.-]+\s+geschrieben"
        r"|läuft\s+auf|basiert\s+auf|nutzt|verwendet|benutzt|hängt\s+von)",
        0.8,
        0.7,
        _F,
        needs_object=None,
    ),
    statement_rule(ItemType.PROJECT_FACT, r"\bwir\s+(?:nutzen|verwenden|benutzen)\b", 0.7, 0.6, _F),
    # Decisions.
    statement_rule(
        ItemType.DECISION,
        r"\b(?:wir|ich)\s+(?:haben|habe)\s+(?:uns\s+)?(?:[\w-]+\s+){0,3}?(?:entschieden"
        r"|beschlossen|geeinigt|festgelegt)\b|\b(?:wir|ich)\s+(?:entscheiden|entschieden)"
        r"\s+uns\b|\blass(?:t)?\s+uns\s+(?:[\w-]+\s+){0,3}?(?:nehmen|verwenden|benutzen"
        r"|nutzen|einsetzen)\b|\bwir\s+werden\s+(?:[\w-]+\s+){1,4}?(?:verwenden|benutzen"
        r"|nutzen|nehmen|einsetzen)\b|\b(?:die|unsere|meine)\s+entscheidung\s+(?:ist|lautet"
        r"|war|fiel)\b|\bwir\s+bleiben\s+bei\b",
        0.85,
        0.75,
        "decision",
        needs_object=None,
    ),
    # Task state.
    statement_rule(
        ItemType.TASK_STATE, _I + r"arbeite\s+" + _ADVERBS + r"(?:an|am)\b", 0.8, 0.6, "task"
    ),
    statement_rule(
        ItemType.TASK_STATE, r"\bich\s+(?:plane|habe\s+vor|muss\s+noch)\b", 0.8, 0.55, "task"
    ),
)

# "From now on": an order may follow it ("Ab jetzt benutze keine Emojis"), as in English.
_FROM_NOW_ON = (
    r"(?:ab\s+jetzt|von\s+nun\s+an|ab\s+sofort|ab\s+heute|künftig|zukünftig|in\s+zukunft)"
)
_LEAD = (
    r"^(?:(?:bitte|und|auch|übrigens|merk\s+dir|denk\s+dran|wichtig|ok|okay|"
    + _FROM_NOW_ON
    + r")[,:!]?\s+)*"
)
# First words that make "X nie/immer ..." a statement, not an order.
_NOT_IMPERATIVE = (
    r"(?:ich|du|er|sie|es|wir|ihr|das|der|die|dies\w*|man|heute|morgen|gestern|jetzt|ja|nein"
    r"|so|aber|und|oder|also|dann|da|hier|dort|was|wie|wo|wer|mein\w*|dein\w*|sein\w*"
    r"|unser\w*|ein\w*|kein\w*|nie|niemals|immer|danke|gut|schade|bis)"
)

GERMAN_RULES = LanguageRules(
    code=GERMAN,
    personal=PERSONAL,
    constraint_strong=re.compile(
        r"\b(?:ab\s+jetzt|von\s+nun\s+an|ab\s+sofort|ab\s+heute|künftig|zukünftig"
        r"|in\s+zukunft|ist\s+verboten|sind\s+verboten|ist\s+pflicht|nicht\s+erlaubt"
        r"|darf\s+nie|dürfen\s+nie|darf\s+nicht|dürfen\s+nicht|müssen\s+immer|muss\s+immer"
        r"|muss\s+stets|müssen\s+stets)\b",
        re.IGNORECASE,
    ),
    constraint_order=re.compile(
        _LEAD + r"(?:(?!" + _NOT_IMPERATIVE + r"\b)[\w-]+\s+(?:(?:mir|uns|bitte|du)\s+)?"
        r"(?:niemals|nie|immer|stets|nur|keine?n?|nichts|nicht)\b"
        r"|(?:niemals|nie|immer|stets|nur|nicht)\s+(?!.*\b(?:ich|wir|du|er|es|man|mir|mich"
        r"|uns)\b)(?:[\w-]+\s+){0,5}?[\w-]+en\s*[.!]*\s*$"
        # As in English, "from now on" and an order of answering ("Ab jetzt antworte kurz").
        r"|" + _FROM_NOW_ON + r"[,:]?\s+(?:bitte,?\s+)?(?:antworte|schreib|schreibe|benutze"
        r"|verwende|nutze|sprich|rede|nenn|nenne)\b(?!\s+(?:ich|wir|er|sie|es|man)\b)"
        # Or the infinitive at its end, as an order is said with "bitte" ("Ab jetzt bitte
        # kurz antworten"); without "bitte" it may be a plan ("ab jetzt öfter antworten"),
        # and with others named it is theirs to do ("bitte alle schneller antworten").
        r"|" + _FROM_NOW_ON + r"[,:]?\s+bitte\s+(?!.*\b(?:alle|allen|jede[rnms]?|ihr|wir|sie"
        r"|man)\b)(?:[\w-]+\s+){0,6}?(?:antworten|schreiben"
        r"|benutzen|verwenden|sprechen)\s*[.!]*\s*$)",
        re.IGNORECASE,
    ),
    constraint_soft=re.compile(
        r"\bwir\s+(?:[\w-]+\s+)?(?:immer|nie|niemals|stets|müssen|dürfen\s+nicht)\b"
        r"|\b(?:jede[rsn]?|alle)\s+[\w-]+\s+(?:muss|müssen|braucht|brauchen)\b",
        re.IGNORECASE,
    ),
    not_constraint=re.compile(
        r"^(?:keine\s+sorge|mach\s+dir\s+keine|kein\s+problem|keine\s+ursache|nie\s+im\s+leben"
        r"|vergiss\s+es|nicht\s+schlimm|immer\s+gerne?)"
        r"|\bich\s+(?:muss|darf|kann|soll|sollte)\b"
        r"|\bdu\s+musst\s+(?:unbedingt\s+)?(?:[\w-]+\s+){0,3}?(?:probieren|sehen|besuchen"
        r"|testen|lesen|hören|kommen)\b",
        re.IGNORECASE,
    ),
    question=re.compile(
        r"^(?:(?:und|aber|also|sag\s+mal|übrigens|na)[,\s]+)*(?:was|warum|wieso|weshalb|wie"
        r"|wann|wo|woher|wohin|wer|wen|wem|wessen|welche[rsmn]?|(?:hast|hat|habt|haben|bist"
        r"|ist|sind|seid|kannst|kann|können|könntest|würdest|wirst|wird|magst|willst|soll"
        r"|sollte|sollen|gibt|weißt|kennst|darf|darfst|muss|musst|wohnst|arbeitest)\s+"
        r"(?:du|ihr|sie|es|ich|wir|man|er|dein\w*|mein\w*|der|die|das))\b",
        re.IGNORECASE,
    ),
    hedge=re.compile(
        r"\b(?:vielleicht|wahrscheinlich|möglicherweise|eventuell|vermutlich|ich\s+glaube"
        r"|glaube\s+ich|ich\s+denke|denke\s+ich|ich\s+vermute|irgendwie|manchmal"
        r"|ab\s+und\s+zu|früher|nicht\s+sicher|keine\s+ahnung|würde|würden|wäre|hätte"
        r"|könnte|ich\s+schätze|anscheinend|scheinbar)\b",
        re.IGNORECASE,
    ),
    hypothetical=re.compile(
        r"^(?:(?:und|aber)\s+)?(?:wenn|falls|angenommen|stell\s+dir\s+vor|was\s+wäre)\b",
        re.IGNORECASE,
    ),
    fillers=word_set(
        "ich mich mir mein meine meinen meinem meiner du dich dir dein deine er sie es ihn "
        "ihm ihr wir uns unser unsere euch man der die das dem den des ein eine einen einem "
        "einer eines kein keine und oder aber doch auch so sehr ja nein nicht noch schon nur "
        "mal dann da hier dort jetzt heute gerade immer nie zu zum zur im in am an auf aus "
        "bei mit nach von vor für über unter um bis ist bin bist sind seid war waren sein "
        "habe hast hat haben hatte werden wird würde kann könnte muss soll will mag gern "
        "gerne lieber wirklich total echt einfach etwas alles was wie dies diese dieser "
        "dieses"
    ),
    deictic=word_set("es dies dich dir ihn ihm sie euch alles da hier dort so"),
    leading=word_set("wirklich sehr total echt auch einfach schon besonders absolut so ja voll"),
    small_talk=word_set(
        "hallo hi hey danke dankeschön vielen dank bitte bitteschön tschüss tschüs ciao servus "
        "moin gut super toll klasse prima okay ok ja nein genau stimmt alles klar morgen guten "
        "tag abend nacht gute schönen schöner wochenende bis später bald cool naja aha ach "
        "echt wirklich sehr dir ihnen gern gerne geschehen verstanden passt schön freut mich "
        "hallöchen jo jep nö nee perfekt wunderbar und auch so"
    ),
)
