"""`mnemobot config docs`: the runtime config reference, generated from the model."""

from __future__ import annotations

import argparse
import sys

from mnemobot.bot.runtime_sections import RUNTIME_SECTIONS
from mnemobot.config.runtime import with_sections
from mnemobot.config.runtime_reference import reference_markdown


def docs_command(args: argparse.Namespace) -> int:
    sys.stdout.write(reference_markdown(with_sections(RUNTIME_SECTIONS)))
    return 0
