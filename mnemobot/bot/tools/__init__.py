"""Tools the model can call: the registry and the built-in tools."""
