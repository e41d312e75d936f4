"""Reading one turn: every finding in the user's words, the tool outputs and the reply.

The user's text, then the tool outputs, then the assistant's reply are read in that
order, so a fix binds to the latest error seen before it. Statements are read from the
user's words only; failures and fixes from anyone's; tool output is data, read for
commands and errors only. A failed tool call's error (the model called a tool with bad
arguments) is the bot's trouble, not the user's: it is never read, and the reply repeating
it ("error: invalid arguments: ...") is no failure either.
"""

from __future__ import annotations

from collections.abc import Iterable

from mnemobot.memory.store.items import ItemType, TurnMemoryEvent
from mnemobot.memory.write.extraction.code import (
    ERROR_LINE,
    ERROR_LINE_CHARS,
    FENCE,
    INLINE_CODE,
    PROMPT,
    PROSE_COMMAND,
    TRACEBACK_START,
    CodeBlock,
    CommandRun,
    ErrorSighting,
    commands_in_block,
    errors_in_text,
    find_paths,
    is_command,
    looks_like_shell,
    program_tag,
    split_code,
)
from mnemobot.memory.write.extraction.failures import error_tags, match_failure, match_fix
from mnemobot.memory.write.extraction.finding import (
    COMMAND_SALIENCE,
    ERROR_LINE_SALIENCE,
    FIX_SALIENCE,
    Finding,
    Origin,
)
from mnemobot.memory.write.extraction.question_clauses import statement_before_question
from mnemobot.memory.write.extraction.sentences import (
    cut_text,
    one_line,
    split_sentences,
    without_quoted_speech,
)
from mnemobot.memory.write.extraction.statements import match_statement
from mnemobot.memory.write.extraction.tuning import ExtractionTuning
from mnemobot.memory.write.extraction.vocabulary import SHELL_LANGS
from mnemobot.memory.write.extraction.words import content_words, is_question

# A pasted log or a tool dump can be megabytes; only this much of each text is read
# (its start, or a tool output's end). It bounds the work of one turn, not what is
# remembered, so it is not a setting.
MAX_SCAN_CHARS = 30_000
# A longer sentence is cut to this before it becomes an item's content.
SENTENCE_CHARS = 500
# Fewest characters of a reply's error line that count as repeating a tool's error: "error:
# failed" is anyone's. Not measured; a short clause.
_SHORTEST_REPEAT = 12


def _bare_error(text: str) -> str:
    """An error's words, compared: no "error:" in front, lowercase, single spaces."""
    text = " ".join(text.lower().split())
    return text.removeprefix("error:").strip()


