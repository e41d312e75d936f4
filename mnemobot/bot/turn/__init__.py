"""The turn core: the Assistant (one chat's turn through the pipeline), the slash commands,
who may run them, and erasing a chat's memory."""
