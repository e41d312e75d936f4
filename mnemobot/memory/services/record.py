"""Record: every durable write into a scope, whichever way it came (a turn, an edited
message, an import, the compaction flush, the memory tool, consolidation's supersessions).

Each goes through `memory.write.write_path`, so the same rules weigh, merge and update facts;
the daily note line is written here, beside the items. Every method runs under the
scope's lock (see `scopes`).

Longer than a module of ours should be: every door that writes to a scope (a turn, an
edit, the flush, the memory tool, a rewrite) is one method here so that all of them take
the same lock and go through the same write path; the rules themselves live in
`memory.write`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import tzinfo

from mnemobot.config.runtime import MemoryConfig
from mnemobot.memory.notes.daily_notes import (
    append_daily_note,
    append_noted_facts,
    write_memory_file,
)
from mnemobot.memory.services.recall import ranked_search
from mnemobot.memory.services.scopes import ScopeRuntime
from mnemobot.memory.store.item_store import ScopeItemStore
from mnemobot.memory.store.items import (
    DocumentText,
    ForwardedText,
    ItemType,
    Layer,
    MemoryItem,
    TurnMemoryEvent,
)
from mnemobot.memory.text.terms import terms
from mnemobot.memory.upkeep.consolidation import SupersededHook
from mnemobot.memory.upkeep.digest_days import rewrite_digests
from mnemobot.memory.upkeep.forgotten_texts import ForgottenTexts
from mnemobot.memory.write.documents import DOCUMENT_TAG
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning
from mnemobot.memory.write.fact_items import new_fact
from mnemobot.memory.write.facts import supersede
from mnemobot.memory.write.restatements import SimilarFinder
from mnemobot.memory.write.write_path import (
    FORWARDED_TAG,
    FactWrite,
    RecordedTurn,
    flushed_facts,
    new_flushed,
    promote_item,
    rewrite_fact,
    write_document,
    write_facts,
    write_forwarded,
    write_turn,
)

# Terms a similar-text search (duplicates, a fact's turn) uses: the text's rarest.
_SIMILAR_QUERY_TERMS = 6
# BM25 relevance (0..1 within the query's hits) a durable fact needs to count as the one
# a superseded MEMORY.md entry is about (`supersede_matching`).
SUPERSEDED_MATCH_MIN = 0.9
# An item of an edited message was recorded at the message's turn or later; times are
# kept to the second, so one second of slack. An item of the same ref from before that is
# another message with the same number.
SAME_MESSAGE_SLACK_SECONDS = 1.0


def similar_finder(scopes: ScopeRuntime, scope: str) -> SimilarFinder:
    """Ids of the scope's items most like a text (a restatement, the turn a fact was said
    in), for the write path's merges."""

    def similar(text: str, count: int) -> list[str]:
        query_terms = terms(text)
        if not query_terms:
            return []
        with scopes.loaded(scope) as loaded:
            # What is looked for (a restatement, the turn a fact was said in) holds
            # most of the text's terms, so it holds its rarest: searching with those
            # only finds it as well and skips the long posting lists of common words
            # (3 ms a search at 100k items with every term, well under 1 ms so).
            rarest = sorted(set(query_terms), key=loaded.index.document_frequency)
            hits = loaded.index.top(rarest[:_SIMILAR_QUERY_TERMS], count)
        return sorted(hits, key=hits.__getitem__, reverse=True)[:count]

    return similar


def forwarded_note(forwarded: Sequence[ForwardedText]) -> str:
    """The daily note's user side for a turn of forwards only, each with its author."""
    return " ".join(f"[forwarded from {f.author}] {f.text}" for f in forwarded)


