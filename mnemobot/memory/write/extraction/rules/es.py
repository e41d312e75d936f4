"""Spanish statement rules: what a user's Spanish sentence says about them (data).

Confidences mean what they mean for the English rules (memory.extraction.personal_rules).
Spanish drops the subject ("Vivo en Madrid", "Trabajo en Google"), so first-person verbs
count at the start of a sentence or after "yo"/"y"/"pero". Interrogatives carry an
accent ("dónde", "qué") that the conjunctions ("donde", "que") have not; a question
opens with "¿".
"""

from __future__ import annotations

import re

from mnemobot.memory.store.items import ItemType
from mnemobot.memory.write.extraction.language import SPANISH, LanguageRules, word_set
from mnemobot.memory.write.extraction.personal_rules import statement_rule

_F = "fact"
_P = "preference"
_ADVERBS = (
    r"(?:(?:ahora|actualmente|también|tambien|todavía|todavia|aún|aun|ya|realmente"
    r"|de\s+verdad|hoy)\s+)*"
)
_I = r"(?:^|[,;:]\s*|\b(?:yo|y|pero|pues|bueno)\s+)" + _ADVERBS
_MY = r"\bmis?\s+(?:[\w-]+\s+)?"
_RELATIVES = (
    r"(?:esposa|esposo|mujer|marido|pareja|novia|novio|prometid[oa]|hermana|hermano|madre"
    r"|mamá|mama|padre|papá|padres|hij[oa]|abuel[oa]|tí[oa]|prim[oa]|sobrin[oa]"
    r"|mejor\s+amig[oa]|amig[oa]|jefe|jefa|compañer[oa]|colega|vecin[oa]|perrit[oa]|perr[oa]"
    r"|gatit[oa]|gat[oa]|mascota|caballo|loro|hámster|conejo|pájaro|pez)s?"
)
_PROFESSIONS = (
    r"(?:ingenier[oa]|desarrollador(?:a)?|programador(?:a)?|profesor(?:a)?|maestr[oa]"
    r"|médic[oa]|medic[oa]|doctor(?:a)?|enfermer[oa]|estudiante|diseñador(?:a)?|abogad[oa]"
    r"|escritor(?:a)?|artista|músic[oa]|cociner[oa]|chef|contador(?:a)?|arquitect[oa]"
    r"|periodista|científic[oa]|investigador(?:a)?|gerente|veterinari[oa]|jubilad[oa]"
    r"|vegetarian[oa]|vegan[oa]|fotógraf[oa]|psicólog[oa]|camarer[oa]|policía|bomber[oa]"
    r"|analista|consultor(?:a)?|emprendedor(?:a)?|autónom[oa]|freelance|piloto|actor|actriz"
    r"|traductor(?:a)?)s?\b"
)

