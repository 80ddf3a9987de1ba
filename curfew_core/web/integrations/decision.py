"""What a gateway would get for a chosen moment and request: the
Integrations page's decision preview, read through the verdict API's own
request parser and answer."""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.http import QueryDict

from curfew_core.schedules import values as schedule_values
from curfew_core.schema.verdict_request import RequestError, verdict_request
from curfew_core.selectors.verdicts import verdict_for, verdict_payload
from curfew_core.web import words


@dataclass(frozen=True, slots=True)
class Decision:
    values: dict[str, str]
    payload: str
    errors: dict[str, str]


def decision(user: User, params: QueryDict, *, now: dt.datetime, tz_name: str) -> Decision:
    """What a gateway would get for the chosen moment and request, as JSON."""
    values = {
        key: params.get(key, "").strip()
        for key in ("at", "session_id", "purpose", "max_tokens", "subagent")
    }
    at: str | None = None
    if values["at"]:
        at = values["at"]
        try:
            local = dt.datetime.fromisoformat(at)
        except ValueError:
            pass  # left for the parser to name as wrong
        else:
            if local.tzinfo is None:
                local = local.replace(tzinfo=zoneinfo.ZoneInfo(tz_name))
            offset = local.utcoffset()
            if offset is not None and offset % dt.timedelta(minutes=1) and local.year > 1:
                # Local mean time (+08:05:43 before 1901) has no RFC 3339
                # spelling; the same instant in UTC has (year 1 would underflow:
                # it stays as it is, and is refused as out of range).
                local = local.astimezone(dt.UTC)
            at = local.isoformat()
    # Strict ASCII digits: "²".isdigit() is true and int("²") raises; text
    # that is no number goes to the parser as it is, to be named as wrong.
    tokens = values["max_tokens"] or None
    number = None if tokens is None else schedule_values.int_from_text(tokens)
    try:
        asked = verdict_request(
            session_id=values["session_id"] or None,
            purpose=values["purpose"] or None,
            subagent=bool(values["subagent"]),
            max_tokens=tokens if number is None else number,
            at=at,
        )
    except RequestError as exc:
        return Decision(values, "", words.localized_errors(exc.fields))
    request, at_instant = asked.context, asked.at
    verdict, bundle = verdict_for(user_id=user.pk, now=now, request=request, at=at_instant)
    # The user's zone (a team member's own), as POST /api/v1/verdict names it.
    payload = verdict_payload(verdict, now=at_instant or now, timezone=bundle.config["timezone"])
    return Decision(values, json.dumps(payload, ensure_ascii=False, indent=2), {})
