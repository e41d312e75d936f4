"""Durable delivery: accepted updates and undelivered replies kept on disk until done."""