PERSONAL = (
    statement_rule(ItemType.PREFERENCE, r"\b(?:yo\s+)?prefiero\b", 0.9, 0.7, _P),
    statement_rule(
        ItemType.PREFERENCE,
        r"(?<!no\s)\bme\s+(?:encanta|encantan|gusta|gustan|fascina|fascinan|chifla)\b"
        r"|" + _I + r"(?:adoro|amo)\b",
        0.85,
        0.65,
        _P,
    ),
    statement_rule(
        ItemType.PREFERENCE,
        r"\bno\s+me\s+(?:gusta|gustan)\b|" + _I + r"(?:odio|detesto|no\s+soporto|no\s+aguanto)\b",
        0.85,
        0.65,
        "dislike",
    ),
    statement_rule(
        ItemType.PREFERENCE,
        r"\bmis?\s+(?:[\w-]+\s+){0,2}?favorit[oa]s?\s+(?:es|son|era)\b",
        0.85,
        0.7,
        _P,
    ),
    statement_rule(
        ItemType.PREFERENCE, r"\bsoy\s+(?:muy\s+|muy\s+muy\s+)?fan\s+de\b", 0.85, 0.65, _P
    ),
    # Where they live and come from.
    statement_rule(
        ItemType.PROJECT_FACT,
        _I + r"vivo\s+(?:en|con|cerca|al\s+lado|junto)\b",
        0.85,
        0.7,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT, r"(?<!no\s)\bsoy\s+(?:originari[oa]\s+)?de\b", 0.85, 0.7, _F
    ),
    statement_rule(ItemType.PROJECT_FACT, r"\bnac[ií]\s+en\b", 0.9, 0.7, _F),
    statement_rule(ItemType.PROJECT_FACT, r"\bcrec[ií]\s+en\b", 0.85, 0.7, _F),
    statement_rule(ItemType.PROJECT_FACT, r"\bme\s+mud[ée]\s+(?:a|de)\b", 0.8, 0.65, _F),
    # Work and study.
    statement_rule(
        ItemType.PROJECT_FACT,
        _I + r"trabajo\s+(?:[\w-]+\s+)??(?:en|para|como|de|con|desde)\b",
        0.85,
        0.7,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"(?<!no\s)\bsoy\s+(?:un\s+|una\s+)?(?:[\w-]+\s+)?" + _PROFESSIONS,
        0.85,
        0.7,
        _F,
        needs_object=None,
    ),
    statement_rule(ItemType.PROJECT_FACT, _I + r"(?:estudio|hablo|enseño)\b", 0.8, 0.6, _F),
    # Family, partner and pets.
    statement_rule(
        ItemType.PROJECT_FACT,
        _MY + _RELATIVES + r"(?:\s+[\w'-]+){0,3}?\s+(?:se\s+llaman?|vive|viven|trabaja"
        r"|trabajan|estudia|estudian|es\s+(?:un|una)|es\s+al[ée]rgic[oa]|naci[óo]|tiene\s+\d+"
        r"|es\s+de)\b",
        0.85,
        0.7,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        _MY + _RELATIVES + r"(?:\s+[\w'-]+){0,3}?\s+(?:es|son|tiene|tienen|juega|juegan|ama"
        r"|adora|le\s+gusta)\b",
        0.7,
        0.6,
        _F,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bestoy\s+(?:casad[oa]|comprometid[oa]|divorciad[oa]|embarazada|jubilad[oa])\b"
        r"|\bsoy\s+(?:solter[oa]|viud[oa]|cel[ií]ac[oa]|diab[ée]tic[oa]|zurd[oa]"
        r"|intolerante\s+a\s+la\s+lactosa)\b",
        0.85,
        0.75,
        _F,
        needs_object=None,
    ),
    statement_rule(
        ItemType.PROJECT_FACT,
        r"(?<!no\s)\btengo\s+(?:un|una|dos|tres|cuatro|cinco|\d+)\s+(?:[\w-]+\s+)?"
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
        r"\bsoy\s+(?:muy\s+)?al[ée]rgic[oa]\s+a\b|\btengo\s+(?:una\s+)?alergia\s+(?:a|al)\b",
        0.9,
        0.85,
        _F,
    ),
    statement_rule(ItemType.PROJECT_FACT, r"\bno\s+(?:como|bebo|tomo)\b", 0.85, 0.75, _F),
    # Name, age, contacts.
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\bmi\s+(?:n[úu]mero(?:\s+de\s+(?:tel[ée]fono|m[óo]vil|celular))?|tel[ée]fono"
        r"|m[óo]vil|celular|correo(?:\s+electr[óo]nico)?|email|e-mail|direcci[óo]n|cumpleaños"
        r"|nombre|apodo|grupo\s+sangu[íi]neo)\s+es\b",
        0.9,
        0.75,
        _F,
    ),
    statement_rule(ItemType.PROJECT_FACT, r"\bme\s+llamo\b", 0.9, 0.75, _F),
    statement_rule(ItemType.PROJECT_FACT, r"\btengo\s+\d{1,3}\s+años\b", 0.85, 0.6, _F, None),
    # The project.
    statement_rule(
        ItemType.PROJECT_FACT,
        r"\b(?:nuestr[oa]|mi|el|la|este|esta)\s+(?:app|aplicaci[óo]n|proyecto|servicio|repo"
        r"|repositorio|backend|frontend|api|bot|servidor|base\s+de\s+datos|stack|sitio|web"
        r"|producto|cl[úu]ster|pipeline|empresa|equipo)\s+(?:est[áa]\s+escrit[oa]\s+en|usa"
        r"|utiliza|corre\s+en|funciona\s+con|depende\s+de|se\s+despliega\s+en"
        r"|est[áa]\s+basad[oa]\s+en)\b",
        0.8,
        0.7,
        _F,
    ),
    statement_rule(ItemType.PROJECT_FACT, r"\b(?:usamos|utilizamos)\b", 0.7, 0.6, _F),
    # Decisions.
    statement_rule(
        ItemType.DECISION,
        r"\b(?:hemos|he)\s+decidido\b|\b(?:decidimos|decid[íi]|acordamos|elegimos|escogimos"
        r"|optamos\s+por|nos\s+quedamos\s+con)\b|\bvamos\s+a\s+(?:usar|utilizar"
        r"|quedarnos\s+con|cambiar\s+a|migrar\s+a|ir\s+con|adoptar)\b|\b(?:usaremos"
        r"|utilizaremos|adoptaremos|usemos)\b|\bla\s+decisi[óo]n\s+(?:es|fue)\b",
        0.85,
        0.75,
        "decision",
    ),
    # Task state.
    statement_rule(ItemType.TASK_STATE, r"\bestoy\s+trabajando\s+en\b", 0.8, 0.6, "task"),
    statement_rule(
        ItemType.TASK_STATE,
        r"\b(?:planeo|tengo\s+planeado|tengo\s+pensado)\b|\b(?:todav[íi]a|a[úu]n)\s+tengo\s+que\b",
        0.8,
        0.55,
        "task",
    ),
)

