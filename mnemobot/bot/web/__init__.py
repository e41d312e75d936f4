"""The local web page over a workspace's memory (`mnemobot web`, `mnemobot run --web`).

A person reads what the bot knows of a chat, asks why a message would bring something
up, and corrects it: forgets an item or a fact (the memory tool's complete erasure) or
puts an earlier MEMORY.md back. Every read and write goes through the services the bot
uses (`host.WebHost`: the running bot's own, or a standalone set on the same files);
nothing here is imported by anything but the CLI. Server-rendered (aiohttp and Jinja2
templates), no JavaScript; user-facing details in docs/web.md.
"""
