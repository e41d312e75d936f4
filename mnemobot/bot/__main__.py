from mnemobot.bot.cli.main import main

raise SystemExit(main())
