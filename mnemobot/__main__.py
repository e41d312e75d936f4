"""`python -m mnemobot` is the `mnemobot` command."""

from mnemobot.bot.cli import main

raise SystemExit(main())
