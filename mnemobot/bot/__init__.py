"""The bot: `app` (the composition root) and its rooms: `channels` (Telegram, console),
`mcp` (outside servers' tools), `schedule` (reminders and scheduled tasks), `turn`
(assistant and commands), `upkeep` (memory maintenance), and the ground floor: `tools`,
`llm`, `delivery`, `media` (speech and documents to text); and the `cli`."""
