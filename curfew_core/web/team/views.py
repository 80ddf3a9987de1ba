"""The Team page (``/team/``): the team's members now, its schedule, invites and
roles, what the curfew saved, and the audit; for a member, what the team sets.

Only members of a team see it: anyone else gets a 404, the same as for a
team that does not exist, so the page tells a stranger nothing. Admins change
things; a member's post to an admin's door is a 403 and changes nothing.
Every form is a plain POST that redirects back with a message; with htmx the
members card swaps in place (paging, role changes, removals). The team's
schedule is edited with the Schedule page's own form and template
(``schedule_form``, ``curfew/schedule.html``), on ``/team/schedule/``.

Reads go through ``selectors.teams``, writes through ``services.teams``: the
page holds no rule of its own (who may do what is checked again there).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from curfew_core.schedules import config as schedule_config
from curfew_core.schedules import values as schedule_values
from curfew_core.schema.query import QueryReader
from curfew_core.selectors import ledger_page
from curfew_core.selectors import web as web_selectors
from curfew_core.selectors.users import user_by_name
from curfew_core.services import teams as team_services
from curfew_core.web import words
from curfew_core.web.schedule import contexts, saving, schedule_form, team_line
from curfew_core.web.schedule.keys import SCHEDULE_KEYS
from curfew_core.web.schedule.saving import Saved, Shown
from curfew_core.web.schedule.schedule_form import ScheduleForm
from curfew_core.web.schedule.section import FIELD_LABELS, for_team, labelled, with_choices
from curfew_core.web.shell import (
    HTMX_INVALID,
    access_of,
    base_context,
    invalid_status,
    is_htmx,
    login_required_page,
    rendered,
)
from curfew_core.web.team import reads as team_reads
from curfew_core.web.team import words as team_words

TEMPLATE = "curfew/team.html"
SCHEDULE_TEMPLATE = "curfew/team_schedule.html"
#: Members shown per page: a team of thousands is read a page at a time.
PER_PAGE = 50
#: The most pages a query may ask for (beyond the last, the last is shown).
MAX_PAGE = 10_000

TeamView = Callable[..., HttpResponseBase]


def _you(request: HttpRequest) -> Any:
    """The signed-in person (the decorators saw to it)."""
    return request.user


def member_only(view: TeamView) -> TeamView:
    """Signed in and in a team, or a 404 (a stranger learns nothing, not even
    that the page exists for others). The membership goes to the view."""

    @login_required_page
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        membership = access_of(request.user)
        if membership is None:
            raise Http404("not in a team")
        return view(request, membership, *args, **kwargs)

    return wrapper


def admin_only(view: TeamView) -> TeamView:
    """A member who is not an admin is refused (403) before anything is read
    from the post: the service checks again, this only answers sooner."""

    @member_only
    @functools.wraps(view)
    def wrapper(request: HttpRequest, membership: Any, *args: Any, **kwargs: Any) -> Any:
        if not membership.is_admin:
            raise PermissionDenied("team admins only")
        return view(request, membership, *args, **kwargs)

    return wrapper


def _page_number(request: HttpRequest) -> tuple[int, str]:
    query = QueryReader(request.GET)
    number = query.whole_or_none(
        "page", low=1, high=MAX_PAGE, message=_("The page must be a whole number from 1.")
    )
    problem = " ".join(str(problem) for problem in query.problems)
    return (number or 1), problem


def _members(membership: Any, number: int) -> Any:
    return team_reads.members(membership.team, now=timezone.now(), page=number, per_page=PER_PAGE)


def _context(request: HttpRequest, membership: Any, **extra: Any) -> dict[str, Any]:
    user: Any = request.user
    tz_name = web_selectors.saved_schedule(user).config["timezone"]
    number, page_problem = _page_number(request)
    members = _members(membership, number)
    is_admin = membership.is_admin
    # The members card is the admins': its next changes are shown to them only.
    changes = {row.user_id: row.next for row in members.rows} if is_admin else {}
    context = base_context(
        request,
        "team",
        membership=membership,
        is_admin=is_admin,
        timezone=tz_name,
        members=team_words.member_rows(members, changes, tz_name=tz_name, me=user.pk),
        next_ms=team_words.next_ms(changes),
        pager=team_words.pager(members.total, number, PER_PAGE),
        page_problem=page_problem,
        policy=team_line.policy_of(membership, user),
        roles=words.ROLE_NAMES,
        overtime_hours=OVERTIME_HOURS,
        team_overtime=team_words.overtime_until(membership.team, tz_name=tz_name),
        signup_on=bool(settings.CURFEW_SIGNUP),
        **extra,
    )
    if is_admin:
        period = ledger_page.period_of(7, now=timezone.now(), tz_name=tz_name)
        total, each = team_reads.savings(membership.team, since=period.since, until=period.until)
        context.update(
            invites=team_reads.invites(membership.team, now=timezone.now()),
            savings_total=total,
            savings_each=each,
            savings_money=team_words.money(total),
            audit=team_reads.audit(membership.team, limit=50, tz=tz_name),
        )
    return context


def _render(
    request: HttpRequest, membership: Any, *, status: int = 200, **extra: Any
) -> HttpResponse:
    context = _context(request, membership, **extra)
    template = TEMPLATE
    if is_htmx(request) and (request.method == "POST" or "page" in request.GET):
        # Paging, a role change or a removal: the members card alone.
        template = f"{TEMPLATE}#members"
        status = HTMX_INVALID if status == 400 else status
    return rendered(request, template, context, status=status)


@member_only
@require_GET
def team_page(request: HttpRequest, membership: Any) -> HttpResponse:
    """The team now: members and their states (admins), what the team sets (everyone)."""
    _number, problem = _page_number(request)
    status = invalid_status(request) if problem else 200
    # The members card's own re-read and its pager (htmx, ?page=): the card alone,
    # not a whole page inside it.
    return _render(request, membership, status=status)


def _back(request: HttpRequest, text: str, *, anchor: str = "") -> HttpResponse:
    if is_htmx(request):
        return _render(request, membership_of(request), toast=text)
    messages.success(request, text)
    number, _problem = _page_number(request)
    back = reverse("team") + (f"?page={number}" if number > 1 else "")
    return HttpResponseRedirect(back + anchor)


def _member(membership: Any, user_id: int) -> Any:
    """A member of the admin's own team by id, or a 404 (never another team's)."""
    found = team_reads.member(membership.team, user_id)
    if found is None:
        raise Http404("no such member of your team")
    return found


def membership_of(request: HttpRequest) -> Any:
    return access_of(request.user)


def _refused(request: HttpRequest, membership: Any, text: str) -> HttpResponse:
    """A refused change: named, nothing changed (400; 422 to htmx)."""
    return _render(request, membership, status=400, team_error=text)


@admin_only
@require_POST
def invite(request: HttpRequest, membership: Any) -> HttpResponse:
    """Invite someone by username (they join at once, as the role chosen)."""
    username = request.POST.get("username", "").replace("\x00", "").strip()[:150]
    role = request.POST.get("role", "member")
    if role not in words.ROLE_NAMES:
        return _refused(request, membership, _("Choose a role: admin or member."))
    if not username:
        return _refused(request, membership, _("Type the username of the person to invite."))
    person = user_by_name(username)
    if person is None:
        return _refused(
            request, membership, _("There is no user named %(name)s.") % {"name": username}
        )
    try:
        team_services.member_add(
            team=membership.team, user=person, role=role, actor=_you(request), channel="page"
        )
    except team_services.TeamError as exc:
        theirs = access_of(person)
        return _refused(
            request,
            membership,
            team_words.team_error(
                exc, name=username, team=theirs.team.name if theirs is not None else ""
            ),
        )
    return _back(request, _("%(name)s joined the team.") % {"name": username}, anchor="#members")


@admin_only
@require_POST
def invite_link(request: HttpRequest, membership: Any) -> HttpResponse:
    """A one-time invite link (sign-up must be on: the link signs someone up)."""
    if not settings.CURFEW_SIGNUP:
        raise Http404("sign-up is off")
    role = request.POST.get("role", "member")
    if role not in words.ROLE_NAMES:
        return _refused(request, membership, _("Choose a role: admin or member."))
    _invite, raw = team_services.invite_create(
        team=membership.team, now=timezone.now(), role=role, actor=_you(request), channel="page"
    )
    link = request.build_absolute_uri(reverse("team-join", args=[raw]))
    # Rendered, not redirected: the link is shown once and stored only hashed.
    return rendered(request, TEMPLATE, _context(request, membership, new_link=link), status=201)


@admin_only
@require_POST
def invite_revoke(request: HttpRequest, membership: Any, invite_id: int) -> HttpResponse:
    try:
        team_services.invite_revoke(
            team=membership.team,
            invite_id=invite_id,
            now=timezone.now(),
            actor=_you(request),
            channel="page",
        )
    except team_services.TeamError as exc:
        return _refused(request, membership, team_words.team_error(exc))
    return _back(request, _("Invite link revoked."), anchor="#invites")


@admin_only
@require_POST
def role_set(request: HttpRequest, membership: Any, user_id: int) -> HttpResponse:
    role = request.POST.get("role", "")
    if role not in words.ROLE_NAMES:
        return _refused(request, membership, _("Choose a role: admin or member."))
    change = functools.partial(team_services.member_role_change, role=role)
    return _change_member(request, membership, user_id, change, _("Role changed."))


@admin_only
@require_POST
def member_remove(request: HttpRequest, membership: Any, user_id: int) -> HttpResponse:
    change = team_services.member_remove
    return _change_member(request, membership, user_id, change, _("Removed from the team."))


def _change_member(
    request: HttpRequest,
    membership: Any,
    user_id: int,
    change: Callable[..., Any],
    done: str,
) -> HttpResponse:
    """One member of the admin's own team changed by the service (which
    checks again); a refusal names the member."""
    person = _member(membership, user_id)
    try:
        change(team=membership.team, user=person, actor=_you(request), channel="page")
    except team_services.TeamError as exc:
        return _refused(request, membership, team_words.team_error(exc, name=person.username))
    return _back(request, done, anchor="#members")


@member_only
@require_POST
def leave(request: HttpRequest, membership: Any) -> HttpResponse:
    """Leave the team (the last admin cannot: the service refuses, named)."""
    try:
        team_services.member_remove(
            team=membership.team, user=_you(request), actor=_you(request), channel="page"
        )
    except team_services.TeamError as exc:
        return _refused(
            request, membership, team_words.team_error(exc, name=request.user.get_username())
        )
    messages.success(request, _("You left the team."))
    return HttpResponseRedirect(reverse("settings-page"))


@login_required_page
@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, raw: str) -> HttpResponse:
    """An invite link: GET asks, POST joins (a link opened is not a join)."""
    if not settings.CURFEW_SIGNUP:
        raise Http404("sign-up is off")
    found = team_reads.invite_team(raw, now=timezone.now())
    if found is None:
        raise Http404("no such invite")
    if request.method == "POST":
        try:
            team_services.invite_accept(
                raw=raw, user=_you(request), now=timezone.now(), channel="page"
            )
        except team_services.TeamError as exc:
            theirs = access_of(_you(request))
            words = team_words.team_error(
                exc,
                name=_you(request).get_username(),
                team=theirs.team.name if theirs is not None else "",
            )
            context = base_context(request, "team", invite_team=found, team_error=words)
            return rendered(request, "curfew/team_join.html", context, status=400)
        messages.success(request, _("You joined %(team)s.") % {"team": found.name})
        return HttpResponseRedirect(reverse("team"))
    context = base_context(request, "team", invite_team=found)
    return rendered(request, "curfew/team_join.html", context)


#: "Release night" lengths offered (the service takes up to 24 h).
OVERTIME_HOURS = (1, 2, 4, 8)


@admin_only
@require_POST
def policy_save(request: HttpRequest, membership: Any) -> HttpResponse:
    """The team's own rules beside its schedule: whether members' exemptions
    count, and how long a member's overtime may lift the team's night."""
    minutes = schedule_values.int_from_text(request.POST.get("member_overtime_minutes", "").strip())
    if minutes is None:
        return _refused(
            request, membership, _("Type the minutes a member's overtime may last, 0 for none.")
        )
    changes = {
        # An unchecked box is not in the post: this form always shows the box.
        "members_may_exempt": request.POST.get("members_may_exempt") == "on",
        "member_overtime_minutes": minutes,
    }
    try:
        team_services.team_schedule_update(
            team=membership.team, changes=changes, actor=_you(request), channel="page"
        )
    except team_services.TeamError as exc:
        return _refused(request, membership, team_words.team_error(exc))
    return _back(request, _("Team rules saved."), anchor="#policy")


@admin_only
@require_POST
def overtime(request: HttpRequest, membership: Any) -> HttpResponse:
    """Release night: the whole team's overtime, or its end."""
    choice = request.POST.get("hours", "")
    duration: dt.timedelta | None
    if choice == "end":
        duration = None
    elif choice in {str(hours) for hours in OVERTIME_HOURS}:
        duration = dt.timedelta(hours=int(choice))
    else:
        return _refused(request, membership, _("Choose how long the team's overtime lasts."))
    try:
        team_services.team_overtime_set(
            team=membership.team,
            now=timezone.now(),
            duration=duration,
            actor=_you(request),
            channel="page",
        )
    except team_services.TeamError as exc:
        return _refused(request, membership, team_words.team_error(exc))
    if duration is None:
        return _back(request, _("The team's overtime ended."), anchor="#policy")
    return _back(
        request,
        _("Release night: the team's schedule is lifted for %(hours)s h.") % {"hours": choice},
        anchor="#policy",
    )


