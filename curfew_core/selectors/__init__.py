"""Reads. Doors call these; nothing here writes (but the throttled token
``last_used_at`` stamp, which is bookkeeping, not user data)."""
