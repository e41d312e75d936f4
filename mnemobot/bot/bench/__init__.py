"""Benchmarks and evaluations: tooling that measures the bot, never part of it.

Only the `mnemobot bench` and `mnemobot eval` commands import this package, and only
when one of them runs (see bot/tooling_cli.py), so the running bot never loads it.
"""
