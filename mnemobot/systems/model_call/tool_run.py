"""One tool call run for the model: its result, or the one error line the model reads."""

from __future__ import annotations

import asyncio
import logging

from mnemobot.conversation.session import valid_unicode
from mnemobot.systems.core.context import TurnContext
from mnemobot.systems.core.tool_runner import ToolError, ToolRunner, is_error_result

log = logging.getLogger(__name__)


async def run_tool(
    tools: ToolRunner,
    ctx: TurnContext,
    name: str,
    arguments: str,
    timeout_seconds: float,
    *,
    turn_limited: bool = False,
) -> str:
    """The tool's result, or the error the model reads; stopped after `timeout_seconds`
    (`turn_limited`: what the turn had left of `ToolLimits.max_tool_seconds`).
    Never raises: a broken tool must not end the turn."""
    deadline = asyncio.timeout(timeout_seconds)
    try:
        async with deadline:
            result = await tools.run(name, arguments, ctx)
    except ToolError as error:
        return f"error: {error}"
    except TimeoutError as error:
        if not deadline.expired():
            log.warning("tool %s failed in %s: %s", name, ctx.chat.key, error)
            return f"error: the tool {name} failed (TimeoutError: {error})"
        log.warning("tool %s in %s was stopped after %.1f s", name, ctx.chat.key, timeout_seconds)
        if turn_limited:
            return (
                f"error: the tool {name} was stopped: the tools of this turn used up their "
                "time; it may have done part of its work"
            )
        return (
            f"error: the tool {name} did not finish within {timeout_seconds:g} seconds "
            "and was stopped; it may have done part of its work"
        )
    except Exception as error:  # a broken tool must not end the turn
        log.exception("tool %s failed in %s", name, ctx.chat.key)
        return f"error: the tool {name} failed ({type(error).__name__}: {error})"
    result = valid_unicode(result)
    if not is_error_result(result):
        # A tool's refusal of the call ("error: give text: ...") is between the tool and
        # the model, as a ToolError is: nothing memory should learn of the user's world.
        ctx.tool_outputs.append(result)
    return result
