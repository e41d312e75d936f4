"""The words a slot family's statements always hold (`memory.write.fact_slots`).

Lower case, in every language the rules read: a cheap test that lets a scan over many
stored facts run the rules on a few of them only.
"""

from __future__ import annotations

SLOT_TRIGGERS: dict[str, tuple[str, ...]] = {
    "residence": (
        "live",
        "moved",
        "relocated",
        "living",
        "reside",
        "home",
        "wohne",
        "lebe",
        "gezogen",
        "живу",
        "переех",
        "vivo",
        "resido",
        "viviendo",
        "mud",
        "traslad",
    ),
    "employer": ("work", "joined", "started", "job", "arbeite", "работа", "устро", "trabajo"),
    "role": ("work", "arbeite", "trabajo"),
    "partner": (
        "partner",
        "girlfriend",
        "boyfriend",
        "wife",
        "husband",
        "fianc",
        "spouse",
        "dating",
        "seeing",
        "married",
        "engaged",
        " with ",
        "freund",
        "frau",
        "mann",
        "девушк",
        "жен",
        "парн",
        "муж",
        "встреча",
        "novi",
        "espos",
        "pareja",
        "marido",
        "mujer",
        "prometid",
    ),
    "pet": (
        "dog",
        "cat",
        "pupp",
        "kitten",
        "parrot",
        "hamster",
        "rabbit",
        "horse",
        "hund",
        "katze",
        "kater",
        "собак",
        "кошк",
        "кот",
        "пса",
        "perr",
        "gat",
    ),
    "phone": ("number", "nummer", "номер", "телефон", "número", "teléfono", "móvil", "celular"),
    "email": ("mail", "correo"),
    "address": ("address", "adresse", "адрес", "dirección"),
    "favourite": ("favorite", "favourite", "lieblings", "любим", "favorit"),
    "diet": ("vegetarian", "vegan", "pescatarian", "meat", "vegetar"),
}


def may_state(slot: str, lowered_text: str) -> bool:
    """False when `lowered_text` surely sets no value of `slot` (its family's words absent)."""
    return any(word in lowered_text for word in SLOT_TRIGGERS[slot.split(":", 1)[0]])
