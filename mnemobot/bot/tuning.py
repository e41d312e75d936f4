"""The bot's internal constants, bundled for the one caller that sets others: a test (or a
bench) that needs a shorter pause or a tighter limit than a person would ever want.

Not settings and not a file: nothing here is read from runtime-config.json, and nothing is
a promise kept across versions. Each part lives with its code and says there what chose
its values; `build_app(tuning=...)` hands each to the part that uses it. The Telegram
channel's pacing goes to `serve_telegram(timing=...)` instead, since the channel is built
there.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemobot.bot.llm.model_gate import BACKGROUND_QUIET_SECONDS
from mnemobot.bot.mcp.config import DEFAULT_MCP_TIMING, McpTiming
from mnemobot.bot.media.document_reader import DEFAULT_READER_LIMITS, ReaderLimits
from mnemobot.bot.media.transcription import DEFAULT_SPEECH_BUDGET, SpeechBudget
from mnemobot.bot.schedule.limits import DEFAULT_SCHEDULE_LIMITS, ScheduleLimits
from mnemobot.bot.upkeep.maintenance_timer import INTERVAL_HOURS
from mnemobot.memory.pack.ranking import DEFAULT_RANKING, Ranking
from mnemobot.memory.write.extraction.tuning import DEFAULT_EXTRACTION, ExtractionTuning
from mnemobot.systems.compaction.summary_model import DEFAULT_COMPACTION_CALLS, CompactionCalls
from mnemobot.systems.model_call.tool_limits import DEFAULT_TOOL_LIMITS, ToolLimits


@dataclass(frozen=True, slots=True)
class Tuning:
    ranking: Ranking = DEFAULT_RANKING
    extraction: ExtractionTuning = DEFAULT_EXTRACTION
    tool_limits: ToolLimits = DEFAULT_TOOL_LIMITS
    compaction_calls: CompactionCalls = DEFAULT_COMPACTION_CALLS
    mcp: McpTiming = DEFAULT_MCP_TIMING
    reader: ReaderLimits = DEFAULT_READER_LIMITS
    speech: SpeechBudget = DEFAULT_SPEECH_BUDGET
    schedule: ScheduleLimits = DEFAULT_SCHEDULE_LIMITS
    maintenance_interval_hours: float = INTERVAL_HOURS
    background_quiet_seconds: float = BACKGROUND_QUIET_SECONDS


DEFAULT_TUNING = Tuning()
