"""Benchmarks: what the bot costs, measured end to end (`mnemobot bench BENCH`).

`telegram_throughput` and `replica_throughput` drive the real bot with `load_servers`, a
small asyncio Bot API + model server in a child process that also generates the load and
timestamps every message (the thorough fakes of `mnemobot_tooling.fakes` run a thread per
request, which would be measured too); `memory_speed`, `cold_scope`, `crash`,
`consolidation_cost` and `chat_tokens` measure memory and recovery.
"""
