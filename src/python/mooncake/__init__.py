"""mooncake: Python access to a mooncake KV-cache cluster (see mooncake.store)."""
