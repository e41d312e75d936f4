"""Static settings (environment, `.env`) and the hot-reloaded runtime config."""
