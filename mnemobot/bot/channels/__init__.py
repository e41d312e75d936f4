"""What every channel shares: the `Channel` protocol, per-chat lanes, message dispatch."""
