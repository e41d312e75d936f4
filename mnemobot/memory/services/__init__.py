"""The memory services: the scope runtime (`scopes`) and the roles callers hold
(`recall`, `record`, `forget`, `vectors`), opened together as a `WorkspaceMemory`."""
