"""A personal token's request that names a member: only its own person.

``X-Curfew-User`` names the member a *team key* asks for (``edge.team_caller``).
Sent with a personal token it was silently ignored, while the verdict API's
``user`` field was a 422 (issue 41, finding 7): a tool set up with someone
else's name believed it asked for them, and was answered for the token's own
person. Now, at every token door (each one the edge's, ``edge.doors``), the
header with a personal token must be that token's own username (a set-up that
names its own person keeps working); any other name is a 422 in the door's
shape, and a name no account could have is a 400, by the same rule as a team
key's (``selectors.users.is_username``).
"""

from __future__ import annotations

from typing import NamedTuple

from django.http.response import HttpResponseBase

from curfew_core.edge.request import EdgeRequest
from curfew_core.edge.threads import run_sync
from curfew_core.schema.errors import not_a_username
from curfew_core.selectors.users import is_username, username_of

#: Why a personal token may not name another member.
NAMES_ANOTHER = (
    "X-Curfew-User names a member only with a team key; a personal token always asks "
    "for its own person (leave the header out, or send a team key)"
)


class Refusal(NamedTuple):
    status: int
    code: str
    message: str


def check(header: str | None, user_id: int) -> Refusal | None:
    """Why the personal token of ``user_id`` may not send ``header`` as
    ``X-Curfew-User``, or ``None`` (no header, or its own username)."""
    name = (header or "").strip()
    if not name:
        return None
    if not is_username(name):
        return Refusal(400, "invalid_request", not_a_username(name))
    if name == username_of(user_id):
        return None
    return Refusal(422, "unprocessable", NAMES_ANOTHER)


async def refusal(request: EdgeRequest, raw: bytes) -> HttpResponseBase | None:
    """The door's refusal of a personal token's ``X-Curfew-User`` (``raw``, as
    sent: the edge asks only when the header is there), or ``None``."""
    header = raw.decode("utf-8", "replace")
    if not header.strip():
        return None
    found = await run_sync(check, header, request.the_caller().user_id)
    if found is None:
        return None
    return request.door.dialect.refusal(found.status, found.message, code=found.code)
