"""Telegram channel: rendering and delivery of replies."""
