"""The turn core: the Assistant (one chat's turn through the pipeline), the slash commands
(the memory lines of `/status` among them), who may run them, and erasing a chat's memory."""
