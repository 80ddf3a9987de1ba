"""Validation messages that a page can say in its own language.

The validation layer (``schema.values``, ``schedule_config``) has no Django
and no active language: it is shared by the API, whose messages are an
English machine contract, and the settings page, which speaks the reader's
language. So a message is built once as a ``Message``: a ``str`` whose text
is the English, which every door that treats it as text (the API's JSON, a
log line, ``"; ".join``) gets unchanged, and which also keeps its template
and parameters, so ``curfew_core.web.words.localized`` can render it again
through gettext in the active language (locale/zh_Hans holds each template).

A template is a gettext msgid with ``%(name)s`` placeholders. A parameter
that is itself a ``Message`` (a row's problem inside "row 3: ...") is
translated too; any other parameter (a quoted bad value) is shown as it is.
"""

from __future__ import annotations

from typing import Any


class Message(str):
    """English text that remembers how it was made (see the module doc)."""

    template: str
    params: dict[str, Any]

    def __new__(cls, template: str, /, **params: Any) -> Message:
        text = template % {key: str(value) for key, value in params.items()} if params else template
        message = super().__new__(cls, text)
        message.template = template
        message.params = params
        return message

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (a cache, a channel layer) as the plain English text.
        return (str, (str(self),))


def message_of(exc: BaseException) -> str:
    """An exception's message, kept a ``Message`` when it was raised with one
    (``str(exc)`` would flatten it to plain English)."""
    first = exc.args[0] if len(exc.args) == 1 else None
    return first if isinstance(first, Message) else str(exc)