# -- the team's schedule: the Schedule page's form, saved to the team ---------


def _team_form(membership: Any) -> ScheduleForm:
    config, version = team_line.schedule_of(membership.team)
    form = schedule_form.form_from_config(config, version)
    form.keys = SCHEDULE_KEYS
    return form


def _schedule_context(
    request: HttpRequest, membership: Any, form: ScheduleForm, **extra: Any
) -> dict[str, Any]:
    """What ``curfew/schedule.html`` needs, read from the team's schedule."""
    config, _version = team_line.schedule_of(membership.team)
    for_team(form)
    now = timezone.now()
    preview = contexts.preview(config, form, at=now, params=request.GET)
    form.with_spare_rows()
    if form.errors:
        form.flag_rows(preview.candidate.row_problems)
    with_choices(form)
    return base_context(
        request,
        "team",
        membership=membership,
        form=form,
        errors=form.errors,
        error_list=labelled(form.errors, team=True),
        preview=preview,
        live_errors=form.errors,
        # The team's words where a person's speak of their own AI.
        **words.band_words(team=True),
        hours=range(25),
        form_action=reverse("team-schedule"),
        preview_action=reverse("team-schedule-preview"),
        **extra,
    )


def _render_schedule(
    request: HttpRequest, membership: Any, form: ScheduleForm, *, status: int = 200, **extra: Any
) -> HttpResponse:
    context = _schedule_context(request, membership, form, **extra)
    template = SCHEDULE_TEMPLATE
    if is_htmx(request) and request.method == "POST":
        # The Schedule page's own partial (team_schedule.html only renames the page).
        template = "curfew/schedule.html#section-form"
        status = HTMX_INVALID if status == 400 else status
    return rendered(request, template, context, status=status)


