"""The bot: `app` (the composition root) and its rooms: `channels` (Telegram, console),
`turn` (assistant and commands), `upkeep`, `tools`, `llm`, `delivery`, and the `cli`."""
