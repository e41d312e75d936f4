"""Evaluations of memory: `mnemobot eval locomo` (evidence recall on LoCoMo-format files)
and `mnemobot eval updates` (does the pack hold a fact's new value, never the old)."""
