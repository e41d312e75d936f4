"""Reminders and scheduled tasks that fire once, on time, across restarts and replicas.

- `tasks`: a task, its schedule, one firing of it;
- `timing` and `parsing`: pure functions (when next, what is due, reading "tomorrow at 9");
- `store` (files, the default) and `redis_store` (replicas): where tasks are kept;
- `scheduler`: the loop that hands due firings to their chats' channels;
- `firing`: what a firing does in its chat's lane (a reminder's text, or a turn);
- `tool` and `reminders`: the model's `schedule` tool and the `/reminders` command;
- `service`: all of it put together for the composition root.
"""
