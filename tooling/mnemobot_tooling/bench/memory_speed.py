"""`mnemobot bench memory`: pack build, one turn's write, cold start and RSS on a big scope.

The scope is synthetic but shaped like a real group chat: two main speakers (so each name
is on about half of the items, the worst case for BM25), people, places, hobbies, work,
shell commands and errors, drawn from fixed word lists with a seeded RNG. Every turn goes
through the real extractor (`memory.extraction.extract_items`) and promotion rule; the
bulk is then written straight to the JSONL files with the items' own serialization,
because calling `record_turn` 100,000 times would take minutes. The writes that are
measured do go through `MemoryRecord.record_turn` (daily note, extraction, store add,
promotion), on top of the bulk.

Everything that is measured runs in a fresh child process (`python -c`), so its cold
start (imports, scope load, first pack) and its peak RSS are what a restarted bot would
see, not those of the process that generated the data. The generator loads the scope
once after writing it, as the bot's first start would: that load builds the index file
beside the items (`memory.store.index_file`), which the measured start then reads; its
time is reported apart ("index built in").

The module is longer than most (about 600 lines): the synthetic chat's word lists, its
generator and the child's measurements belong to this one bench.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from mnemobot.bot.cli.progress import ProgressBar
from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX, PROMOTION_TARGET, day_of
from mnemobot.memory.store.items import Layer, MemoryItem, TurnMemoryEvent
from mnemobot.memory.store.scope_paths import ScopePaths
from mnemobot.memory.write.extraction import extract_items
from mnemobot.memory.write.fact_slots import slot_statements
from mnemobot.memory.write.write_path import PROMOTION_MIN_CONFIDENCE
from mnemobot_tooling.bench.localized_text import localize
from mnemobot_tooling.bench.memory_vectors import embedding_server
from mnemobot_tooling.bench.report import cpu_model, percentile, usable_cpus

SCOPE = "telegram:-1001234"
# Targets from the issue: (items, figure) -> limit. Only listed sizes are judged.
TARGETS: dict[int, dict[str, float]] = {
    1_000_000: {"cold_start_s": 2.0, "peak_rss_mb": 600},
    100_000: {"pack_p95_ms": 20.0, "write_p95_ms": 5.0, "cold_start_s": 2.0, "peak_rss_mb": 300},
    10_000: {"pack_p95_ms": 5.0},
}
_START = datetime(2024, 1, 8, 8, 0, tzinfo=UTC).timestamp()

SPEAKERS = ["Caroline", "Melanie"]
PEOPLE = [
    "Jon", "Gina", "Priya", "Tomasz", "Aiko", "Mateo", "Fatima", "Olga", "Kwame", "Sofia",
    "Liam", "Noor", "Hiro", "Elena", "Dmitri", "Amara", "Lucas", "Ines", "Ravi", "Chloe",
    "Bjorn", "Mei", "Diego", "Zara", "Oscar", "Leila", "Pavel", "Yuki", "Nadia", "Felix",
]  # fmt: skip
PLACES = [
    "Boston", "Lisbon", "Kyoto", "the lake house", "Denver", "the farmers market", "Berlin",
    "the climbing gym", "Oaxaca", "the library", "Reykjavik", "the beach", "Nairobi",
    "the museum", "Vancouver", "the community garden", "Seoul", "the cabin", "Prague",
    "the bakery on Elm Street", "Montreal", "the dog park", "Tbilisi", "the pottery studio",
]  # fmt: skip
HOBBIES = [
    "pottery", "rock climbing", "painting", "chess", "sourdough baking", "kayaking",
    "birdwatching", "salsa dancing", "knitting", "photography", "trail running", "guitar",
    "gardening", "woodworking", "yoga", "calligraphy", "surfing", "board games", "cycling",
    "origami", "skiing", "volunteering at the shelter", "bouldering", "jazz piano",
]  # fmt: skip
FOODS = [
    "ramen", "tacos al pastor", "pad thai", "sushi", "lentil soup", "pierogi", "falafel",
    "margherita pizza", "pho", "shakshuka", "dumplings", "paella", "green curry", "bagels",
]  # fmt: skip
PROJECTS = [
    "billing service", "mobile app", "data pipeline", "search API", "onboarding flow",
    "analytics dashboard", "payments gateway", "recommendation engine", "admin panel",
]  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
COMMANDS = [
    "npm install", "pip install -r requirements.txt", "docker compose up -d",
    "pytest -x tests/", "git rebase main", "kubectl rollout restart deploy/api",
    "cargo build --release", "make migrate", "terraform apply", "poetry lock",
]  # fmt: skip
ERRORS = [
    ("ModuleNotFoundError", "No module named 'requests'"),
    ("ConnectionRefusedError", "[Errno 111] Connection refused"),
    ("PermissionError", "[Errno 13] Permission denied: '/var/lib/app'"),
    ("KeyError", "'user_id'"),
    ("TimeoutError", "the database did not answer within 30 seconds"),
    ("ImportError", "cannot import name 'Mapping' from 'collections'"),
    ("OSError", "[Errno 28] No space left on device"),
]
FIXES = [
    "pin the version in requirements.txt", "restart the postgres container",
    "run it with sudo", "set DATABASE_URL in the .env file", "clear the build cache",
    "bump the timeout to 120 seconds", "delete node_modules and reinstall",
]  # fmt: skip
# Free-text words for the chatter around the facts, drawn with Zipf weights (a few common,
# a long tail of rare ones) so term frequencies and item lengths vary as in real chats.
CHATTER = """
    really think maybe kind pretty actually time today week weekend morning evening night
    work home friend family kids dog cat coffee tea dinner lunch breakfast movie book show
    music song game weather rain sun snow cold warm tired happy busy excited nervous proud
    plan idea question problem reason story moment thing place people house car train bus
    bike walk run drive trip flight hotel ticket photo picture video message call email
    meeting deadline report budget client team manager colleague office laptop phone screen
    garden kitchen balcony window door street park river mountain forest island village
    city country border museum concert festival market shop store price sale gift birthday
    wedding party holiday vacation anniversary graduation interview promotion salary rent
    doctor dentist appointment medicine headache fever allergy gym workout stretch diet
    recipe oven pasta salad soup cake cookie bread cheese apple orange banana berry grape
    garlic onion pepper tomato potato carrot spinach rice noodle chicken fish tofu bean
    learn teach study class lesson course exam homework practice skill language spanish
    french german japanese korean italian portuguese arabic hindi mandarin russian
    paint draw write read sing dance cook bake fix build clean wash sleep wake travel visit
    borrow lend buy sell pay save spend invest donate volunteer adopt rescue foster
    brother sister mother father grandma grandpa cousin aunt uncle neighbor roommate
    partner husband wife daughter son niece nephew baby toddler teenager classmate mentor
    bright quiet noisy crowded empty huge tiny cozy fancy cheap expensive broken shiny
    ancient modern strange funny weird lovely awful gorgeous delicious spicy sweet salty
    blue green red yellow purple orange golden silver black white pink brown
    guitar violin drum piano flute trumpet cello harmonica ukulele saxophone
    tent backpack compass lantern kayak paddle canoe sailboat telescope microscope
    marathon triathlon tournament championship league season coach referee stadium
    volcano glacier canyon waterfall desert meadow lagoon reef cliff cave harbor
    sculpture mural gallery exhibit theater opera ballet symphony poetry novel memoir
