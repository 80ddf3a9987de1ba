"""How a protocol's upstream is handed the operator's key: one request header.

Every protocol's ``WireProtocol.auth`` is one of these (``x-api-key: <key>``
for Anthropic, ``x-goog-api-key: <key>`` for Gemini, ``Authorization: Bearer
<key>`` for OpenAI), so the rule is written once and each protocol declares
only its header's name. Standard library only, like ``base``.
"""

from __future__ import annotations

from collections.abc import Callable


def key_header(name: str, scheme: str = "") -> Callable[[str], dict[str, str]]:
    """``auth`` for a :class:`~curfew_core.protocols.base.WireProtocol`: the
    operator's key in header ``name``, after ``scheme`` (``"Bearer "``) if any."""

    def auth(key: str) -> dict[str, str]:
        return {name: f"{scheme}{key}"}

    return auth
