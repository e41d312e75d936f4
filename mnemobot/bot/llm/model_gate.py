"""Replies first: the order in which model calls reach a server that works on few at once.

A local server (llama.cpp, llama-cpp-python, Ollama) answers one request at a time: a
consolidation that reaches it just before a user's reply makes the user wait for the whole
rewrite. So every call passes this gate (`OpenAIChatModel.complete`):

- a *reply* call, one made inside a chat's turn (`ModelGate.turn`: the tool loop, the
  compaction the turn needs, a `/compact`), waits only for a free slot, ahead of every
  background call;
- a *background* call, one made outside any turn (memory consolidation, an image's
  description), also waits while any turn is in flight in this process and, with
  replicas, in any (`TurnBoard`): between two model calls of a turn (while a tool runs) it
  does not slip in either. A turn counts from when it holds its chat: one queued behind
  another of its chat may be waiting on memory work that waits here.

With `llm.serverSlots` 0 (the default for hosted APIs) nothing waits. A call's own time
limit counts from when it passes the gate, never while it waits
(`ChatRequest.deadline_seconds`).

A background call already sent holds the server until it ends: a rewrite of MEMORY.md of
5,000 tokens took 51 s on a small home server and a user's 6 s reply came after 29 s
(live, llama-cpp-python). One that can be done later (`ChatRequest.yields_to_replies`)
is told to give way (`admitted` hands it an event, set once a reply waits for its slot);
the model client then closes it, which stops a streaming server's work. Such a call also
waits for a quiet spell after a turn (`BACKGROUND_QUIET_SECONDS`): closed, it still holds a
server that finishes reading its prompt first.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Literal, Protocol

from mnemobot.bot.llm.window_reports import is_local_endpoint

log = logging.getLogger(__name__)

# How often a background call asks the replicas' board whether a turn is still in flight.
BOARD_POLL_SECONDS = 1.0
# A background call that can be done later (`ChatRequest.yields_to_replies`: consolidation,
# a rewrite, a compaction's flush) waits until no turn has ended for this long: a call
# sent meanwhile holds the server even once it gives way. Live (QA on llama-cpp-python with
# a 2,048-token window): consolidation sent the moment a turn ended, the next message 4 s
# later waited 35 s for the server to finish reading the abandoned 1,781-token prompt; at
# 20 s, a flush sent 20 s after a reply held the message that came while it ran 11-34 s
# more (people read a reply and type for longer than that). Not measured as a sweep: a
# minute, past the time most answers take, costs background work only that minute.
BACKGROUND_QUIET_SECONDS = 60.0

_in_turn: contextvars.ContextVar[str | None] = contextvars.ContextVar("model_turn", default=None)


def server_slots(setting: Literal["auto"] | int, base_url: str | None) -> int:
    """`llm.serverSlots` for the server at `base_url` ("auto": one for a server on this
    machine or its network, none for a hosted API); 0 means no limit."""
    if setting == "auto":
        return 1 if is_local_endpoint(base_url) else 0
    return setting


class TurnBoard(Protocol):
    """Turns in flight in every replica (Redis), for background calls to wait on."""

    async def begin(self, key: str) -> str:
        """Mark a turn of chat `key` in flight; returns the mark to end it with."""
        ...

    async def end(self, mark: str) -> None: ...

    async def any_in_flight(self) -> bool: ...


class ModelGate:
    """Orders calls to one model server (see the module docstring); on the event loop."""

    def __init__(
        self,
        slots: Callable[[], int],
        board: TurnBoard | None = None,
        *,
        quiet_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`slots`: how many calls the server takes at once, read at each call (the runtime
        config may change); 0: unlimited. `board`: turns in flight in other replicas.
        `quiet_seconds`: how long after a turn of this process a background call waits
        (`BACKGROUND_QUIET_SECONDS` in the bot)."""
        self.slots = slots
        self.board = board
        self.quiet_seconds = quiet_seconds
        self.clock = clock
        self._last_turn_end: float | None = None
        self._changed: asyncio.Condition | None = None
        self._turns = 0
        self._sending = 0
        self._replies_waiting = 0
        self.background_waiting = 0
        # One event per background call under way that gives way to replies.
        self._giving_way: set[asyncio.Event] = set()

    def _condition(self) -> asyncio.Condition:
        # Made on first use, on the loop that uses the gate.
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        """A chat's turn is in flight: its calls are replies, background calls wait."""
        mark: str | None = None
        if self.board is not None and self.slots():
            try:
                mark = await self.board.begin(key)
            except Exception as exc:  # a board outage must not cost the reply
                log.warning("could not mark the turn of %s in flight for replicas: %s", key, exc)
        self._turns += 1
        token = _in_turn.set(key)
        try:
            yield
        finally:
            _in_turn.reset(token)
            self._turns -= 1
            self._last_turn_end = self.clock()
            await self._notify()
            if mark is not None and self.board is not None:
                try:
                    await self.board.end(mark)
                except Exception as exc:  # its mark runs out by itself
                    log.warning("could not end the turn mark of %s: %s", key, exc)

    @asynccontextmanager
    async def admitted(self, *, gives_way: bool = False) -> AsyncIterator[asyncio.Event | None]:
        """Hold a slot of the server for one call, once the call's turn comes. A background
        call that `gives_way` gets an event, set when a reply waits for its slot: the call
        should end then (None: nothing will ask it to)."""
        limit = self.slots()
        if limit <= 0:
            yield None
            return
        in_turn = _in_turn.get() is not None
        if in_turn:
            await self._admit_reply()
        else:
            # Only work that can be done later waits for a quiet spell: an image's probe
            # for the photo a user just sent is not that.
            await self._admit_background(quiet=gives_way)
        give_way = asyncio.Event() if gives_way and not in_turn else None
        if give_way is not None:
            self._giving_way.add(give_way)
        try:
            yield give_way
        finally:
            if give_way is not None:
                self._giving_way.discard(give_way)
            self._sending -= 1
            await self._notify()

    async def _notify(self) -> None:
        changed = self._condition()
        async with changed:
            changed.notify_all()

    def _free(self) -> bool:
        return self._sending < max(1, self.slots())

    async def _admit_reply(self) -> None:
        changed = self._condition()
        async with changed:
            if not self._free():
                for give_way in self._giving_way:
                    give_way.set()
            self._replies_waiting += 1
            try:
                await changed.wait_for(self._free)
            finally:
                self._replies_waiting -= 1
            self._sending += 1

    def _background_may_go(self) -> bool:
        return self._turns == 0 and self._replies_waiting == 0 and self._free()

    def _quiet_left(self) -> float:
        """Seconds until the server has been free of turns for `quiet_seconds`."""
        if self._last_turn_end is None or self.quiet_seconds <= 0:
            return 0.0
        return self._last_turn_end + self.quiet_seconds - self.clock()

    async def quiet(self) -> None:
        """Return once a background call that can be done later would be sent now (no turn
        in flight here or in another replica, none ended for the quiet spell), without
        taking a slot: such work reads what it sends only then (a compaction's memory
        flush must not send a text forgotten while it waited). At once with no limit."""
        if self.slots() > 0:
            await self._admit_background(quiet=True, take=False)

    async def _admit_background(self, *, quiet: bool, take: bool = True) -> None:
        changed = self._condition()
        self.background_waiting += 1
        try:
            while True:
                async with changed:
                    await changed.wait_for(self._background_may_go)
                    left = self._quiet_left() if quiet else 0.0
                    if left > 0:
                        # Woken sooner by a turn's start or end, which starts the wait anew.
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(changed.wait(), left)
                        continue
                    if self.board is None:
                        self._sending += int(take)
                        return
                if not await self._turns_elsewhere():
                    async with changed:
                        if self._background_may_go() and (not quiet or self._quiet_left() <= 0):
                            self._sending += int(take)
                            return
                    continue
                try:
                    # A turn of another replica: ask again soon, sooner if one of ours ends.
                    async with changed:
                        await asyncio.wait_for(changed.wait(), BOARD_POLL_SECONDS)
                except TimeoutError:
                    pass
        finally:
            self.background_waiting -= 1

    async def _turns_elsewhere(self) -> bool:
        assert self.board is not None
        try:
            return await self.board.any_in_flight()
        except Exception as exc:  # the board is down: background work does not wait on it
            log.warning("could not ask the replicas whether a turn is in flight: %s", exc)
            return False
