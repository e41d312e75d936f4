"""`mnemobot config docs`: the runtime config reference, generated from the model."""

from __future__ import annotations

import argparse
import sys

from mnemobot.bot.app import RUNTIME_SECTIONS
from mnemobot.config.runtime import with_sections
from mnemobot.config.runtime_reference import reference_markdown


def _docs(args: argparse.Namespace) -> int:
    sys.stdout.write(reference_markdown(with_sections(RUNTIME_SECTIONS)))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `config` to the `mnemobot` command line."""
    config = sub.add_parser("config", help="the runtime config: `config docs` lists every key")
    actions = config.add_subparsers(dest="config_action", required=True, metavar="ACTION")
    docs = actions.add_parser(
        "docs", help="every runtime-config.json key with its default and meaning (Markdown)"
    )
    docs.set_defaults(handler=_docs)
