"""What every page of the settings site shares: sign-in required (an htmx
request is sent to the sign-in page whole), htmx partials told apart, no page
kept in a cache, and the navigation every section shows (with the signed-in
person's team, if any: the Team page is offered to its members only)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import render, resolve_url
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseClientRedirect

from curfew_core.selectors import teams as team_selectors
from curfew_core.web.sections import sections_for

View = Callable[..., HttpResponseBase]


#: The status of a partial that flags bad input to htmx. Not 400: with DEBUG on,
#: django-htmx's debug script (django_htmx/static/django_htmx/django-htmx.js)
#: catches every htmx answer of 400/403/404/500 and replaces the whole document
#: with it (meant for Django's technical error pages), so a refused overtime
#: turned the page into a bare, unstyled fragment under ``make run``. 422 says the
#: same thing (the request was understood, its content is invalid), the debug
#: script leaves it alone, and the htmx-config in base.html swaps every 4xx into
#: its target. Clients without htmx still get the full page with a 400.
HTMX_INVALID = 422


def login_required_page(view: View) -> View:
    """Sign-in required; an htmx request is sent to the sign-in page whole
    instead of having the form swapped into a corner of the page."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            if getattr(request, "htmx", False):
                login = resolve_url(settings.LOGIN_URL)
                return HttpResponseClientRedirect(f"{login}?next={reverse('settings-page')}")
            return redirect_to_login(request.get_full_path())
        return view(request, *args, **kwargs)

    return wrapper


def user_of(request: HttpRequest) -> Any:
    return request.user


def is_htmx(request: HttpRequest) -> bool:
    return bool(getattr(request, "htmx", False))


def no_store(response: HttpResponse) -> HttpResponse:
    # A page holds schedule details and, once, a raw token or invite link;
    # the Team page also members' names and states.
    response["Cache-Control"] = "no-store"
    return response


def rendered(
    request: HttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """A page, or the part of one that htmx swaps in, never kept in a cache."""
    return no_store(render(request, template, context, status=status))


def invalid_status(request: HttpRequest) -> int:
    """The status of an answer to bad input: 400, ``HTMX_INVALID`` to htmx."""
    return HTMX_INVALID if is_htmx(request) else 400


@dataclass(frozen=True, slots=True)
class Access(team_selectors.Membership):
    """The signed-in person's membership (its role, and whether that is an
    admin's, as the selector says) with their team, the object the team
    services take."""

    team: Any


def access_of(user: Any) -> Access | None:
    """``user``'s team and role, or ``None`` (in no team; signed out)."""
    if not user.is_authenticated:
        return None
    membership = team_selectors.membership_of(user_id=user.pk)
    if membership is None:
        return None
    team = team_selectors.team_by_id(membership.team_id)
    return None if team is None else Access(membership.team_id, membership.role, team)


def base_context(
    request: HttpRequest,
    section: str,
    *,
    line: Callable[[Access, Any], Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """What every section shows: the navigation and, where ``line`` is given
    (the Overview and Schedule pages), a line saying a team policy applies
    (``team_line.html``)."""
    user = user_of(request)
    membership = access_of(user)
    shared: dict[str, Any] = {"section": section, "sections": sections_for(membership)}
    if membership is not None and line is not None:
        shared["team_line"] = line(membership, user)
    return {**shared, **extra}


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever the page's <link rel=icon> says
    (and for non-HTML answers such as the JSON of the API): send them to the
    SVG icon whitenoise serves, resolved per request so the hashed name of
    the manifest storage is the one current now. Temporary: that name changes
    with each deploy of a new icon."""
    response = HttpResponseRedirect(static("curfew/favicon.svg"))
    response["Cache-Control"] = "public, max-age=86400"
    return response