class TurnExtractor:
    """The findings of one turn; one instance per turn (it keeps the errors seen so far)."""

    def __init__(
        self, event: TurnMemoryEvent, *, code_aware: bool, tuning: ExtractionTuning
    ) -> None:
        self.event = event
        self.tuning = tuning
        self.speaker = (event.speaker or "").strip() or None
        self.code_aware = code_aware
        self.found: list[Finding] = []
        # Errors seen so far in reading order (user, tools, assistant): a later fix binds
        # to the most recent one.
        self.errors: list[ErrorSighting] = []
        self.fixes: dict[str, Finding] = {}
        self.commands: set[str] = set()
        self.tool_errors = [_bare_error(error) for error in event.tool_errors]

    def repeats_tool_error(self, text: str) -> bool:
        """Whether the reply's `text` says again what a failed tool call told the model."""
        said = _bare_error(text)
        return len(said) >= _SHORTEST_REPEAT and any(
            said in error or (len(error) >= _SHORTEST_REPEAT and error in said)
            for error in self.tool_errors
        )

    def run(self) -> list[Finding]:
        event = self.event
        self._scan(event.user_text, "user")
        for output in event.tool_outputs:
            self._scan(output, "tool")
        self._scan(event.assistant_text, "assistant")
        self._finish_fix_tags()
        return self.found

    def _scan(self, text: str, origin: Origin) -> None:
        if not text or not text.strip():
            return
        # A pasted log or a tool dump can be megabytes; what matters is near its start
        # (what the user says) or, for tool output, its end (where errors land).
        text = text[-MAX_SCAN_CHARS:] if origin == "tool" else text[:MAX_SCAN_CHARS]
        if self.code_aware:
            if origin == "tool":
                self._scan_tool_output(text)
            else:
                self._scan_code(text, origin)
        if origin == "tool":
            return  # tool output is data, not statements
        prose, _blocks = split_code(text)
        for sentence in split_sentences(without_quoted_speech(prose)):
            self._scan_sentence(sentence, origin)

    # -------------------------------------------------------------- sentences

    def _scan_sentence(self, sentence: str, origin: Origin) -> None:
        if len(sentence) > SENTENCE_CHARS:
            sentence = cut_text(sentence, SENTENCE_CHARS)
        paths = find_paths(sentence) if self.code_aware else []
        fix = match_fix(sentence, origin, self.tuning)
        if fix is not None:
            if self.code_aware and self.errors:
                self._extend_fix(self.errors[-1], sentence, fix.confidence, origin, paths)
            else:
                fix.paths = paths
                self.found.append(fix)
            return
        failure = match_failure(sentence, origin, self.tuning)
        if failure is not None and origin == "assistant" and self.repeats_tool_error(sentence):
            return
        if failure is not None:
            if any(sentence in known.line or known.line in sentence for known in self.errors):
                return  # the error line itself, already kept by the code-aware pass
            failure.paths = paths
            failure.tags += error_tags(sentence)
            self.found.append(failure)
            return
        if origin != "user":
            return
        statement = match_statement(sentence, self.speaker, self.tuning)
        if statement is None:
            # "I love baking in the afternoon, do you think ...?": the statement before
            # the asking is kept like any other.
            leading = statement_before_question(sentence)
            if leading is not None:
                statement = match_statement(leading, self.speaker, self.tuning)
        if statement is not None:
            statement.paths = paths
            self.found.append(statement)

    # ------------------------------------------------------------------- code

    def _scan_code(self, text: str, origin: Origin) -> None:
        """Commands, error lines and code blocks of a message, in the order they appear."""
        position = 0
        for match in FENCE.finditer(text):
            before = text[position : match.start()]
            self._scan_code_prose(before, origin)
            intro_sentences = split_sentences(INLINE_CODE.sub(" ", before))
            intro = intro_sentences[-1] if intro_sentences else ""
            self._scan_block(CodeBlock(match.group(1).lower(), match.group(2), intro), origin)
            position = match.end()
        self._scan_code_prose(text[position:], origin)

    def _scan_code_prose(self, text: str, origin: Origin) -> None:
        suggested = origin == "assistant"
        lines = text.splitlines()
        index = 0
        while index < len(lines):
            line = lines[index]
            index += 1
            if TRACEBACK_START.match(line):
                body = [line]
                while index < len(lines):
                    body.append(lines[index])
                    index += 1
                    if body[-1][:1].strip() and ERROR_LINE.match(body[-1]):
                        break
                self._add_errors(errors_in_text("\n".join(body)), origin)
                continue
            prompt = PROMPT.match(line)
            if prompt and is_command(prompt.group(1).strip()):
                self._add_command(CommandRun(prompt.group(1).strip()), "", origin, suggested)
                continue
            if ERROR_LINE.match(line) and not is_question(line):
                # Unfenced log lines ("ERROR: could not connect to ...") pasted into prose.
                sighting = ErrorSighting(line.strip()[:ERROR_LINE_CHARS], find_paths(line))
                self._add_errors([sighting], origin)
                continue
            spans: list[tuple[int, str]] = [
                (m.start(), m.group(1).strip())
                for m in INLINE_CODE.finditer(line)
                if is_command(m.group(1).strip())
            ]
            plain = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
            spans += [(m.start(), m.group(0).strip()) for m in PROSE_COMMAND.finditer(plain)]
            for _start, command in sorted(spans):
                self._add_command(CommandRun(command), "", origin, suggested)

    def _scan_block(self, block: CodeBlock, origin: Origin) -> None:
        suggested = origin == "assistant"
        if block.lang in SHELL_LANGS or (not block.lang and looks_like_shell(block.body)):
            for run in commands_in_block(block):
                self._add_command(run, block.intro, origin, suggested)
            return
        sightings = errors_in_text(block.body)
        self._add_errors(sightings, origin, block.intro)
        if suggested and self.errors and not sightings and block.intro:
            # A code change proposed right after an error is the fix to remember.
            paths = find_paths(block.body) + find_paths(block.intro)
            self._extend_fix(
                self.errors[-1],
                one_line(block.intro),
                self.tuning.suggested_fix_confidence,
                origin,
                paths,
            )

    def _scan_tool_output(self, text: str) -> None:
        if any(PROMPT.match(line) for line in text.splitlines()):
            for run in commands_in_block(CodeBlock("console", text)):
                self._add_command(run, "", "tool", suggested=False)
        else:
            self._add_errors(errors_in_text(text), "tool")

    def _add_errors(
        self, sightings: Iterable[ErrorSighting], origin: Origin, intro: str = ""
    ) -> None:
        for sighting in sightings:
            if any(existing.line == sighting.line for existing in self.errors):
                continue
            if origin == "assistant" and self.repeats_tool_error(sighting.line):
                continue
            if len(self.errors) >= self.tuning.max_errors:
                return
            self.errors.append(sighting)
            content = sighting.line
            if sighting.command:
                content = f"`{sighting.command}` failed: {sighting.line}"
            elif intro and len(content_words(intro)) >= 2 and not is_question(intro):
                content = f"{sighting.line} ({one_line(intro).rstrip(':')})"
            if origin == "assistant":
                confidence = self.tuning.assistant_error_line_confidence
            else:
                confidence = self.tuning.error_line_confidence
            self.found.append(
                Finding(
                    ItemType.FAILURE,
                    sighting.line,
                    confidence,
                    ERROR_LINE_SALIENCE,
                    ["failure", "error", *error_tags(sighting.line)],
                    origin,
                    paths=list(sighting.paths),
                    content=content,
                )
            )

    def _add_command(self, run: CommandRun, intro: str, origin: Origin, suggested: bool) -> None:
        if run.command in self.commands or len(self.commands) >= self.tuning.max_commands:
            return
        self.commands.add(run.command)
        paths = find_paths(run.command)
        if run.error:
            sighting = ErrorSighting(run.error, paths + find_paths(run.error), run.command)
            self._add_errors([sighting], origin)
            return
        line = f"$ {run.command}"
        useful_intro = intro and len(content_words(intro)) >= 2 and not is_question(intro)
        if suggested and self.errors:
            # A command suggested after an error is how that error gets fixed.
            step_confidence = self.tuning.suggested_fix_command_confidence
            if useful_intro:
                self._extend_fix(self.errors[-1], one_line(intro), step_confidence, origin, [])
            self._extend_fix(
                self.errors[-1], line, step_confidence, origin, paths, program_tag(run.command)
            )
            return
        content = f"{one_line(intro)}\n{line}" if useful_intro else line
        tags = ["command", *program_tag(run.command)] + (["suggested"] if suggested else [])
        tuning = self.tuning
        confidence = tuning.suggested_command_confidence if suggested else tuning.command_confidence
        self.found.append(
            Finding(
                ItemType.COMMAND_RESULT,
                run.command,
                confidence,
                COMMAND_SALIENCE,
                tags,
                origin,
                paths=paths,
                content=content,
            )
        )

    def _extend_fix(
        self,
        error: ErrorSighting,
        step: str,
        confidence: float,
        origin: Origin,
        paths: list[str],
        extra_tags: list[str] | None = None,
    ) -> None:
        """Add one step (a sentence or a command) to the FIX item of `error`."""
        fix = self.fixes.get(error.line)
        if fix is None:
            fix = Finding(
                ItemType.FIX,
                step,
                confidence,
                FIX_SALIENCE,
                ["fix", *error_tags(error.line)],
                origin,
                paths=list(error.paths),
                content=f"Fix for `{error.line}`:",
            )
            self.fixes[error.line] = fix
            self.found.append(fix)
        if step in fix.content:
            return
        fix.content += f"\n{step}"
        fix.confidence = max(fix.confidence, confidence)
        fix.paths = list(dict.fromkeys(fix.paths + paths))
        fix.tags = list(dict.fromkeys(fix.tags + (extra_tags or [])))

    def _finish_fix_tags(self) -> None:
        for fix in self.fixes.values():
            confirmed = fix.confidence >= self.tuning.confirmed_fix_min_confidence
            fix.tags.append("confirmed" if confirmed else "suggested")
