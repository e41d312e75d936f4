"""The console channel: `mnemobot chat` in a terminal, or lines piped in."""