"""
CHATTER_WORDS = CHATTER.split()
CHATTER_WEIGHTS = [1.0 / (rank + 1) for rank in range(len(CHATTER_WORDS))]
FEELINGS = ["great", "exhausting", "so much fun", "a bit stressful", "relaxing", "amazing"]


def _chatter(rng: random.Random) -> str:
    words = rng.choices(CHATTER_WORDS, CHATTER_WEIGHTS, k=rng.randint(3, 14))
    return " ".join(words).capitalize() + rng.choice([".", "!", "...", " lol."])


def _user_text(rng: random.Random) -> str:
    fact = _fact_text(rng)
    # Most messages carry some chatter around the fact, before or after it.
    roll = rng.random()
    if roll < 0.3:
        return fact
    if roll < 0.65:
        return f"{fact} {_chatter(rng)}"
    return f"{_chatter(rng)} {fact}"


def _fact_text(rng: random.Random) -> str:
    person, place, hobby = rng.choice(PEOPLE), rng.choice(PLACES), rng.choice(HOBBIES)
    day, food, project = rng.choice(WEEKDAYS), rng.choice(FOODS), rng.choice(PROJECTS)
    kind = rng.random()
    if kind < 0.22:
        return (
            f"I went to {place} with {person} last {day} for {hobby}. "
            f"It was {rng.choice(FEELINGS)}."
        )
    if kind < 0.34:
        return f"My favorite food is {food}, and {person} keeps telling me to try {place}."
    if kind < 0.44:
        return f"I prefer {hobby} over {rng.choice(HOBBIES)} these days."
    if kind < 0.52:
        return f"We must always review the {project} with {person} before {day}."
    if kind < 0.62:
        error, detail = rng.choice(ERRORS)
        return f"Running `{rng.choice(COMMANDS)}` for the {project} failed with {error}: {detail}"
    if kind < 0.70:
        return f"The {project} release moved to {day}; {person} owns the rollout."
    if kind < 0.80:
        return f"Do you remember what {person} said about {hobby} in {place}?"
    if kind < 0.90:
        return (
            f"{person} and I are planning a trip to {place} in {rng.randint(2, 11)} weeks, "
            f"mostly for the {food} and some {hobby}."
        )
    return f"Had a long day at work on the {project}. Going to do some {hobby} to relax."


def _assistant_text(rng: random.Random, user: str) -> str:
    if "failed with" in user:
        return f"That usually means a setup issue. Fix: {rng.choice(FIXES)}, then run it again."
    if "?" in user:
        return "You mentioned it a while ago; I will look through what I remember."
    return rng.choice(
        [
            "That sounds wonderful, thanks for sharing!",
            "Noted. I will keep that in mind.",
            "Good to know. How did it go?",
            f"Enjoy the {rng.choice(HOBBIES)}!",
        ]
    )


def synthetic_turn(rng: random.Random, lang: str = "en") -> tuple[str, str, str]:
    """(speaker, user text, assistant text) of one conversational turn."""
    user = _user_text(rng)
    assistant = _assistant_text(rng, user)
    return rng.choice(SPEAKERS), localize(user, lang), localize(assistant, lang)


def synthetic_queries(rng: random.Random, count: int, lang: str = "en") -> list[str]:
    """Questions a user might ask of this chat: entities of the corpus, common words too."""
    makers = [
        lambda: f"What did {rng.choice(SPEAKERS)} say about {rng.choice(HOBBIES)}?",
        lambda: f"When did {rng.choice(SPEAKERS)} go to {rng.choice(PLACES)}?",
        lambda: f"Who went to {rng.choice(PLACES)} with {rng.choice(PEOPLE)}?",
        lambda: f"What is {rng.choice(SPEAKERS)}'s favorite food?",
        lambda: f"How did we fix the {rng.choice(ERRORS)[0]} last time?",
        lambda: f"When is the {rng.choice(PROJECTS)} release?",
        lambda: f"What did {rng.choice(PEOPLE)} say about the {rng.choice(PROJECTS)}?",
        lambda: f"Does {rng.choice(SPEAKERS)} like {rng.choice(FOODS)}?",
        lambda: f"{rng.choice(SPEAKERS)} {rng.choice(SPEAKERS)} went last week, do you remember?",
        lambda: f"what was that command that failed: {rng.choice(COMMANDS)}",
        lambda: "What do you remember about me?",
        lambda: (
            f"Tell me about {rng.choice(PEOPLE)} and {rng.choice(HOBBIES)} in {rng.choice(PLACES)}"
        ),
    ]
    return [localize(rng.choice(makers)(), lang) for _ in range(count)]


def _turn_items(
    rng: random.Random, at: float, lang: str = "en"
) -> tuple[str, str, list[MemoryItem]]:
    """(speaker, user text, items) of one synthetic turn, as extraction and promotion
    would have stored them."""
    speaker, user, assistant = synthetic_turn(rng, lang)
    event = TurnMemoryEvent(
        scope=SCOPE,
        chat_key=SCOPE,
        user_text=user,
        assistant_text=assistant,
        at=at,
        tool_outputs=[],
        message_refs=[],
        speaker=speaker,
    )
    ids = iter(range(1 << 62))
    prefix = f"{int(at):x}{rng.getrandbits(32):08x}"
    items = extract_items(event, code_aware=True, id_factory=lambda: f"{prefix}{next(ids):02x}")
    # The store's promotion rule (`ScopeItemStore._promote_many`), applied at write time.
    promoted = [
        replace(
            item,
            id=item.id + "p",
            layer=PROMOTION_TARGET[item.type],
            references=[*item.references, PROMOTED_FROM_PREFIX + item.id],
            source="promotion",
        )
        for item in items
        if item.confidence >= PROMOTION_MIN_CONFIDENCE
    ]
    return speaker, user, items + promoted


class _CurrentValues:
    """What `memory.write.facts` does on every write, done as the scope is generated: a turn
    that states a slot ("I work at...") marks the speaker's earlier statement of it, its
    episode and its turn, as replaced. Without it the scope would be one written before
    those rules, whose first writes each find eight unmarked earlier values to mark."""

    def __init__(self) -> None:
        # (slot, speaker) -> ids of the items that state its current value
        self.current: dict[tuple[str, str], list[str]] = {}

    def update(self, speaker: str, user: str, items: list[MemoryItem]) -> set[str]:
        """The ids of earlier items this turn replaces (to be marked)."""
        if all(item.layer is Layer.EPISODIC for item in items):
            return set()  # no durable fact: `memory.write.facts` would make one; not modelled
        replaced: set[str] = set()
        stating = [item.id for item in items]
        for statement in slot_statements(user):
            key = (statement.slot, speaker)
            replaced.update(self.current.get(key, ()))
            self.current[key] = stating
        return replaced


def write_synthetic_scope(
    workspace: Path,
    item_count: int,
    seed: int,
    progress: ProgressBar | None = None,
    lang: str = "en",
) -> int:
    """Write about `item_count` items as the store would have; returns the exact count.

    Duplicates (same layer and fingerprint) are dropped, as the store would merge them,
    and a restated slot marks the earlier value replaced, as `memory.write.facts` would.
    """
    rng = random.Random(seed)
    paths = ScopePaths(workspace, SCOPE)
    by_path: dict[Path, list[MemoryItem]] = {}
    by_id: dict[str, MemoryItem] = {}
    seen: set[tuple[Layer, str]] = set()
    values = _CurrentValues()
    written = 0
    at = _START
    while written < item_count:
        at += rng.uniform(60, 900)
        when = float(int(at))
        speaker, user, items = _turn_items(rng, when, lang)
        kept = []
        for item in items:
            key = (item.layer, item.fingerprint)
            if key in seen:
                continue
            seen.add(key)
            kept.append(item)
            by_id[item.id] = item
            by_path.setdefault(paths.layer_file(item.layer, day_of(item.created_at)), []).append(
                item
            )
            written += 1
            if progress is not None:
                progress.advance(label="generating items")
        newest = next((i.id for i in kept if i.layer is not Layer.EPISODIC), None)
        for old_id in values.update(speaker, user, kept):
            old = by_id.get(old_id)
            if old is not None and not old.is_superseded:
                old.valid_to, old.superseded_by = when, newest
    for path, chunk in by_path.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\n".join(orjson.dumps(item.to_json_dict()) for item in chunk) + b"\n")
    if progress is not None:
        progress.close()
    return written


@dataclass(frozen=True, slots=True)
class MemoryBenchFigures:
    requested_items: int
    items: int
    items_after_writes: int
    queries: int
    writes: int
    pack_p50_ms: float
    pack_p95_ms: float
    pack_max_ms: float
    write_p50_ms: float
    write_p95_ms: float
    write_max_ms: float
    import_s: float
    load_s: float
    first_pack_s: float
    cold_start_s: float
    peak_rss_mb: float
    vm_hwm_mb: float
    generate_s: float
    # The generator's load of the scope, which built its index file (a bot's first start).
    index_build_s: float = 0.0
    # --embeddings: the question's embedding call (not in the pack figures), and how many
    # packs used meaning (all of them, unless the server failed).
    embed_p50_ms: float = 0.0
    embed_p95_ms: float = 0.0
    packs_by_meaning: int = 0


# Runs in the fresh child. Imports are timed from the first line, before anything of ours.
_CHILD_SCRIPT = """
import time
t0 = time.perf_counter()
import sys
from mnemobot.systems.memory_steps.context_building import pack_for_turn
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot.config.runtime import MemoryConfig
from mnemobot.bot.cli.process_tuning import tune_process
t1 = time.perf_counter()
tune_process()  # as `mnemobot` does at start-up; its cost counts in the load
from mnemobot_tooling.bench.memory_speed import measure_in_child
measure_in_child(sys.argv[1], t0, t1)
"""


_GENERATOR_SCRIPT = """
import sys
from pathlib import Path
from mnemobot_tooling.bench.memory_speed import write_synthetic_scope
from mnemobot.bot.cli.progress import terminal_progress
count = int(sys.argv[2])
written = write_synthetic_scope(
    Path(sys.argv[1]), count, int(sys.argv[3]), terminal_progress(count), sys.argv[4]
)
if sys.argv[5] == "vectors":
    from mnemobot_tooling.bench.memory_vectors import write_random_vectors
    from mnemobot_tooling.bench.memory_speed import SCOPE
    write_random_vectors(Path(sys.argv[1]), SCOPE, int(sys.argv[3]))
