"""The shape of the door table (``edge.doors``): a door, its routes, and how a
path finds them. Data only: handlers are named by dotted path, imported once
when the edge is built (``edge.app``), so the table imports no door and any
module may read it (the outage net, the body guard, the tests).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from curfew_core.edge.dialects import Dialect

#: A path parameter: ``{name}`` is one segment, ``{name:any}`` anything (a
#: handler that must refuse a ``/`` or ``..`` itself, in its own shape).
_PARAM = re.compile(r"\{(\w+)(:any)?\}")

#: How a route takes a team key (issue 26), the one token that speaks for a
#: whole team: ``member``, as the member the request names (a 400 saying how
#: when it names none); ``member_or_team``, the same, or the team as a whole
#: when it names none (the change stream); ``itself``, as the key (the
#: handler reads what it names: the team API, the decisions); ``refused``,
#: not at all (a team key is no token there: a 401, as an unknown token's).
TeamKey = Literal["member", "member_or_team", "itself", "refused"]


@dataclass(frozen=True, slots=True)
class Route:
    """One route of a door the edge serves."""

    path: str
    #: The methods it serves (others: a 405 naming them); empty: any.
    methods: tuple[str, ...]
    #: ``module.function``: ``async (EdgeRequest) -> HttpResponseBase``.
    handler: str
    #: A live token is checked before the body is read, and a personal
    #: token's rate counted; a team key's rate is counted once the request
    #: names its member, which may be in the body (``edge.team_caller``).
    token: bool = True
    #: The answer may take long (an upstream call, a stream): a client that
    #: goes away cancels it.
    long: bool = False
    #: How it takes a team key (see ``TeamKey``).
    team_key: TeamKey = "member"
    #: The handler is sync (``(EdgeRequest) -> HttpResponseBase``: a save, a
    #: page of rows, the database's work): run on the edge's pool of threads
    #: (``edge.threads``), the event loop never waits on it.
    thread: bool = False

    #: The kind of token it takes (``selectors.tokens``): ``api``, a personal
    #: API token; ``gateway``, that or a team key. Follows from ``team_key``.
    token_kind: str = field(init=False, default="gateway")

    def __post_init__(self) -> None:
        object.__setattr__(self, "token_kind", "api" if self.team_key == "refused" else "gateway")

    @property
    def pattern(self) -> re.Pattern[str] | None:
        """The route's path as a pattern, when it has parameters."""
        if "{" not in self.path:
            return None
        parts = []
        last = 0
        for match in _PARAM.finditer(self.path):
            parts.append(re.escape(self.path[last : match.start()]))
            body = r"[\s\S]+" if match.group(2) else r"[^/]+"
            parts.append(f"(?P<{match.group(1)}>{body})")
            last = match.end()
        parts.append(re.escape(self.path[last:]))
        return re.compile("".join(parts) + r"\Z")


@dataclass(frozen=True)
class Door:
    """A prefix of the site and everything about answering under it."""

    #: Its name in logs and tests (not the ledger's or the audit's word).
    name: str
    prefix: str
    dialect: Dialect
    #: The largest body it takes (``None``: no limit), read per request (a
    #: setting a test may override).
    max_body: Callable[[], int | None]
    #: Where its clients put the token (``None``: it takes none, e.g. pages).
    credential: Callable[[Mapping[str, str]], str | None] | None = None
    #: Where its clients may put the token in the query (an ASGI
    #: ``query_string``: Gemini's ``?key=``), read only when ``credential``
    #: finds none in the headers (``None``: never).
    query_credential: Callable[[bytes], str | None] | None = None
    #: The routes the edge answers; any other path under ``prefix`` is
    #: ``fallback``'s (a public route, e.g. a 404 in the door's shape), or
    #: Django's when there is none. A door that takes a token has one: every
    #: path under it is the edge's, none is answered a second way.
    routes: tuple[Route, ...] = ()
    fallback: Route | None = None

    @cached_property
    def _exact(self) -> dict[str, Route]:
        return {route.path: route for route in self.routes if route.pattern is None}

    @cached_property
    def _patterns(self) -> tuple[tuple[re.Pattern[str], Route], ...]:
        return tuple(
            (pattern, route) for route in self.routes if (pattern := route.pattern) is not None
        )

    def match(self, path: str) -> tuple[Route, dict[str, str]] | None:
        """The edge's route for ``path`` (under this door) and its parameters,
        or ``None``: Django answers it."""
        route = self._exact.get(path)
        if route is not None:
            return route, {}
        for pattern, candidate in self._patterns:
            found = pattern.match(path)
            if found is not None:
                return candidate, found.groupdict()
        return None if self.fallback is None else (self.fallback, {})


class Table:
    """The doors, each path to the door with the longest matching prefix (so
    the order they are written in does not matter)."""

    def __init__(self, doors: tuple[Door, ...]) -> None:
        prefixes = [door.prefix for door in doors]
        duplicated = {prefix for prefix in prefixes if prefixes.count(prefix) > 1}
        if duplicated:
            raise ValueError(f"two doors share a prefix: {sorted(duplicated)}")
        if "/" not in prefixes:
            raise ValueError("a door must take every path: one with the prefix '/'")
        halves = [door.name for door in doors if door.credential and door.fallback is None]
        if halves:
            # Else some of its paths would be Django's: two credential
            # readers, two throttles, two ways to answer (issue 43).
            raise ValueError(f"a door that takes a token needs a fallback route: {halves}")
        self.doors = tuple(sorted(doors, key=lambda door: len(door.prefix), reverse=True))

    def door_for(self, path: str) -> Door:
        for door in self.doors:
            if path.startswith(door.prefix):
                return door
        raise AssertionError("the '/' door takes every path")  # pragma: no cover

    def routes(self) -> tuple[Route, ...]:
        """Every route the edge answers, fallbacks included."""
        found: list[Route] = []
        for door in self.doors:
            found.extend(door.routes)
            if door.fallback is not None:
                found.append(door.fallback)
        return tuple(found)
