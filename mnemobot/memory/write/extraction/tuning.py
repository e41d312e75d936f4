"""How sure the rule-based extraction is of what it reads in a turn, and how much it takes.

Not settings. Confidence decides promotion: an item at or above
`write_path.PROMOTION_MIN_CONFIDENCE` (0.75) becomes durable and shows in every later
prompt. The values keep the user's own explicit statements and reports above it, and
guesses, suggestions, hedged words and advice among several people below it. None was
measured one by one: they were chosen by hand to keep that split, which
tests/test_extraction*.py assert. Each statement pattern's own confidence sits beside the
pattern in `personal_rules` and the per-language rule tables. An eval or a test passes
another `ExtractionTuning` to `WorkspaceMemory.open(extraction=...)`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExtractionTuning:
    # The item recording a whole turn: below promotion, so it stays an episode.
    turn_confidence: float = 0.65
    turn_salience: float = 0.5
    # A turn item something else was derived from ranks a bit higher.
    turn_with_findings_salience: float = 0.6
    # A hedged statement ("I think", "maybe", "sometimes") never scores above this: below
    # promotion.
    hedged_confidence_cap: float = 0.6
    # An order or rule from the user ("never push to main", "tests must pass").
    constraint_confidence: float = 0.85
    # An order among several people (mostly advice to each other), or a soft rule.
    weak_constraint_confidence: float = 0.7
    # A fix someone reports as done, and one only suggested ("try ...").
    confirmed_fix_confidence: float = 0.85
    suggested_fix_confidence: float = 0.65
    # A command suggested right after an error, as a step of its fix.
    suggested_fix_command_confidence: float = 0.7
    # A fix at or above this is tagged "confirmed", else "suggested".
    confirmed_fix_min_confidence: float = 0.8
    # A failure sentence from the user naming a concrete error (exception, exit code),
    # and any other failure sentence.
    concrete_failure_confidence: float = 0.8
    vague_failure_confidence: float = 0.7
    # An error line of a log or traceback from the user or a tool, and one the assistant
    # wrote.
    error_line_confidence: float = 0.85
    assistant_error_line_confidence: float = 0.7
    # A shell command that was run, and one the assistant only suggested.
    command_confidence: float = 0.8
    suggested_command_confidence: float = 0.7
    # A fact the update rules make of a statement of a single-valued thing ("I moved to
    # Berlin") that nothing else extracted: as specific as the explicit statements above.
    slot_fact_confidence: float = 0.85
    slot_fact_salience: float = 0.7
    # Most items derived from one turn, commands and error lines taken from it, so a
    # pasted log cannot flood memory. Not measured; a screenful.
    max_derived_items: int = 12
    max_commands: int = 6
    max_errors: int = 3
    # Most characters of the user's words in one turn item. A longer message is not cut:
    # it is split into several turn items (at paragraph, line or sentence ends), each found
    # by its own words. Not measured; about a paragraph, so BM25 sees one topic an item.
    turn_user_chars: int = 1200
    # Characters of the assistant's side kept in the turn item (the user's words are what
    # a later question asks about). Not measured.
    turn_assistant_chars: int = 800


DEFAULT_EXTRACTION = ExtractionTuning()
