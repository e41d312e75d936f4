"""Forgetting and erasure: an item hidden at once, its text erased from every file at the
next maintenance; a whole scope erased, moved to a new key or exported.

What goes with a forgotten item and which texts are erased: `memory.upkeep.forgotten_texts`;
how the files are redacted: `memory.upkeep.forgetting`. Every method runs under the scope's
lock (see `scopes`), except the redaction of conversations, which waits for their
sessions instead.
"""

from __future__ import annotations

from dataclasses import replace

from mnemobot.memory.notes.daily_notes import redact_daily_notes
from mnemobot.memory.services.scopes import ScopeRuntime
from mnemobot.memory.services.vectors import MemoryVectors
from mnemobot.memory.store import scope_move
from mnemobot.memory.store.item_store import PROMOTED_FROM_PREFIX, ScopeItemStore
from mnemobot.memory.store.items import ItemType, MemoryItem, normalize_content
from mnemobot.memory.store.scope_move import RenameRef
from mnemobot.memory.text.terms import terms
from mnemobot.memory.upkeep.digest_days import rewrite_digests
from mnemobot.memory.upkeep.forgetting import (
    PENDING_FILE_NAME,
    ErasureReport,
    erase_scope,
    erase_texts_from_conversations,
    erase_texts_from_memory_files,
    export_scope,
    finish_erasure,
    note_forgotten,
    pending_needles,
)
from mnemobot.memory.upkeep.forgotten_texts import (
    FORGET_QUERY_MAX_ITEMS,
    ForgetOutcome,
    ForgottenTexts,
    items_to_forget,
    lines_holding,
)
from mnemobot.memory.upkeep.text_holders import FILE_SESSION_HOLDS, SessionHolds, TextKeeper
from mnemobot.memory.write.standing import restore_changed_aspects


