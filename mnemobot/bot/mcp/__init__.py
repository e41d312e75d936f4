"""MCP servers as tools: the `mcp` runtime-config section (`config`), secrets filled in from
the environment (`secrets`), one connection per server through the official SDK
(`connection`), kept up by a supervisor with growing restart pauses (`supervisor`), all of
them in step with the config file (`servers`), their tools adapted for the registry
(`tool_adapter`), who may use them where (`access`) and what `doctor` checks (`probe`)."""