import time
from mnemobot.memory.services.workspace_memory import WorkspaceMemory
from mnemobot_tooling.bench.memory_speed import SCOPE, wait_until_settled
# Files written within the last moments are recorded as unsure (their CRC read at the
# next load, see `memory.store.index_file`): a bot's scope was written long before.
wait_until_settled(Path(sys.argv[1]))
begin = time.perf_counter()
memory = WorkspaceMemory.open(Path(sys.argv[1]))
memory.scopes.store(SCOPE)  # the first start: builds the index file
memory.close()
print(time.perf_counter() - begin)
print(written)
"""


def wait_until_settled(workspace: Path) -> None:
    """Wait until the scope's item files are older than the index file's unsure window."""
    from mnemobot.memory.store import index_file

    files = ScopePaths(workspace, SCOPE).item_files()
    while files and time.time() - max(p.stat().st_ctime for p in files) < (
        index_file._UNSURE_SECONDS
    ):
        time.sleep(0.1)


def peak_rss_mb() -> tuple[float, float]:
    """(ru_maxrss, VmHWM) in MB: the kernel's two views of this process's peak RSS."""
    import resource

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    hwm = float("nan")
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return maxrss, hwm


def measure_in_child(request_json: str, started: float, imported: float) -> None:
    """The child's side: load, first pack, packs, writes; prints one JSON line."""
    import asyncio

    from mnemobot.memory.services.workspace_memory import WorkspaceMemory
    from mnemobot.memory.store.item_vectors import QueryVector
    from mnemobot.systems.memory_steps.context_building import pack_for_turn
    from mnemobot_tooling.bench.memory_vectors import bench_memory_config
    from mnemobot_tooling.evals.eval_embeddings import eval_embedder

    # The load is timed from here: the bench's own modules above are no part of a bot.
    ready = time.perf_counter()
    request = json.loads(request_json)
    config = bench_memory_config(request.get("embedding_url"))
    embedder = eval_embedder(config, None)
    memory = WorkspaceMemory.open(Path(request["workspace"]), embedder=embedder)
    queries: list[str] = request["queries"]
    now = datetime.fromtimestamp(request["now"], UTC)
    loop = asyncio.new_event_loop()
    embed_ms: list[float] = []
    by_meaning = 0

    def query_vector(text: str) -> QueryVector | None:
        # The call the bot makes before a pack; timed apart from the pack.
        begin = time.perf_counter()
        vector = loop.run_until_complete(memory.vectors.query_vector(text, config))
        if vector is not None:
            embed_ms.append((time.perf_counter() - begin) * 1000.0)
        return vector

    memory.scopes.store(SCOPE)
    loaded = time.perf_counter()
    vector = query_vector(queries[0])
    asked = time.perf_counter()
    pack_for_turn(memory.recall, SCOPE, queries[0], now, config, query_vector=vector)
    first_pack = time.perf_counter()

    pack_ms: list[float] = []
    for text in queries[1:]:
        vector = query_vector(text)
        begin = time.perf_counter()
        pack = pack_for_turn(memory.recall, SCOPE, text, now, config, query_vector=vector)
        pack_ms.append((time.perf_counter() - begin) * 1000.0)
        by_meaning += pack.diagnostics.meaning == "used"

    rng = random.Random(request["seed"] + 1)
    write_ms: list[float] = []
    at = request["now"]
    for _ in range(request["writes"]):
        speaker, user, assistant = synthetic_turn(rng, request["lang"])
        at += 30.0
        begin = time.perf_counter()
        memory.record.record_turn(
            scope=SCOPE,
            user_text=user,
            assistant_text=assistant,
            at=at,
            config=config,
            tz=UTC,
            speaker=speaker,
        )
        write_ms.append((time.perf_counter() - begin) * 1000.0)

    result = {
        "import_s": imported - started,
        "load_s": loaded - ready,
        "first_pack_s": first_pack - asked,
        "embed_ms": embed_ms,
        "packs_by_meaning": by_meaning,
        "pack_ms": pack_ms,
        "write_ms": write_ms,
        "items_after_writes": len(memory.scopes.store(SCOPE)),
        "peak_rss_mb": peak_rss_mb()[0],
        "vm_hwm_mb": peak_rss_mb()[1],
    }
    print(json.dumps(result))


