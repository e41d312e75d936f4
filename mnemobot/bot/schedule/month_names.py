"""The names of the months in the languages reminders are read in, and their numbers."""

from __future__ import annotations

# Month names and their common short forms: English, German, Russian (the genitive, as
# dates say it), Spanish.
_MONTH_NAMES = (
    "january jan januar jänner января enero",
    "february feb februar февраля febrero",
    "march mar märz maerz марта marzo",
    "april apr апреля abril",
    "may mai мая mayo",
    "june jun juni июня junio",
    "july jul juli июля julio",
    "august aug августа agosto",
    "september sept sep сентября septiembre setiembre",
    "october oct oktober okt октября octubre",
    "november nov ноября noviembre",
    "december dec dezember dez декабря diciembre",
)
# A month's name (lower case) -> its number, 1 for January.
MONTHS = {name: month for month, names in enumerate(_MONTH_NAMES, 1) for name in names.split()}
# Any month's name, as a regular expression's alternation (the longest first).
MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