# "From now on": an order may follow it ("A partir de ahora, no uses emojis").
_FROM_NOW_ON = r"(?:a\s+partir\s+de\s+ahora|de\s+ahora\s+en\s+adelante|desde\s+ahora|en\s+adelante)"
_LEAD = (
    r"^(?:(?:por\s+favor|y|además|recuerda|importante|ok|vale|oye|" + _FROM_NOW_ON + r")[,:!]?\s+)*"
)
# An imperative with "me"/"nos" joined to it, which then carries a written accent
# ("respóndeme", "escríbenos", "contéstame"), or one too short to need it ("dime").
# Without the accent it is another word ("come", "mismo"): none is an order.
_IMPERATIVE_TO_ME = r"(?:[\w-]*[áéíóú][\w-]*(?:me|nos)|dime|dame|hazme|ponme)\b"
# "Nunca me respondas", "no me uses": an order against something done to the speaker
# takes the subjunctive, which for most verbs is also a statement's form; the verbs of
# answering are listed, so "nunca me ha gustado" or "nunca me dejas hablar" stay no order.
_NOT_TO_ME = (
    r"(?:me|nos)\s+(?:respondas|contestes|hables|escribas|uses|utilices|env[ií]es|mandes"
    r"|digas|des|pongas|hagas|muestres|incluyas|llames|sugieras|recomiendes|expliques"
    r"|traduzcas|corrijas|interrumpas|tutees|trates)\b"
)
_ASKED_VERB = r"(?:usa|utiliza|responde|contesta|escribe|habla)"
_ANSWER_TO_ME = r"(?:resp[óo]nde|cont[ée]sta|escr[íi]be|h[áa]bla|expl[íi]ca)(?:me|nos)\b"
# After "nunca"/"siempre", words that make it a statement ("Nunca he estado en Roma").
_NOT_ORDER_AFTER = (
    r"(?:me|te|se|nos|he|has|ha|hemos|han|fue|fui|era|eras|estoy|estaba|es|está|estás|lo|la"
    r"|le|les|soy|eres|tengo|tuve|hay|había|quise|pensé|creí|supe|vi|voy|vas|va|digo|dices"
    r"|llueve|nieva|hace|pasa|dice|tiene|sale|viene|puede|quiere|sabe|gana|pierde|funciona"
    r"|llega|ocurre|sucede|termina|acaba|[\w-]+o|[\w-]+mos)"
)
# After "no", words that make it a statement or a kind word ("No te preocupes").
_NOT_ORDER_NO = (
    r"(?:me|te|se|lo|la|le|les|nos|hay|es|sé|sabes|vas|va|estás|estas|eres|tienes|puedes"
    r"|quieres|creo|pasa|importa|hace|tanto|mucho|mal|está|esta|era|fue|sabía|debes"
    r"|necesitas|crees|pienses|pasas)"
)

