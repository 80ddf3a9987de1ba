"""What every fake upstream answers: one reply, word by word when streamed."""

from __future__ import annotations

REPLY_WORDS = ["Hello", " from", " the", " fake", " upstream."]
REPLY_TEXT = "".join(REPLY_WORDS)
