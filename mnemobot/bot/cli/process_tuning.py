"""Interpreter settings for a process that holds big memory scopes; set once at start-up.

Both are process-wide, so the entry points (the CLI, benches) set them, never a load: a
load runs in a worker thread while other chats go on.

Garbage collector. A loaded scope of 100,000 items is ~400,000 container objects the
collector tracks, and none of them is ever part of a reference cycle. With CPython's
defaults a full collection runs whenever the long-lived objects grew by a quarter, so
loading a big scope triggered about five of them, each walking everything loaded so far
(load 1.35 -> 1.85 s of CPU at 100k items), and every later one walks all loaded scopes
while holding the GIL (~0.2 s per 100k items: a stall for every chat). Young collections
stay as they are: they only see recent objects, so they stay short whichever thread
triggers them.

GIL switch interval. While a worker thread loads a scope, the event loop gets the GIL back
only when the worker is asked to drop it, by default after 5 ms, and a reply takes the loop
through many such waits (each socket wake-up, each finished worker call). At 1 ms a warm
chat's turn runs nearly as if no load were going on; the extra switches cost the load
itself little (it is one thread among few).
"""

from __future__ import annotations

import gc
import sys

# Young collections (generations 0 and 1) between two full ones; CPython's default is 10.
# At 1000 a full collection waits for ~7 million surviving objects (about twenty loads of a
# 100k-item scope) and still needs the long-lived heap to have grown by a quarter.
FULL_COLLECTION_EVERY_YOUNG_COLLECTIONS = 1000
# Seconds a thread may hold the GIL while another waits for it (CPython's default: 0.005).
GIL_SWITCH_INTERVAL_SECONDS = 0.001
# Neither is a runtime-config field: both are applied once, before any config is read,
# and only a process restart could change them.


def tune_process() -> None:
    """Freeze what start-up allocated, make full collections rare, switch threads sooner.

    Call once, after the imports. Frozen objects (modules, classes, functions: never
    garbage) are skipped by every later collection. No collection first: the little
    garbage of the imports is not worth ~30 ms of every cold start. Calling it again only
    freezes what is alive by then.
    """
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY_YOUNG_COLLECTIONS)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_SECONDS)
