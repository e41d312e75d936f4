"""mnemobot: a Telegram AI assistant that remembers.

Four layers, imports pointing left only: `mnemobot.config` <- `mnemobot.memory` <-
`mnemobot.systems` <- `mnemobot.bot`. Everything lives under the one name `mnemobot`, so
nothing collides with another distribution's `bot` or `config`, or with a `config.py` in
the folder the bot is started from.
"""
