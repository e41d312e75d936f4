"""`python -m mnemobot` is the `mnemobot` command."""

from mnemobot.bot.cli.main import main

raise SystemExit(main())
