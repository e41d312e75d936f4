"""The chat model: `OpenAIChatModel` on the openai SDK, and what servers say about windows."""