class MemoryRecord:
    def __init__(
        self, scopes: ScopeRuntime, extraction: ExtractionTuning = DEFAULT_EXTRACTION
    ) -> None:
        """`extraction`: how sure and how salient what a turn says is taken to be (the
        bot's; an eval or a test passes another)."""
        self.scopes = scopes
        self.extraction = extraction

    def record_turn(
        self,
        *,
        scope: str,
        user_text: str,
        assistant_text: str,
        at: float,
        config: MemoryConfig,
        tz: tzinfo,
        message_refs: list[str] | None = None,
        tool_outputs: list[str] | None = None,
        tool_errors: Sequence[str] = (),
        speaker: str | None = None,
        chat_key: str = "",
        forwarded: Sequence[ForwardedText] = (),
        documents: Sequence[DocumentText] = (),
        tags: Sequence[str] = (),
        note_speaker: str | None = None,
        sole_speaker: bool = False,
    ) -> RecordedTurn:
        """The dual write of one answered turn: the daily note line, then the items.

        `forwarded`: messages the user passed on, remembered as their authors' words at
        their dates; `documents`: files' texts, remembered in chunks (never as facts);
        `tags`: added to the turn's items ("voice", "photo"); `tool_errors`: the results of
        the turn's failed tool calls (not failures of the user's when the answer repeats
        them); `note_speaker`: whom the daily note line names (a group's member; None:
        "User"); `sole_speaker`: the speaker is the scope's one person (a private chat),
        whose facts under another name are theirs too (`memory.write.sole_speaker`).
        """
        with self.scopes.loaded(scope) as loaded:
            recorded = self._record_turn(
                loaded.store,
                scope=scope,
                user_text=user_text,
                note_text=user_text if user_text.strip() else forwarded_note(forwarded),
                assistant_text=assistant_text,
                at=at,
                tz=tz,
                message_refs=message_refs,
                tool_outputs=tool_outputs,
                tool_errors=list(tool_errors),
                speaker=speaker,
                chat_key=chat_key,
                tags=list(tags),
                note_speaker=note_speaker,
                sole_speaker=sole_speaker,
            )
            stored, promoted = list(recorded.stored), list(recorded.promoted)
            event = TurnMemoryEvent(
                scope=scope,
                chat_key=chat_key or scope,
                user_text=user_text,
                assistant_text="",
                at=at,
                message_refs=list(message_refs or []),
            )
            similar = similar_finder(self.scopes, scope)
            for passed_on in forwarded:
                written = write_forwarded(
                    loaded.store, event, passed_on, similar=similar, extraction=self.extraction
                )
                stored += written.stored
                promoted += written.promoted
            for document in documents:
                stored += write_document(
                    loaded.store,
                    document,
                    scope=scope,
                    at=at,
                    speaker=speaker,
                    extraction=self.extraction,
                )
            return RecordedTurn(stored, promoted)

    def _record_turn(
        self,
        store: ScopeItemStore,
        *,
        scope: str,
        user_text: str,
        assistant_text: str,
        at: float,
        tz: tzinfo,
        message_refs: list[str] | None,
        tool_outputs: list[str] | None,
        speaker: str | None,
        chat_key: str,
        tags: list[str] | None = None,
        tool_errors: list[str] | None = None,
        note_text: str | None = None,
        note_speaker: str | None = None,
        sole_speaker: bool = False,
    ) -> RecordedTurn:
        """`note_text`: the user's side of the daily note when it is not `user_text` (a
        turn of forwards only: whose words they were, not an empty "User:")."""
        paths = self.scopes.paths(scope)
        # An answer repeating what was just forgotten ("I removed your code QX-7...") is not
        # kept; the user saying it again, on purpose, is a new statement and is.
        assistant_text = ForgottenTexts.pending(paths).redact(assistant_text)
        note = user_text if note_text is None else note_text
        append_daily_note(paths.directory, note, assistant_text, at=at, tz=tz, speaker=note_speaker)
        event = TurnMemoryEvent(
            scope=scope,
            chat_key=chat_key or scope,
            user_text=user_text,
            assistant_text=assistant_text,
            at=at,
            tool_outputs=list(tool_outputs or []),
            tool_errors=list(tool_errors or []),
            message_refs=list(message_refs or []),
            speaker=speaker,
            sole_speaker=sole_speaker,
            tags=list(tags or []),
        )
        return write_turn(
            store, event, similar=similar_finder(self.scopes, scope), extraction=self.extraction
        )

    def revise_message(
        self,
        *,
        scope: str,
        ref: str,
        user_text: str,
        assistant_text: str,
        at: float,
        now: float,
        config: MemoryConfig,
        tz: tzinfo,
        message_refs: Sequence[str],
        speaker: str | None = None,
        chat_key: str = "",
        tags: Sequence[str] = (),
        sole_speaker: bool = False,
    ) -> RecordedTurn:
        """A message edited after its turn: the turn is recorded again with the new wording
        at its own time `at`, and what memory held of the old wording (the turn, the facts
        derived from it) is marked earlier as of `now`, so it is never recalled as current.
        Forwarded messages and documents of the turn have refs of their own and stay, and
        so does what was recorded before the message was sent: another message of the same
        number (an earlier bot of the chat numbered its messages too, and so did an import
        made before imports had refs of their own).
        """
        with self.scopes.loaded(scope) as loaded:
            store = loaded.store
            stale = [
                item.id
                for item in store.items.values()
                if ref in item.references
                and not item.is_superseded
                and FORWARDED_TAG not in item.tags
                and item.source != DOCUMENT_TAG
                and max(item.created_at, item.updated_at) >= at - SAME_MESSAGE_SLACK_SECONDS
            ]
            append_daily_note(
                self.scopes.paths(scope).directory,
                f"(edited an earlier message) {user_text}",
                "",
                at=now,
                tz=tz,
            )
            event = TurnMemoryEvent(
                scope=scope,
                chat_key=chat_key or scope,
                user_text=user_text,
                assistant_text=assistant_text,
                at=at,
                message_refs=list(message_refs),
                speaker=speaker,
                sole_speaker=sole_speaker,
                tags=list(tags),
            )
            similar = similar_finder(self.scopes, scope)
            # Written first: a fact the edit kept word for word merges into its stored
            # item, which then stays current; only what the new wording lacks is marked.
            recorded = write_turn(store, event, similar=similar, extraction=self.extraction)
            kept = {item.id for item in (*recorded.stored, *recorded.promoted)}
            marked = supersede(store, [i for i in stale if i not in kept], None, now, similar)
            # Marking follows an old fact to the turns said when it was, and the new
            # wording's turn carries the same time: it stays current.
            again = [
                replace(item, valid_to=None, superseded_by=None)
                for item in marked
                if item.id in kept
            ]
            if again:
                store.add(again)
            # The day's digest shows the new wording, not the old.
            rewrite_digests(store, marked)
            return recorded

    def add_flushed_facts(
        self,
        scope: str,
        bullets: list[str],
        *,
        at: float,
        session_key: str,
        tz: tzinfo | None = None,
        config: MemoryConfig | None = None,
    ) -> int:
        """Facts the compaction flush found: into the daily note and the durable layers.
        Those memory keeps already (or forgot) are left out of both (`new_flushed`)."""
        facts = flushed_facts(bullets, scope=scope, at=at, session_key=session_key)
        if not facts:
            return 0
        with self.scopes.loaded(scope) as loaded:
            similar = similar_finder(self.scopes, scope)
            facts = new_flushed(loaded.store, facts, similar=similar)
            if not facts:
                return 0
            # The model's words: noted as such, never as something the user said.
            append_noted_facts(
                self.scopes.paths(scope).directory,
                [fact.content for fact in facts],
                at=at,
                tz=tz,
            )
            written = write_facts(loaded.store, facts, at=at, similar=similar)
            return len(written.stored)

    def add_fact(
        self,
        scope: str,
        content: str,
        *,
        item_type: ItemType,
        at: float,
        config: MemoryConfig,
        speaker: str | None = None,
        tags: Sequence[str] = (),
        references: Sequence[str] = (),
        sole_speaker: bool = False,
    ) -> FactWrite:
        """A fact the model saves (the memory tool), said by `speaker` if named.

        Weighted as `fact_items` weighs the tool's facts; a repeat merges into the stored fact
        and a newer value of a slot replaces the older one, as a turn's facts do (of the
        speaker under any name when `sole_speaker`, as `record_turn`). Nothing is stored
        when the text was forgotten at the user's request at `at` or later.
        """
        fact = new_fact(
            content,
            item_type=item_type,
            scope=scope,
            at=at,
            source="tool",
            extraction=self.extraction,
            speaker=speaker,
            tags=tags,
            references=references,
        )
        with self.scopes.loaded(scope) as loaded:
            return write_facts(
                loaded.store,
                [fact],
                at=at,
                similar=similar_finder(self.scopes, scope),
                sole_speaker=sole_speaker,
            )

    def rewrite_fact(
        self,
        scope: str,
        item_id: str,
        *,
        content: str,
        tags: list[str] | None,
        at: float,
        config: MemoryConfig,
        rewriter: str | None = None,
        references: Sequence[str] = (),
    ) -> FactWrite:
        """An item's new wording (the memory tool's update) at `rewriter`'s request, from
        the messages `references` names; nothing stored for an unknown id, and the value it
        replaced kept, marked earlier (`write_path.rewrite_fact`).

        ValueError when the text was forgotten or another item already holds it.
        """
        with self.scopes.loaded(scope) as loaded:
            return rewrite_fact(
                loaded.store,
                item_id,
                content=content,
                tags=tags,
                at=at,
                similar=similar_finder(self.scopes, scope),
                rewriter=rewriter,
                references=references,
            )

    def promote(
        self, scope: str, item_id: str, *, at: float, config: MemoryConfig
    ) -> MemoryItem | None:
        """Make an episode durable (the memory tool's promote); None if it is not one."""
        with self.scopes.loaded(scope) as loaded:
            return promote_item(
                loaded.store,
                item_id,
                at=at,
                similar=similar_finder(self.scopes, scope),
            )

    def supersede_matching(
        self, scope: str, entries: list[str], *, at: float, config: MemoryConfig
    ) -> list[str]:
        """Consolidation's replacements: the durable facts matching MEMORY.md entries the
        model called superseded are marked earlier from `at` on; ids marked.

        Only a near-certain match (`SUPERSEDED_MATCH_MIN` of the best BM25 relevance) is
        marked: an entry names its fact in other words, and a wrong mark hides a fact.
        """
        with self.scopes.loaded(scope) as loaded:
            stale: list[str] = []
            for entry in entries:
                stale += [
                    item.id
                    for item, score in ranked_search(loaded, entry, limit=3)
                    if score >= SUPERSEDED_MATCH_MIN and item.layer is not Layer.EPISODIC
                ]
            if not stale:
                return []
            marked = supersede(
                loaded.store,
                list(dict.fromkeys(stale)),
                None,
                at,
                similar_finder(self.scopes, scope),
            )
            return [item.id for item in marked]

    def write_memory_file(self, scope: str, text: str, *, append: bool, max_chars: int) -> int:
        """Replace the scope's MEMORY.md, or append to it; its new length in characters.

        MemoryFileTooLong when the file would be longer than `max_chars`.
        """
        with self.scopes.lock(scope):
            return write_memory_file(
                self.scopes.paths(scope).memory_file, text, append=append, max_chars=max_chars
            )


def supersede_matching_facts(
    record: MemoryRecord, config: Callable[[], MemoryConfig]
) -> SupersededHook:
    """A consolidation hook: the durable facts matching entries the model called superseded
    are marked as earlier (dated, kept), so no pack shows them as current."""

    def mark(scope: str, entries: list[str], at: float) -> None:
        record.supersede_matching(scope, entries, at=at, config=config())

    return mark
