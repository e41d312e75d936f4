"""ContextWindowLimit (order 15): fit the turn's config to the model's real context window.

`llm.maxInputTokens` is what the operator configured; a local model may run with far less
(a llama.cpp server started with 2048 tokens). Once the window is known, the turn's config
is narrowed to it (`RuntimeConfig.for_context_window`) before AutoCompaction (18) and
ContextBuilding (20) read it, so the bot compacts and budgets memory against the real window.
"""

from __future__ import annotations

from typing import Protocol

from mnemobot.model.windows import ModelWindow
from mnemobot.systems.core.context import TurnContext

# ctx.extras key under which the window in use this turn is kept (for diagnostics).
WINDOW_EXTRA = "contextWindow"


class ContextWindows(Protocol):
    async def context_window(self, model: str) -> ModelWindow | None:
        """The model's window if known (asking its server the first time), else None."""
        ...


def narrow_to_window(ctx: TurnContext, window: ModelWindow) -> None:
    ctx.config = ctx.config.for_context_window(window.tokens)
    ctx.extras[WINDOW_EXTRA] = window


class ContextWindowLimit:
    name = "ContextWindowLimit"
    order = 15

    def __init__(self, windows: ContextWindows) -> None:
        self.windows = windows

    def enabled(self, ctx: TurnContext) -> bool:
        return True

    async def process(self, ctx: TurnContext) -> None:
        window = await self.windows.context_window(ctx.model)
        if window is not None:
            narrow_to_window(ctx, window)
