"""Code in a message: fenced blocks, shell commands, error lines of logs and tracebacks, paths.

Used when code-aware extraction is on (always, for the bot's turns): what was run,
what failed and which files were involved are what a coding chat needs to remember.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from mnemobot.memory.write.extraction.sentences import split_sentences
from mnemobot.memory.write.extraction.vocabulary import PROGRAMS, SHELL_LANGS
from mnemobot.memory.write.extraction.words import content_words

# An error line is kept whole up to this; longer ones are dumps, not messages. A format
# bound like the title length, not a behaviour anyone tunes.
ERROR_LINE_CHARS = 300
# A command is kept up to this many characters (a pasted one-liner can be huge).
COMMAND_CHARS = 300

# A fenced code block: its language, its body (an unclosed fence runs to the end).
FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.M | re.S)
# A command named in prose without backticks ("run pip install numpy and retry").
PROSE_COMMAND = re.compile(
    r"\b(?:(?:pip3?|uv\s+pip|python3?\s+-m\s+pip)\s+install|uv\s+add|poetry\s+add"
    r"|npm\s+(?:install|i|ci)|yarn\s+add|pnpm\s+add|git\s+(?:clone|pull|push|fetch|checkout"
    r"|switch|rebase|merge|reset|stash|commit|status|log|diff|add|revert|cherry-pick|bisect"
    r"|tag|branch|remote|submodule|init|restore|clean|show|blame|worktree))"
    r"(?:\s+(?!(?:and|then|to|or|again|first|now|it|in|on|the|a|with|but|so|if)\b)"
    r"[\w./:@~^=<>!\[\],+-]+){0,6}"
)
INLINE_CODE = re.compile(r"`([^`\n]{2,200})`")
# A shell prompt line ("$ ls", "(venv) user@host:~/app$ make"); group 1 is the command.
PROMPT = re.compile(r"^\s*(?:\([\w.-]+\)\s*)?(?:[\w.@-]+(?::[~\w/.-]*)?)?[$❯]\s+(.+)$")
# A line of a log or traceback that reports an error.
ERROR_LINE = re.compile(
    r"^\s*(?:(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?::\s*.*)?"
    r"|(?:error|fatal|ERROR|FATAL|Error|Fatal|FAILED|FAIL)(?:\[[\w-]+\])?[:!]?\s+.+"
    r"|npm\s+ERR!\s+.+|panic:\s+.+|E\s{2,}\S.+|.*\bSegmentation\s+fault\b.*"
    r"|.*:\s+command\s+not\s+found\b.*|.*\bNo\s+such\s+file\s+or\s+directory\b.*"
    r"|.*\bPermission\s+denied\b.*|.*\bexited\s+with\s+(?:code|status)\s+[1-9]\d*.*"
    r"|.*\bcommand\s+failed\b.*)$"
)
TRACEBACK_START = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
# File paths: absolute, relative, bare names with a known extension, Windows paths.
_PATH = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?"
    r"|(?<![\w/.:-])[\w.@+-]+(?:/[\w.@+-]+)+"
    r"|(?<![\w/.:@-])[\w@+-]+(?:\.[\w-]+)*\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|java|kt|kts|go|rs"
    r"|rb|php|c|h|cc|cpp|hpp|cs|swift|scala|sh|bash|zsh|ps1|json|ya?ml|toml|ini|cfg|conf|env"
    r"|lock|md|rst|txt|csv|sql|html?|css|scss|xml|gradle|tf|proto|ipynb|vue|svelte|dart"
    r"|lua|log)\b"
    r"|[A-Za-z]:\\(?:[\w .-]+\\)+[\w .-]+\.\w+"
)
# Library names that look like file names.
_NOT_FILES = re.compile(
    r"^(?:node|vue|next|nuxt|react|express|d3|three|chart|angular|ember|backbone|socket\.io"
    r"|alpine|ember|p5|solid)\.js$",
    re.IGNORECASE,
)
_HAS_EXTENSION = re.compile(r"[^/\\]\.[A-Za-z]\w{0,7}$")


@dataclass(slots=True)
class CodeBlock:
    lang: str
    body: str
    # The prose sentence right before the block ("Install the missing package:").
    intro: str = ""


def split_code(text: str) -> tuple[str, list[CodeBlock]]:
    """Separate fenced code blocks and unfenced tracebacks from prose."""
    blocks: list[CodeBlock] = []
    prose_parts: list[str] = []
    position = 0
    for match in FENCE.finditer(text):
        before = text[position : match.start()]
        prose_parts.append(before)
        intro_sentences = split_sentences(before)
        intro = intro_sentences[-1] if intro_sentences else ""
        blocks.append(CodeBlock(match.group(1).lower(), match.group(2), intro))
        prose_parts.append("\n")
        position = match.end()
    prose_parts.append(text[position:])
    prose = "".join(prose_parts)
    return _split_tracebacks(prose, blocks)


def _split_tracebacks(prose: str, blocks: list[CodeBlock]) -> tuple[str, list[CodeBlock]]:
    if "Traceback" not in prose:
        return prose, blocks
    kept: list[str] = []
    lines = prose.splitlines()
    index = 0
    while index < len(lines):
        if not TRACEBACK_START.match(lines[index]):
            kept.append(lines[index])
            index += 1
            continue
        body = [lines[index]]
        index += 1
        while index < len(lines):
            line = lines[index]
            body.append(line)
            index += 1
            if line and not line[0].isspace() and ERROR_LINE.match(line):
                break
        intro = split_sentences("\n".join(kept))
        blocks.append(CodeBlock("traceback", "\n".join(body), intro[-1] if intro else ""))
        kept.append("")
    return "\n".join(kept), blocks


def find_paths(text: str) -> list[str]:
    """File paths in `text` (not URLs, not "and/or", not "Node.js")."""
    found: dict[str, None] = {}
    for match in _PATH.finditer(text):
        path = match.group(0).rstrip(".,:;)")
        if _NOT_FILES.match(path) or not re.search(r"[A-Za-z]", path):
            continue
        anchored = path.startswith(("/", "~/", "./", "../")) or path[1:3] == ":\\"
        if "/" in path and not anchored and not _HAS_EXTENSION.search(path):
            continue  # "and/or", "src/app": too ambiguous without an extension
        if anchored and path.count("/") < 2 and not _HAS_EXTENSION.search(path):
            continue  # "/s", "/help": slash commands, not paths
        found[path] = None
    return list(found)


def is_command(line: str) -> bool:
    """The line starts with a known program (or a local script)."""
    words = line.split()
    if not words:
        return False
    first = words[0]
    if first == "sudo" and len(words) > 1:
        first = words[1]
    return first in PROGRAMS or first.startswith(("./", "bin/", ".venv/bin/"))


@dataclass(slots=True)
class CommandRun:
    command: str
    error: str = ""


def commands_in_block(block: CodeBlock) -> list[CommandRun]:
    """The commands of a shell block, each with the first error line of its output."""
    lines = block.body.splitlines()
    prompted = [m for m in (PROMPT.match(line) for line in lines) if m]
    runs: list[CommandRun] = []
    pending = ""
    for line in lines:
        if prompted:
            match = PROMPT.match(line)
            if match is None:
                # Output of the previous command: remember its first error line.
                if runs and not runs[-1].error and ERROR_LINE.match(line):
                    runs[-1].error = line.strip()[:ERROR_LINE_CHARS]
                continue
            text = match.group(1).strip()
        else:
            text = line.strip()
            if not text or text.startswith(("#", "//", "REM ", "::")):
                continue
            if block.lang not in SHELL_LANGS and not is_command(text):
                continue
        if pending:
            text = pending + " " + text
            pending = ""
        if text.endswith("\\"):
            pending = text[:-1].strip()
            continue
        runs.append(CommandRun(text[:COMMAND_CHARS]))
    if pending:
        runs.append(CommandRun(pending[:COMMAND_CHARS]))
    return runs


@dataclass(slots=True)
class ErrorSighting:
    line: str
    paths: list[str]
    command: str = ""


def errors_in_text(text: str) -> list[ErrorSighting]:
    """Error lines of code/log text; a traceback counts once, as its final exception line."""
    sightings: list[ErrorSighting] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if TRACEBACK_START.match(line):
            body_paths: list[str] = []
            index += 1
            final = ""
            while index < len(lines):
                current = lines[index]
                index += 1
                body_paths.extend(find_paths(current))
                if current and not current[0].isspace() and ERROR_LINE.match(current):
                    final = current.strip()
                    break
            if final:
                sightings.append(
                    ErrorSighting(final[:ERROR_LINE_CHARS], list(dict.fromkeys(body_paths)))
                )
            continue
        if ERROR_LINE.match(line) and content_words(line):
            sightings.append(ErrorSighting(line.strip()[:ERROR_LINE_CHARS], find_paths(line)))
        index += 1
    return sightings


def program_tag(command: str) -> list[str]:
    """The program a command runs, as a tag ("pip" for "sudo pip install x")."""
    words = command.split()
    if words and words[0] == "sudo":
        words = words[1:]
    return [PurePath(words[0]).name.lower()] if words else []


def looks_like_shell(body: str) -> bool:
    """An unlabelled code block whose first lines are all prompts, commands or comments."""
    lines = [line for line in body.splitlines() if line.strip()]
    return bool(lines) and all(
        PROMPT.match(line) or is_command(line.strip()) or line.strip().startswith("#")
        for line in lines[:5]
    )