SPANISH_RULES = LanguageRules(
    code=SPANISH,
    personal=PERSONAL,
    constraint_strong=re.compile(
        r"\b(?:a\s+partir\s+de\s+ahora|de\s+ahora\s+en\s+adelante|desde\s+ahora|en\s+adelante"
        r"|est[áa]\s+prohibido|est[áa]n\s+prohibidos|no\s+est[áa]\s+permitido|es\s+obligatorio"
        r"|debe\s+siempre|deben\s+siempre|nunca\s+debe|nunca\s+deben|no\s+debe|no\s+deben)\b",
        re.IGNORECASE,
    ),
    constraint_order=re.compile(
        _LEAD + r"(?:(?:nunca|jam[áa]s|no)\s+" + _NOT_TO_ME + r"|(?:nunca|jam[áa]s|siempre)\s+"
        r"(?!" + _NOT_ORDER_AFTER + r"\b)[\w-]+\b"
        r"|no\s+(?!" + _NOT_ORDER_NO + r"\b)[\w-]+(?:es|as)\b"
        r"|(?:" + _ASKED_VERB + r"|" + _IMPERATIVE_TO_ME + r")\s+siempre\b"
        # "Solo" after most verbs is "just" ("Pásame solo la sal"): only after one of
        # answering is it "only" ("Escríbeme solo en inglés").
        r"|(?:" + _ASKED_VERB + r"|" + _ANSWER_TO_ME + r")\s+(?:solo|sólo|solamente"
        r"|únicamente|nada\s+más)\b|(?:solo|sólo)\s+" + _ASKED_VERB + r"\b"
        # As in English, "from now on" and an order after it ("A partir de ahora,
        # respóndeme en inglés"); "A partir de ahora trabajo desde casa" states a fact.
        r"|"
        + _FROM_NOW_ON
        + r"[,:]?\s+(?:por\s+favor,?\s+)?(?:mejor\s+)?(?:"
        + _IMPERATIVE_TO_ME
        + r"|"
        + _ASKED_VERB
        + r"\b))",
        re.IGNORECASE,
    ),
    constraint_soft=re.compile(
        r"\b(?:siempre|nunca)\s+(?:usamos|hacemos|desplegamos)\b|\bnosotros\s+(?:siempre|nunca)\b"
        r"|\b(?:cada|todos\s+los|todas\s+las)\s+[\w-]+\s+(?:debe|deben|tiene\s+que|tienen\s+que)\b",
        re.IGNORECASE,
    ),
    not_constraint=re.compile(
        r"^(?:no\s+te\s+preocupes|no\s+pasa\s+nada|no\s+hay\s+problema|de\s+nada"
        r"|nunca\s+se\s+sabe)|\b(?:yo\s+)?(?:tengo\s+que|debo|necesito)\b"
        r"|\btienes\s+que\s+(?:probar|ver|visitar|leer|escuchar|ir|conocer)\b",
        re.IGNORECASE,
    ),
    question=re.compile(
        r"¿|^(?:(?:y|pero|oye|entonces|bueno)[,\s]+)*(?:qué|cómo|cuándo|dónde|adónde|quién"
        r"|quiénes|cuál|cuáles|cuánt[oa]s?|por\s+qué)\b",
        re.IGNORECASE,
    ),
    hedge=re.compile(
        r"\b(?:quizás|quizá|quizas|tal\s+vez|a\s+lo\s+mejor|probablemente|posiblemente"
        r"|creo\s+que|pienso\s+que|supongo|me\s+parece|no\s+estoy\s+segur[oa]|a\s+veces"
        r"|de\s+vez\s+en\s+cuando|solía|solíamos|antes\s+[\w-]+(?:ía|aba)|podría|sería"
        r"|me\s+gustaría)\b",
        re.IGNORECASE,
    ),
    hypothetical=re.compile(
        r"^(?:(?:y|pero)\s+)?(?:si|imagina|imagínate|supongamos|suponiendo|en\s+caso\s+de)\b",
        re.IGNORECASE,
    ),
    fillers=word_set(
        "yo me mi mis mío mía tú tu tus te ti él ella ello ellos ellas le les lo la los las el "
        "un una unos unas nosotros nos nuestro nuestra vosotros os su sus y o u e pero que de "
        "del al a en con por para sin sobre muy mucho mucha más menos también tampoco ya aún "
        "todavía es son soy eres está están estoy estás era fue ser estar hay ha he has han "
        "hemos tengo tiene tienen esto eso este esta ese esa aquí allí ahí así bien no sí si "
        "como cuando donde todo toda todos todas algo nada realmente"
    ),
    deictic=word_set(
        "esto eso aquello ti te tú usted ustedes él ella ellos ellas todo aquí allí ahí así"
    ),
    leading=word_set(
        "mucho muchísimo bastante realmente también tambien todavía todavia aún aun ya muy"
    ),
    small_talk=word_set(
        "hola buenas buenos días dias tardes noches gracias muchas muchísimas mil vale ok okay "
        "sí si no claro genial perfecto bueno bien muy adiós adios chao hasta luego pronto "
        "mañana de nada jaja jajaja guay súper super entendido por favor saludos qué tal "
        "igualmente excelente estupendo listo dale venga oye ah oh vaya te a ti también y que "
        "tú"
    ),
)
