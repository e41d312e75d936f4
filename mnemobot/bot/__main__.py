from mnemobot.bot.cli import main

raise SystemExit(main())
