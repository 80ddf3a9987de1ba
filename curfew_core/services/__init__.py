"""Writes. Keyword-only, typed, atomic; events and cache drops after commit."""
