"""The word lists the extraction rules read sentences and code with.

Data, not code: each list is what one rule treats alike, so a missed word is fixed by
adding it here. All lower case: words are lowered before lookup, except a command's
first word, which must match `PROGRAMS` as typed.
"""

# ------------------------------------------------------------ sentence splitting

# Abbreviations always followed by more of the sentence.
TITLES = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "sr", "jr", "vs", "cf", "approx", "e.g", "i.e"}
)
# Abbreviations that continue the sentence only when a lowercase word follows
# ("etc. and more" vs "etc. Then").
ABBREVIATIONS = frozenset(
    {"etc", "inc", "ltd", "co", "corp", "dept", "fig", "no", "a.m", "p.m"}
    | {"u.s", "u.k", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct"}
    | {"nov", "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "min", "max", "ca"}
)

# ------------------------------------------------------------------- word checks

# Words that carry no durable meaning on their own (small talk, deixis, fillers).
_FILLER_TEXT = """
    a an the it its it's this that that's these those them they you your yours u ya ye
    him her he she we us our me my mine i i'm im so too very much many really quite just
    lot lots one ones thing things stuff idea ideas way here there all everything anything
    something nothing what how when why who which as well also more most better best both
    either with about of to for in on at by from now then again though tho even still
    yes yeah yep no nope ok okay sure fine great good nice cool awesome amazing wow omg
    lol haha hehe thanks thank please hi hello hey bye guys man dude buddy pal bit kind
    sort some any and or but if is am are was were be been being do does did have has had
    will would can could should shall may might must not don't doesn't didn't gonna wanna
    like love enjoy prefer hate
    """
FILLER_WORDS = frozenset(_FILLER_TEXT.split())
# Words that point at something instead of naming it ("I love it").
DEICTIC_START = frozenset(
    {"it", "this", "that", "these", "those", "them", "you", "u", "your", "yours", "him"}
    | {"her", "here", "there", "em", "everything", "everyone", "all"}
)
# Small talk besides the fillers ("Good morning", "Noted").
SMALL_TALK_EXTRA = frozenset(
    {"morning", "evening", "night", "afternoon", "day", "welcome", "np", "agreed", "right"}
    | {"exactly", "perfect", "see", "later", "soon", "bro", "sis", "appreciate", "it's"}
    | {"sounds", "got", "gotcha", "noted", "understood", "alright", "yup", "hmm", "uh", "um"}
)
# Skipped before the object of a statement ("I really love jazz").
LEADING_ADVERBS = frozenset(
    {"really", "so", "totally", "absolutely", "just", "also", "still", "truly", "very"}
    | {"much", "quite", "pretty", "kinda", "always", "definitely", "especially"}
)

# ------------------------------------------------------------------- "must"

# After "must", a guess not an order ("must have been fun", "must feel great").
GUESSING_VERBS = frozenset({"have", "'ve", "of", "feel", "make", "add", "still", "really", "seem"})
# After "must be", a guess ("must be so rewarding", "must be tired").
EVALUATIVE = frozenset(
    {"so", "such", "quite", "really", "very", "pretty", "amazing", "great", "incredible"}
    | {"exciting", "fun", "rewarding", "hard", "tough", "nice", "awesome", "wonderful", "cool"}
    | {"lovely", "scary", "difficult", "tiring", "exhausting", "a", "an", "the", "raw", "feeling"}
    | {"proud", "tired", "happy", "sad", "excited", "thrilled", "relieved", "fantastic", "special"}
)
# Before "must be", a guess ("you must be", "that must be").
GUESSING_SUBJECTS = frozenset(
    {"you", "that", "it", "this", "he", "she", "they", "there", "which", "what", "who", "i"}
    | {"wow", "oh", "ah", "which", "that's", "it's", "u"}
)

# ----------------------------------------------------------------- fixes, code

# Words of a fix report that say nothing about what was fixed ("Fixed it!").
_FIX_TEXT = (
    "fixed fix fixes solved solve resolved resolve works worked now workaround solution "
    "turned out problem issue bug cause culprit trick"
)
FIX_WORDS = frozenset(_FIX_TEXT.split())
# Code-fence languages of shell sessions.
SHELL_LANGS = frozenset(
    {"sh", "bash", "shell", "zsh", "fish", "console", "terminal", "shell-session"}
    | {"shellsession", "ps", "powershell", "pwsh", "cmd", "bat", "batch", "ksh"}
)
# First words of a shell command line.
PROGRAMS = frozenset(
    {"pip", "pip3", "python", "python3", "py", "uv", "uvx", "poetry", "pipx", "conda", "npm"}
    | {"npx", "yarn", "pnpm", "bun", "deno", "node", "git", "gh", "docker", "docker-compose"}
    | {"podman", "kubectl", "helm", "terraform", "make", "cmake", "cargo", "rustup", "go"}
    | {"apt", "apt-get", "brew", "dnf", "yum", "pacman", "apk", "snap", "curl", "wget", "ssh"}
    | {"scp", "rsync", "sudo", "cd", "ls", "rm", "mv", "cp", "mkdir", "chmod", "chown", "cat"}
    | {"grep", "find", "sed", "awk", "tar", "systemctl", "journalctl", "service", "pytest"}
    | {"ruff", "mypy", "black", "flake8", "tox", "nox", "java", "javac", "mvn", "gradle"}
    | {"./gradlew", "gradlew", "dotnet", "ruby", "gem", "bundle", "rails", "php", "composer"}
    | {"export", "source", "alembic", "django-admin", "flask", "uvicorn", "gunicorn", "psql"}
    | {"mysql", "redis-cli", "sqlite3", "mnemobot", "tsc", "eslint", "prettier", "jest", "vite"}
)
