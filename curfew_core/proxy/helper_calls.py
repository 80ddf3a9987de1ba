"""Claude Code's own helper calls, recognised by what they ask.

OpenCode's and aider's helper calls (titles, summaries, commit messages) are
labelled by their snippets: each goes through a provider or model of its own
that adds ``X-Curfew-Purpose`` (``web.integrations.tool_setups``). Claude Code cannot do
that: ``ANTHROPIC_CUSTOM_HEADERS`` goes on every call, its helper calls too.
So the Messages door recognises them (:func:`claude_code_purpose`) and gives
them the purpose they would have been labelled with: ``title`` for the session
title and the new-topic check, ``summary`` for its short recaps and labels,
``compaction`` for shrinking the context. With the default exempt purposes they
then pass in every state, instead of the session being titled with the
curfew's reply.

Recognised only when both hold, so that no one else's call is taken for one:

- the client is Claude Code: its ``User-Agent`` starts with ``claude-cli/``
  (the CLI, and the Agent SDK, which runs it);
- the call carries one of Claude Code's helper instructions (``MARKERS``): in
  a short ``system`` text for titles and summaries, at the start of the last
  user turn for compaction (which is asked after the whole conversation),
  after its "text only" guard or not.

Why not the small, fast model (``ANTHROPIC_DEFAULT_HAIKU_MODEL``) as the
mark: Claude Code runs real work on it too (its Explore subagent, a
``/model haiku`` session), which would then pass at lights-out.

The instructions are Claude Code's own words across its releases (quoted
from its prompts as published; each release may add one: a helper call not
recognised is an ordinary call, held to the schedule, never an error). A
caller's own ``X-Curfew-Purpose`` always wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Claude Code's user agent: ``claude-cli/2.1.0 (external, cli)``.
USER_AGENT_PREFIX = "claude-cli/"

#: The instructions of Claude Code's helper calls, by purpose: in a
#: ``system`` text block (or the ``system`` string).
SYSTEM_MARKERS: tuple[tuple[str, str], ...] = (
    # The new-topic check that titles the terminal (1.x, 2.0).
    ("Analyze if this message indicates a new conversation topic", "title"),
    # Session titles, as the releases worded them.
    ("word title for the following conversation", "title"),
    ("Generate a concise, sentence-case title", "title"),
    ("You are naming a coding session so the user can pick it out", "title"),
    ("You are coming up with a title and a git branch name for a coding session", "title"),
    ("You are coming up with a succinct title for a coding session", "title"),
    # Short recaps and labels.
    ("Summarize this coding conversation in under 50 characters", "summary"),
    ("The user stepped away and is coming back. Recap", "summary"),
    ("Write a short summary label describing what these tool calls accomplished", "summary"),
    ("You summarize what was accomplished by a coding assistant", "summary"),
)
#: Compaction's instructions, at the start of the last user turn (after a
#: "respond with text only" guard in later releases).
COMPACTION_MARKERS: tuple[str, ...] = (
    "Your task is to create a detailed summary of the conversation so far",
    "Your task is to create a detailed summary of the RECENT portion of the conversation",
    "Write a continuation summary that will allow you",
)
#: Every marker, for a caller that only asks "is it one?".
MARKERS = tuple(marker for marker, _ in SYSTEM_MARKERS) + COMPACTION_MARKERS

#: A helper's instructions are short (the longest is a few thousand
#: characters); Claude Code's main system prompt is tens of thousands. Texts
#: longer than this are not searched, so a main call costs a length check.
LONGEST_HELPER_TEXT = 12_000
#: What later releases put before compaction's instructions: "respond with
#: text only". The last user turn's text must start with it or with the
#: instructions themselves (so that no search runs through an ordinary turn).
COMPACTION_GUARD = "CRITICAL: Respond with TEXT ONLY."
#: Where after the guard compaction's instructions start, at most (the guard
#: is a few hundred characters).
COMPACTION_WITHIN = 2_000


def _texts(content: Any) -> list[str]:
    """The text of a ``system`` or message ``content``: a string, or text blocks."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict) and isinstance(block.get("text"), str)
    ]


def _system_purpose(system: Any) -> str | None:
    for text in _texts(system):
        if len(text) > LONGEST_HELPER_TEXT:
            continue
        for marker, purpose in SYSTEM_MARKERS:
            if marker in text:
                return purpose
        # Compaction's instructions have come as a system prompt too (the SDK's).
        if any(marker in text for marker in COMPACTION_MARKERS):
            return "compaction"
    return None


def _compaction(messages: Any) -> bool:
    if not isinstance(messages, list) or not messages:
        return False
    last = messages[-1]
    if not isinstance(last, dict) or last.get("role") != "user":
        return False
    for text in _texts(last.get("content")):
        text = text.lstrip()
        if text.startswith(COMPACTION_MARKERS):
            return True
        if text.startswith(COMPACTION_GUARD):
            head = text[:COMPACTION_WITHIN]
            if any(marker in head for marker in COMPACTION_MARKERS):
                return True
    return False


def is_claude_code(headers: Mapping[str, str]) -> bool:
    """Whether the request comes from Claude Code (its ``User-Agent``)."""
    agent: str = headers.get("User-Agent", "") or ""
    return agent.startswith(USER_AGENT_PREFIX)


def claude_code_purpose(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """The purpose of a Claude Code helper call (``title``, ``summary``,
    ``compaction``), or ``None``: not Claude Code, or not one of its helper
    calls (see the module's docstring)."""
    if not is_claude_code(headers):
        return None
    purpose = _system_purpose(body.get("system"))
    if purpose is not None:
        return purpose
    return "compaction" if _compaction(body.get("messages")) else None
