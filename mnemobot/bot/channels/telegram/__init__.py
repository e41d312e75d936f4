"""The Telegram channel: updates in (polling or webhook), kept, answered in per-chat lanes,
replies rendered to Telegram's HTML and sent through the outbox."""
