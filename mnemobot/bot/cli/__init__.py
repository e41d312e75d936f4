"""The `mnemobot` command line: one module per command, `main` parses and dispatches.

Only `python -m mnemobot` and the `mnemobot` console script import this package; the
running bot never does.
"""