@admin_only
@require_http_methods(["GET", "POST"])
def team_schedule(request: HttpRequest, membership: Any) -> HttpResponse:
    """The team's schedule with the Schedule page's form; admins only."""
    if request.method == "GET":
        return _render_schedule(request, membership, _team_form(membership))
    return saving.answer(
        request,
        _save_schedule(request, membership),
        show=functools.partial(_render_schedule, request, membership),
        saved_form=functools.partial(_team_form, membership),
        said=_("Saved. Every member's AI follows it now."),
        back=reverse("team-schedule"),
    )


def _save_schedule(request: HttpRequest, membership: Any) -> Shown | Saved:
    """The team form read, the one service call, what came of it."""
    form = schedule_form.form_from_post(request.POST, SCHEDULE_KEYS)
    try:
        row = team_services.team_schedule_update(
            team=membership.team,
            changes=schedule_form.changes_from_form(form),
            expected_version=form.version,
            actor=_you(request),
            channel="page",
        )
    except schedule_config.ConfigError as exc:
        form.flag(words.localized_errors(exc.errors))
        return Shown(form, status=400)
    except team_services.StaleTeamVersion as exc:
        form.version = exc.current
        return Shown(form, status=409, words={"stale": {"changed": []}})
    except team_services.TeamError as exc:
        raise PermissionDenied(str(exc)) from exc
    return Saved(changed=row.version != form.version)


@admin_only
@require_POST
def team_schedule_preview(request: HttpRequest, membership: Any) -> HttpResponse:
    """The chart and band for the team form as typed (unsaved)."""
    form = schedule_form.form_from_post(request.POST, SCHEDULE_KEYS)
    config, _version = team_line.schedule_of(membership.team)
    preview = contexts.preview(config, form, at=timezone.now(), params=request.POST)
    context = contexts.preview_context(preview, form, SCHEDULE_KEYS, team=True)
    return rendered(request, "curfew/schedule.html#preview-response", context)


__all__ = [
    "FIELD_LABELS",
    "invite",
    "invite_link",
    "invite_revoke",
    "join",
    "leave",
    "member_remove",
    "role_set",
    "team_page",
    "team_schedule",
    "team_schedule_preview",
]
