"""mnemobot's channels, commands, tools, LLM client wiring and CLI."""
