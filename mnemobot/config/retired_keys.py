"""Keys of runtime-config.json that earlier versions read and this one does not.

Each maps to the value it had by default; the value the code uses now is that same one,
built in beside the code that uses it. A file written by an earlier version (which wrote
every key) still loads: `runtime_store` leaves these keys out and names them once in the
log, and a value that differs from the one built in is named with it, so whoever tuned
it learns that the tuning no longer applies. A key in none of these maps stays an
unknown key (a typo). A section's model points to its map (`ConfigSection.retired`).
"""

from __future__ import annotations

from collections.abc import Mapping

ASSISTANT: Mapping[str, object] = {"instructionsBudgetTokens": 2000}

LLM: Mapping[str, object] = {"maxReplyChars": 100000}

EMBEDDINGS: Mapping[str, object] = {
    "dimensions": None,
    "queryPrefix": "query: ",
    "passagePrefix": "passage: ",
    "requestTimeoutSeconds": 60.0,
    "batchSize": 32,
    "maxInputChars": 1000,
    "fillMaxItemsPerRun": 20000,
}

CONSOLIDATION: Mapping[str, object] = {
    "maxTokens": 4000,
    "maxDropShare": 0.25,
    "maxInputTokens": 12000,
    "timeoutSeconds": 120.0,
    "temperature": 0.2,
    "keepVersions": 50,
}

MEMORY: Mapping[str, object] = {
    "recentDays": 7,
    "workingTopK": 6,
    "episodicTopK": 8,
    "semanticTopK": 6,
    "proceduralTopK": 4,
    "promotionEnabled": True,
    "promotionMinConfidence": 0.75,
    "decayEnabled": True,
    "decayDays": 30.0,
    "codeAwareExtractionEnabled": True,
    "legacyDailyNotesEnabled": True,
    "maxContextShare": 0.2,
    "flushConfidence": 0.8,
    "flushSalience": 0.6,
    "toolConfidence": 0.9,
    "toolSalience": 0.7,
    "documentChunkChars": 1200,
    "maxItemChars": 4000,
    "maxCachedScopes": 256,
    "dailyRetentionDays": 90,
    "ranking": {
        "relevanceWeight": 0.75,
        "recencyWeight": 0.1,
        "salienceWeight": 0.075,
        "confidenceWeight": 0.075,
        "recencyHalfLifeDays": 14.0,
        "decayFloor": 0.5,
        "typeBoost": {
            "constraint": 0.05,
            "preference": 0.04,
            "decision": 0.03,
            "fix": 0.03,
            "failure": 0.02,
            "projectFact": 0.02,
            "taskState": 0.01,
            "commandResult": 0.0,
            "turn": 0.01,
        },
        "tagMatchBoost": 0.05,
        "overflowMinScore": 0.6,
        "candidatePool": 256,
        "episodeWindowGapMinutes": 0.0,
        "episodeWindowMaxTurns": 8,
        "neighbourRelevanceShare": 0.5,
        "neighbourGapSeconds": 1800.0,
        "answerRelevanceShare": 0.8,
        "turnsAroundHits": 2,
        "turnsAroundMaxHits": 32,
        "turnsAroundMaxGapMinutes": 30.0,
        "fillBudgetPastTopK": True,
        "fillMinRelevance": 0.1,
        "dateMatchBoost": 0.5,
        "dateCandidates": 200,
        "supersededWeight": 0.5,
        "denseWeight": 0.5,
        "denseCandidates": 8,
        "denseRescore": 2048,
        "fusion": "weighted",
        "rrfK": 60.0,
        "duplicateTermOverlap": 0.8,
    },
    "extraction": {
        "turnConfidence": 0.65,
        "turnSalience": 0.5,
        "turnWithFindingsSalience": 0.6,
        "hedgedConfidenceCap": 0.6,
        "constraintConfidence": 0.85,
        "weakConstraintConfidence": 0.7,
        "confirmedFixConfidence": 0.85,
        "suggestedFixConfidence": 0.65,
        "suggestedFixCommandConfidence": 0.7,
        "confirmedFixMinConfidence": 0.8,
        "concreteFailureConfidence": 0.8,
        "vagueFailureConfidence": 0.7,
        "errorLineConfidence": 0.85,
        "assistantErrorLineConfidence": 0.7,
        "commandConfidence": 0.8,
        "suggestedCommandConfidence": 0.7,
        "slotFactConfidence": 0.85,
        "slotFactSalience": 0.7,
        "maxDerivedItems": 12,
        "maxCommands": 6,
        "maxErrors": 3,
        "turnUserChars": 1200,
        "turnAssistantChars": 800,
    },
    "maintenance": {"enabled": True, "intervalHours": 6.0, "afterCompactionMinMinutes": 30.0},
}

COMPACTION: Mapping[str, object] = {
    "summaryMaxOutputTokens": 500,
    "summaryTimeoutSeconds": 15.0,
    "summaryTemperature": 0.3,
    "pruneToolResultsAfterTurns": 3,
    "toolResultEvictionChars": 80000,
    "summaryMessageChars": 300,
    "flushMessageChars": 1200,
    "flushInputChars": 24000,
    "flushKnownFactsBudgetTokens": 1200,
    "flushTemperature": 0.2,
}

TOOL_LOOP: Mapping[str, object] = {
    "maxToolExecutions": 80,
    "maxStoredArgumentChars": 20000,
    "maxToolSeconds": 600.0,
}

PERMISSIONS: Mapping[str, object] = {"adminCacheSeconds": 600.0}

TRANSCRIPTION: Mapping[str, object] = {
    "localComputeType": "int8",
    "localThreads": 0,
    "timeoutSeconds": 120.0,
    "localMemoryMb": 6000,
    "doubtfulWordsPerMinute": 20.0,
}

MEDIA: Mapping[str, object] = {
    "imageDescriptionMaxTokens": 120,
    "photoMaxSide": 1280,
    "maxImageBytes": 10000000,
    "readerSeconds": 60.0,
    "readerMemoryMb": 1024,
    "readerProcesses": 2,
    "documentHeadChars": 4000,
    "documentMaxPages": 300,
    "documentMaxChars": 1000000,
}

SCHEDULE: Mapping[str, object] = {
    "maxTasksPerChat": 25,
    "minIntervalMinutes": 5.0,
    "lateAfterSeconds": 60.0,
    "lateGraceMinutes": 360.0,
    "pauseAfterFailures": 3,
    "heartbeatCron": "0 9 * * *",
    "pollSeconds": 5.0,
}

# Whole top-level sections: the console's lane settings (it queues as Telegram's default).
TOP_LEVEL: Mapping[str, object] = {
    "console": {"queueMode": "queue", "queueCap": 20, "burstSeconds": 1.5},
}
