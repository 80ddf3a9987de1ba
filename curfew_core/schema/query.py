"""The query parameters of the pages, read one way (issue 23, finding 2).

Each page read its own parameters with its own code, and one of them
called ``int()`` on the text: ``?page=<5000 digits>`` was a 500 (Python's
limit on the digits ``int`` converts). Pages now read every parameter
through :class:`QueryReader`: each read is typed and bounded, and a value it
cannot use is a :class:`Problem` naming the parameter (the page answers 400
and shows the default instead), never an exception.

Messages are the caller's, in the reader's language; the parameter's name
is the URL's own, so it is not translated.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

#: More digits than any bound a page uses; longer text is not a number to us
#: (and ``int()`` is never asked to convert it).
_WHOLE = re.compile(r"[+-]?[0-9]{1,18}", re.ASCII)


@dataclass(frozen=True, slots=True)
class Problem:
    """A parameter the page could not use, and what it did instead."""

    name: str
    message: str

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


@dataclass
class QueryReader:
    """Typed reads of one request's query; what was wrong collects in ``problems``."""

    params: Mapping[str, str]
    problems: list[Problem] = field(default_factory=list)

    def raw(self, name: str) -> str:
        """The text as sent, trimmed (a moment or a scope, which their own
        parsers check; every other read here is typed)."""
        return str(self.params.get(name) or "").strip()

    def flag(self, name: str, message: str) -> None:
        self.problems.append(Problem(name, message))

    def text(self, name: str, *, max_length: int, message: str) -> str:
        """Free text up to ``max_length`` characters (NUL dropped); longer: ``""``."""
        value = self.raw(name).replace("\x00", "").strip()
        if len(value) > max_length:
            self.flag(name, message)
            return ""
        return value

    def choice(self, name: str, choices: Collection[str], *, default: str, message: str) -> str:
        """One of ``choices``; absent: ``default``; anything else: a problem."""
        value = self.raw(name)
        if not value:
            return default
        if value in choices:
            return value
        self.flag(name, message)
        return default

    def whole(self, name: str, *, low: int, high: int, default: int, message: str) -> int:
        """A whole number from ``low`` to ``high`` in ASCII digits; absent: ``default``."""
        value = self.raw(name)
        if not value:
            return default
        if _WHOLE.fullmatch(value):
            number = int(value)
            if low <= number <= high:
                return number
        self.flag(name, message)
        return default

    def whole_or_none(self, name: str, *, low: int, high: int, message: str) -> int | None:
        """As :meth:`whole`, with ``None`` for absent or refused."""
        value = self.raw(name)
        if not value:
            return None
        if _WHOLE.fullmatch(value) and low <= int(value) <= high:
            return int(value)
        self.flag(name, message)
        return None

    def date(
        self,
        name: str,
        *,
        first: dt.date,
        last: dt.date,
        default: dt.date,
        bad: str,
        out_of_range: str,
        values: Mapping[str, str],
    ) -> dt.date:
        """An ISO date from ``first`` to ``last``; absent: ``default``. The
        messages are ``%``-formatted with ``values`` and ``text``, the value
        as typed (cut to 40 characters)."""
        value = self.raw(name)
        if not value:
            return default
        try:
            day = dt.date.fromisoformat(value) if len(value) <= 32 else None
        except ValueError:
            day = None
        if day is None:
            self.flag(name, bad % {**values, "text": value[:40]})
        elif not first <= day <= last:
            self.flag(name, out_of_range % {**values, "text": day.isoformat()})
        else:
            return day
        return default