def run_bench(
    item_count: int,
    queries: int,
    writes: int,
    seed: int,
    lang: str = "en",
    embedding_url: str | None = None,
) -> MemoryBenchFigures:
    """`embedding_url`: a vector per item, and each question embedded there first."""
    with tempfile.TemporaryDirectory(prefix="mnemobot-bench-memory-") as tmp:
        workspace = Path(tmp)
        # Generated in a child too: a child started from a big parent would inherit the
        # parent's peak in ru_maxrss (Linux keeps it across exec).
        # On a terminal the generator draws its progress bar on our stderr directly.
        on_terminal = sys.stderr.isatty()
        begin = time.perf_counter()
        generator = subprocess.run(
            [
                *(sys.executable, "-c", _GENERATOR_SCRIPT),
                *(str(workspace), str(item_count), str(seed), lang),
                "vectors" if embedding_url else "no-vectors",
            ],
            stdout=subprocess.PIPE,
            stderr=None if on_terminal else subprocess.PIPE,
            text=True,
            # Not the caller's folder: nothing there may shadow an installed module.
            cwd=tmp,
            check=False,
        )
        if generator.returncode != 0:
            detail = generator.stderr or "(its error is printed above)"
            raise RuntimeError(f"bench generator failed:\n{detail}")
        *_, index_built, written_line = generator.stdout.strip().splitlines()
        written = int(written_line)
        generated = time.perf_counter() - begin
        request = {
            "workspace": str(workspace),
            "queries": synthetic_queries(random.Random(seed + 2), queries + 1, lang),
            "lang": lang,
            "writes": writes,
            "seed": seed,
            "embedding_url": embedding_url,
            # "Now" is just after the last generated turn, so recency behaves as in use.
            "now": _START + item_count * 400.0,
        }
        if on_terminal:
            print(
                f"measuring in a fresh process: cold start, {queries + 1} packs, {writes} writes",
                file=sys.stderr,
                flush=True,
            )
        child = subprocess.run(
            [sys.executable, "-c", _CHILD_SCRIPT, json.dumps(request)],
            capture_output=True,
            text=True,
            cwd=tmp,
            check=False,
        )
        if child.returncode != 0:
            raise RuntimeError(f"bench child failed:\n{child.stderr}")
        result = json.loads(child.stdout.strip().splitlines()[-1])
    pack_ms, write_ms = result["pack_ms"], result["write_ms"]
    cold = result["import_s"] + result["load_s"] + result["first_pack_s"]
    return MemoryBenchFigures(
        requested_items=item_count,
        items=written,
        items_after_writes=result["items_after_writes"],
        queries=len(pack_ms),
        writes=len(write_ms),
        pack_p50_ms=statistics.median(pack_ms),
        pack_p95_ms=percentile(pack_ms, 0.95),
        pack_max_ms=max(pack_ms),
        write_p50_ms=statistics.median(write_ms),
        write_p95_ms=percentile(write_ms, 0.95),
        write_max_ms=max(write_ms),
        import_s=result["import_s"],
        load_s=result["load_s"],
        first_pack_s=result["first_pack_s"],
        cold_start_s=cold,
        peak_rss_mb=result["peak_rss_mb"],
        vm_hwm_mb=result["vm_hwm_mb"],
        generate_s=generated - float(index_built),
        index_build_s=float(index_built),
        embed_p50_ms=statistics.median(result["embed_ms"]) if result["embed_ms"] else 0.0,
        embed_p95_ms=percentile(result["embed_ms"], 0.95) if result["embed_ms"] else 0.0,
        packs_by_meaning=result["packs_by_meaning"],
    )