class MemoryForget:
    def __init__(self, scopes: ScopeRuntime, vectors: MemoryVectors) -> None:
        self.scopes = scopes
        self.vectors = vectors
        # How the erasure keeps a chat's turns out of its session, and where else sessions
        # are kept (replicas: Redis); more files quoting the chats (a channel's journals).
        self.session_holds: SessionHolds = FILE_SESSION_HOLDS
        self._keepers: list[TextKeeper] = []

    def keep_sessions_in(self, holds: SessionHolds) -> None:
        """Sessions live elsewhere too (replicas: Redis): the erasure redacts them there."""
        self.session_holds = holds

    def add_keeper(self, keeper: TextKeeper) -> None:
        """More files that quote what the chats said, redacted with every erasure."""
        self._keepers.append(keeper)

    def forget(self, scope: str, item_id: str) -> list[str]:
        """Forget an item and whatever would still tell the same thing; ids forgotten.

        What goes with it and which texts are erased: `memory.upkeep.forgotten_texts`. Daily-note
        lines are redacted at once (the legacy context shows them); the other files at the
        next maintenance (`erase_forgotten`).
        """
        return [item.id for item in self.forget_items(scope, item_id)]

    def forget_items(self, scope: str, item_id: str) -> list[MemoryItem]:
        """`forget`, returning the items forgotten (the named one first)."""
        with self.scopes.loaded(scope) as loaded:
            return self._forget(loaded.store, scope, item_id)

    def _forget(self, store: ScopeItemStore, scope: str, item_id: str) -> list[MemoryItem]:
        item = store.get(item_id)
        if item is None:
            return []
        going, needles = items_to_forget(store.items.values(), item, PROMOTED_FROM_PREFIX)
        for victim in going:
            store.forget(victim.id)
        gone = [victim for victim in going if store.get(victim.id) is None]
        # What only the forgotten statement replaced holds again: forgetting "I moved to
        # Berlin" leaves "I live in Paris" current, not earlier than nothing.
        gone_ids = {victim.id for victim in gone}
        replaced = [
            replace(kept, valid_to=None, superseded_by=None)
            for kept in store.items.values()
            if kept.superseded_by in gone_ids
        ]
        if replaced:
            store.add(replaced)
        restore_changed_aspects(store, gone)
        rewrite_digests(store, going)
        self._note_forgotten_texts(scope, needles)
        return gone

    def _note_forgotten_texts(self, scope: str, needles: list[str]) -> None:
        paths = self.scopes.paths(scope)
        for needle in needles:
            redact_daily_notes(paths.directory, needle)
        # The rest (item files, sessions, offload logs, MEMORY.md) at the next maintenance.
        note_forgotten(paths, needles)

    def forget_matching(self, scope: str, query: str) -> ForgetOutcome:
        """Forget every item, MEMORY.md line and daily-note line that holds all the words
        of `query` ("locker code"), with what goes with each (see `forget`).

        A query matching more than `FORGET_QUERY_MAX_ITEMS` items forgets nothing: it is
        too broad to be what the user meant.
        """
        wanted = list(dict.fromkeys(terms(query)))
        if not wanted:
            return ForgetOutcome()
        paths = self.scopes.paths(scope)
        with self.scopes.loaded(scope) as loaded:
            store, index = loaded.store, loaded.index
            rarest = min(wanted, key=index.document_frequency)
            matching = [
                item
                for item_id in index.scores([rarest])
                if (item := store.items.get(item_id)) is not None
                and set(wanted) <= set(terms(item.content))
            ]
            if len(matching) > FORGET_QUERY_MAX_ITEMS:
                return ForgetOutcome(too_many=len(matching))
            lines = lines_holding(paths, set(wanted))
            gone: dict[str, MemoryItem] = {}
            for item in sorted(matching, key=lambda i: i.type is not ItemType.TURN):
                if item.id not in gone:
                    going = self._forget(store, scope, item.id)
                    gone.update((victim.id, victim) for victim in going)
            self._note_forgotten_texts(scope, [normalize_content(line) for line in lines])
        return ForgetOutcome(items=list(gone.values()), lines=len(lines))

    def forgotten_texts(self, scope: str) -> ForgottenTexts:
        """Texts of the scope forgotten and not yet erased from every file."""
        return ForgottenTexts.pending(self.scopes.paths(scope))

    def erase_forgotten(self, scope: str, *, session_wait_seconds: float = 30.0) -> ErasureReport:
        """Maintenance step: remove what `forget` hid from every file of the scope.

        Live items still holding a forgotten text are forgotten too; item files are
        rewritten without forgotten items (tombstones keep only ids and fingerprints);
        daily notes, MEMORY.md and its versions, the sessions and offload logs of the
        scope's chats (and their copies elsewhere, `keep_sessions_in`), and the files
        keepers hold (`add_keeper`) are redacted. A session a turn holds for longer than
        `session_wait_seconds` keeps the erasure pending for the next run. Cheap when
        nothing was forgotten since the last run.
        """
        paths = self.scopes.paths(scope)
        needles = pending_needles(paths)
        if not needles and not self.scopes.is_loaded(scope):
            # Nothing forgotten since the last run: not worth loading a cold scope for.
            return ErasureReport(scope)
        # The conversations first, each under its session's lock: a turn holds that lock
        # until it has recorded itself in memory, so what a turn still running wrote (its
        # note line, its items) is on disk before the memory files below are redacted.
        # Not under the scope's lock: the turn may need it before it lets go.
        holds = self.session_holds
        report = erase_texts_from_conversations(
            self.scopes.workspace, scope, needles, wait_seconds=session_wait_seconds, holds=holds
        )
        with self.scopes.loaded(scope) as loaded:
            store = loaded.store
            forgotten = ForgottenTexts(tuple(needles))
            for other in [i for i in store.items.values() if forgotten.holds(i.content)]:
                store.forget(other.id)
            stats = store.stats()
            if needles or stats.lines > stats.items + stats.tombstones:
                store.compact_files()
            if needles:
                # A forgotten item's vector goes with it: the file is rewritten with the
                # vectors of live items only.
                self.vectors.compact(scope, loaded)
            report.add(
                erase_texts_from_memory_files(
                    self.scopes.workspace, paths, needles, skip=paths.item_files()
                )
            )
        if needles:
            self._erase_kept(report, scope, needles, session_wait_seconds)
            done = holds.after_erasure()
            if done:
                report.elsewhere.append(done)
        if not report.busy:
            with self.scopes.lock(scope):
                finish_erasure(paths, needles)
        return report

    def _erase_kept(
        self, report: ErasureReport, scope: str, needles: list[str], wait_seconds: float
    ) -> None:
        for keeper in self._keepers:
            kept = keeper.redact_texts(scope, needles, wait_seconds)
            report.files_rewritten += kept.files
            report.busy += kept.busy

    def scopes_to_erase(self) -> list[str]:
        """Scopes with forgotten texts still on disk (what `erase_forgotten` has to do)."""
        root = self.scopes.workspace / "memory"
        if not root.is_dir():
            return []
        return sorted(p.parent.name for p in root.glob(f"*/{PENDING_FILE_NAME}"))

    def erase_scope(self, scope: str) -> list[str]:
        """Delete the scope's memory and the chat's session files (/forget_me); what went.

        Its vectors go with the directory; what waits to be embedded is dropped."""
        with self.scopes.loaded(scope):
            self.vectors.discard_pending(scope)
            self.scopes.drop(scope)
            return erase_scope(self.scopes.workspace, scope)

    def move_scope(self, old: str, new: str, rename_ref: RenameRef | None = None) -> int:
        """Move scope `old`'s memory to scope `new` (a chat's new id), merged into what
        `new` has; how many files moved (0: `old` had none). `rename_ref` renames the moved
        items' references. Both scopes are read again afterwards.

        What waits to be embedded for `old` is dropped: its items are embedded under `new`
        when they are read there."""
        with self.scopes.lock(old), self.scopes.lock(new):
            self.vectors.discard_pending(old)
            count = scope_move.move_scope(
                self.scopes.workspace, old, new, rename_ref or scope_move.keep_ref
            )
            self.scopes.reload(old)
            self.scopes.reload(new)
        return count

    def export_scope(self, scope: str) -> bytes:
        """The scope's memory files as one zip (/export)."""
        with self.scopes.lock(scope):
            return export_scope(self.scopes.workspace, scope)
