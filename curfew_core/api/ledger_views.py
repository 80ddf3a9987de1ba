"""The decision ledger's API doors (issue 14): read the decisions, read what
was saved, and take a gateway's report of the decisions it made from its
cached verdict. Routes of the API door (``edge.doors``), so the same token
check, throttles and error shape as the rest; sync handlers, run on the
edge's threads."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import get_args

from curfew_client.wire import ActionName
from django.http import HttpResponse, QueryDict
from django.utils import timezone

from curfew_core.api.errors import ApiError, invalid, json_object, unprocessable_error
from curfew_core.api.views import query_of, whole_param
from curfew_core.edge.request import EdgeRequest
from curfew_core.schedules.override_commands import Unprocessable
from curfew_core.schedules.values import text_problem
from curfew_core.schema.decisions import (
    DecisionPageAnswer,
    DecisionRow,
    ReportAnswer,
    SavingsAnswer,
    TypicalCall,
    parse_report,
)
from curfew_core.schema.errors import not_a_member, not_a_username
from curfew_core.schema.verdict_request import MAX_SCOPE_TEXT, RequestError, parse_instant
from curfew_core.selectors import teams as team_reads
from curfew_core.selectors.ledger import (
    DEFAULT_PER_PAGE,
    MAX_PAGE,
    MAX_PER_PAGE,
    decisions_page,
    savings_between,
)
from curfew_core.selectors.tokens import TokenIdentity, TokenKind
from curfew_core.selectors.users import is_username
from curfew_core.services.ledger import decisions_write

#: The savings range when none is given.
DEFAULT_RANGE = timedelta(days=30)


def _json(body: str) -> HttpResponse:
    return HttpResponse(body, content_type="application/json")


def _instant(
    query: QueryDict, name: str, errors: dict[str, str], late: dict[str, str]
) -> datetime | None:
    raw = query.get(name)
    if raw is None:
        return None
    try:
        return parse_instant(raw)
    except Unprocessable as exc:
        late[name] = str(exc)
    except ValueError as exc:
        errors[name] = str(exc)
    return None


def _known(query: QueryDict, names: tuple[str, ...], errors: dict[str, str]) -> None:
    """Unknown query parameters are refused, each named (a mistyped filter
    must not silently widen the answer)."""
    for key in query:
        if key not in names:
            errors[key[:64] or "query"] = f"is not a query parameter here; use {', '.join(names)}"


def _range(query: QueryDict, errors: dict[str, str]) -> tuple[datetime | None, datetime | None]:
    late: dict[str, str] = {}
    since = _instant(query, "from", errors, late)
    until = _instant(query, "to", errors, late)
    if errors:
        raise invalid(errors)
    if not late and since is not None and until is not None and since >= until:
        late["from"] = "must be before to"
    if late:
        raise unprocessable_error(late)
    return since, until


def decisions(request: EdgeRequest) -> HttpResponse:
    """A person's token reads and reports its own decisions; a team key (issue
    26, taken as itself) reports for its members (each decision names one)
    and reads one member's (``?user=``), never anyone outside its team."""
    return _decisions(request, request.the_caller().identity)


def _decisions(request: EdgeRequest, identity: TokenIdentity) -> HttpResponse:
    if request.method == "POST":
        return _report(request, identity)
    query = query_of(request)
    errors: dict[str, str] = {}
    user_id = identity.user_id
    if identity.kind == TokenKind.TEAM:
        user_id = _member_asked(query, identity)
    elif "user" in query:
        errors["user"] = "only a team key names a user; a personal token reads its own"
    _known(query, ("from", "to", "session_id", "action", "page", "per_page", "user"), errors)
    session = query.get("session_id")
    if session is not None and (len(session) > MAX_SCOPE_TEXT or text_problem(session)):
        errors["session_id"] = f"must be text of at most {MAX_SCOPE_TEXT} characters, no NUL"
    action = query.get("action")
    actions = get_args(ActionName)
    if action is not None and action not in actions:
        errors["action"] = f"must be one of {', '.join(actions)}"
    page = whole_param(query, "page", 1, MAX_PAGE, errors)
    per_page = whole_param(query, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE, errors)
    since, until = _range(query, errors)
    found = decisions_page(
        user_id=user_id,
        since=since,
        until=until,
        session=session,
        action=action,
        page=page,
        per_page=per_page,
    )
    answer = DecisionPageAnswer(
        decisions=[DecisionRow(**row) for row in found.rows],
        page=found.page,
        per_page=found.per_page,
        next_page=found.next_page,
    )
    return _json(answer.model_dump_json())


def _member_asked(query: QueryDict, identity: TokenIdentity) -> int:
    """The member a team key reads the decisions of (``?user=``)."""
    name = query.get("user", "")
    if not name:
        raise invalid({"user": "a team key reads one member's decisions: name them with ?user="})
    if not is_username(name):
        # The member-name rule of every door, before any lookup (issue 41).
        raise invalid({"user": not_a_username(name)})
    found = team_reads.members_named(team_id=identity.team_id or 0, usernames={name[:150]})
    if name not in found:
        raise ApiError(404, "not_found", not_a_member(name))
    return found[name]


def _report(request: EdgeRequest, identity: TokenIdentity) -> HttpResponse:
    body = json_object(request)
    team_id = identity.team_id if identity.kind == TokenKind.TEAM else None
    try:
        entries = parse_report(
            body,
            user_id=None if team_id is not None else identity.user_id,
            now=timezone.now(),
            members=(
                None
                if team_id is None
                else lambda names: team_reads.members_named(team_id=team_id, usernames=names)
            ),
        )
    except RequestError as exc:
        raise (invalid(exc.fields) if exc.errors else unprocessable_error(exc.fields)) from None
    # Written now, not buffered: a report is not the hot path, and a 200 means stored.
    stored = decisions_write(entries=entries)
    return _json(ReportAnswer(received=len(entries), stored=stored).model_dump_json())


def savings(request: EdgeRequest) -> HttpResponse:
    """``GET /api/v1/savings``: what the curfew saved a person (their own token)."""
    identity = request.the_caller().identity
    query = query_of(request)
    errors: dict[str, str] = {}
    _known(query, ("from", "to"), errors)
    since, until = _range(query, errors)
    until = until or timezone.now()
    since = since or until - DEFAULT_RANGE
    if since >= until:
        raise unprocessable_error({"from": "must be before to"})
    result = savings_between(user_id=identity.user_id, since=since, until=until)
    typical = (
        TypicalCall(
            input_tokens=float(result.typical_input_tokens),
            output_tokens=float(result.typical_output_tokens or 0),
        )
        if result.typical_input_tokens is not None
        else None
    )
    answer = SavingsAnswer.model_validate(
        {
            "from": since.isoformat(),
            "to": until.isoformat(),
            "decisions": result.decisions,
            "requests_not_sent": result.requests_not_sent,
            "input_tokens_not_sent": result.input_tokens_not_sent,
            "output_tokens_not_generated": result.output_tokens_not_generated,
            "tokens_not_asked_for": result.tokens_not_asked_for,
            "money": float(result.money),
            "currency": result.currency,
            "typical_call": typical,
        }
    )
    return _json(answer.model_dump_json(by_alias=True))