def machine() -> dict[str, Any]:
    return {
        "nproc": usable_cpus(),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _verdict(figures: MemoryBenchFigures, key: str, value: float) -> str:
    limit = TARGETS.get(figures.requested_items, {}).get(key)
    if limit is None:
        return ""
    return f"target <= {limit:g}: {'ok' if value <= limit else 'MISSED'}"


def format_table(figures: MemoryBenchFigures, host: dict[str, Any]) -> str:
    f = figures
    rows = [
        ("pack build p50", f"{f.pack_p50_ms:.2f} ms", ""),
        ("pack build p95", f"{f.pack_p95_ms:.2f} ms", _verdict(f, "pack_p95_ms", f.pack_p95_ms)),
        ("pack build max", f"{f.pack_max_ms:.2f} ms", ""),
        ("turn write p50", f"{f.write_p50_ms:.2f} ms", ""),
        (
            "turn write p95",
            f"{f.write_p95_ms:.2f} ms",
            _verdict(f, "write_p95_ms", f.write_p95_ms),
        ),
        ("turn write max", f"{f.write_max_ms:.2f} ms", ""),
        (
            "cold start to first pack",
            f"{f.cold_start_s:.3f} s",
            _verdict(f, "cold_start_s", f.cold_start_s),
        ),
        ("  imports", f"{f.import_s:.3f} s", ""),
        ("  scope load + index build", f"{f.load_s:.3f} s", ""),
        ("  first pack", f"{f.first_pack_s:.3f} s", ""),
        (
            "peak RSS (ru_maxrss)",
            f"{f.peak_rss_mb:.0f} MB",
            _verdict(f, "peak_rss_mb", f.peak_rss_mb),
        ),
        ("peak RSS (VmHWM)", f"{f.vm_hwm_mb:.0f} MB", ""),
    ]
    if f.embed_p95_ms:
        rows += [
            ("question embedding p50", f"{f.embed_p50_ms:.1f} ms", "(not in the pack figures)"),
            ("question embedding p95", f"{f.embed_p95_ms:.1f} ms", ""),
            ("packs that used meaning", f"{f.packs_by_meaning}", f"of {f.queries}"),
        ]
    width = max(len(name) for name, _, _ in rows)
    lines = [
        f"bench memory: {f.items} items in scope {SCOPE} "
        f"({f.queries} packs, {f.writes} turn writes; {f.items_after_writes} items after)",
        f"machine: {host['nproc']} cpus, {host['cpu']}, Python {host['python']}",
        f"(synthetic scope generated in {f.generate_s:.1f} s, its index file built in"
        f" {f.index_build_s:.1f} s by a first load; neither measured below)",
        "",
    ]
    lines += [
        f"  {name:<{width}}  {value:>10}  {verdict}".rstrip() for name, value, verdict in rows
    ]
    return "\n".join(lines)


def bench_command(args: argparse.Namespace) -> int:
    if args.embeddings:
        with embedding_server(args.embedding_url) as url:
            figures = run_bench(args.items, args.queries, args.writes, args.seed, args.lang, url)
    else:
        figures = run_bench(args.items, args.queries, args.writes, args.seed, args.lang)
    host = machine()
    if args.json:
        print(
            json.dumps({"machine": host, **asdict(figures), "targets": TARGETS.get(args.items, {})})
        )
    else:
        print(format_table(figures, host))
    return 0
