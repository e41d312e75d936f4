"""Channels: what every channel shares (the `Channel` protocol, per-chat lanes, message
dispatch) and one folder per channel (`telegram/`, `console/`)."""
