"""Memory: sessions, daily notes, MEMORY.md, structured items, retrieval and the MemoryPack."""
