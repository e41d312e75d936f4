"""The test kit: a fake Telegram Bot API and a fake OpenAI-compatible server, real HTTP on
127.0.0.1, and a small MCP server written with the `mcp` SDK (`mcp_server.py`, run as a
subprocess), driven through the real python-telegram-bot and openai clients by the tests and
by the benches that need a thorough fake (`bench crash`, `cold-scope`, `chat-tokens`)."""
