"""Rule-based extraction of memory items from a finished turn (no LLM).

Each turn gives one EPISODIC TURN item plus derived items, each holding the whole
sentence that matched (not the start of the message):

- from the user's words: CONSTRAINT ("never push to main"), PREFERENCE ("I prefer
  tea"), PROJECT_FACT ("my sister lives in Oslo", "our API runs on FastAPI"),
  DECISION ("we decided to use Postgres"), TASK_STATE ("I'm working on the parser");
- from anyone's words: FAILURE ("the build fails with ImportError") and FIX ("fixed
  it by pinning numpy");
- with `code_aware`: shell commands (COMMAND_RESULT), error lines of tracebacks and
  logs (FAILURE), a fix that follows an error (FIX), file paths in `references`.

Precision matters more than recall here: a wrong durable item is injected into every
later prompt. So questions, hypotheticals, requests ("I'd like to..."), deictic small
talk ("I love it!") and hedged statements are left out or kept below the promotion
threshold. First-person explicit statements score >= 0.8 and are promoted. How sure
each kind of finding is sits in `tuning.ExtractionTuning`.

Statements are read in English, Russian, Chinese, German and Spanish: English rules
read every sentence in Latin script; a sentence they find nothing in, or one in Cyrillic
or Han script, is read with its language's own table (same item types, same confidence
scale, its own question, hedge and small-talk words). Sentences also end at CJK marks.

Modules, in reading order: `vocabulary` (word lists), `sentences` (splitting),
`words` (word-level checks), `personal_rules` and `statements` (the user's statements),
`language` (which language a sentence is in, what a language's table holds),
`rules_ru`, `rules_zh`, `rules_de`, `rules_es` and `rule_tables` (those tables),
`failures` (failures and fixes in prose), `code` (code blocks, commands, error lines,
paths), `extractor` (reading a turn into findings), `finding_items` (findings into items).
Failures, fixes and commands are read in English only.
"""

from mnemobot.memory.write.extraction.code import find_paths, split_code
from mnemobot.memory.write.extraction.finding_items import extract_items
from mnemobot.memory.write.extraction.sentences import split_sentences
from mnemobot.memory.write.extraction.words import content_words, is_question, is_small_talk

__all__ = [
    "content_words",
    "extract_items",
    "find_paths",
    "is_question",
    "is_small_talk",
    "split_code",
    "split_sentences",
]
