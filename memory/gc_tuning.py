"""Garbage-collector settings for a process that holds big memory scopes; set once at start-up.

A loaded scope of 100,000 items is ~400,000 container objects the collector tracks, and
none of them is ever part of a reference cycle. With CPython's defaults a full collection
runs whenever the long-lived objects grew by a quarter, so loading a big scope triggered
about five of them, each walking everything loaded so far (load 1.3 -> 1.9 s of CPU at
100k items), and every later one walks all loaded scopes while holding the GIL (~0.2 s per
100k items, a stall for every chat). Young collections stay as they are: they only see
recent objects, so they stay short whichever thread triggers them.

This is process-wide state, so it is set by the entry points (the CLI, benches), never
by a load: a load runs in a worker thread while other chats go on.
"""

from __future__ import annotations

import gc

# Young collections (generations 0 and 1) between two full ones; CPython's default is 10.
# At 1000 a full collection waits for ~7 million surviving objects (about twenty loads of a
# 100k-item scope) and still needs the long-lived heap to have grown by a quarter. Not a
# runtime-config field: it is applied once before any config is read, and only a process
# restart could change it.
FULL_COLLECTION_EVERY_YOUNG_COLLECTIONS = 1000


def tune_gc() -> None:
    """Freeze what start-up allocated and make full collections rare; call once, after imports.

    Frozen objects (modules, classes, functions: never garbage) are skipped by every later
    collection. Idempotent: calling it again only freezes what is alive by then.
    """
    gc.collect()
    gc.freeze()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY_YOUNG_COLLECTIONS)
