"""The Integrations section's doors (``/integrations/``): access keys made and
revoked (a raw key is shown once), the capsule embed, each tool's setup
snippets, and what a gateway would get for a chosen moment and request."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from curfew_core.selectors import web as web_selectors
from curfew_core.selectors.tokens import TokenKind
from curfew_core.services.tokens import token_create, token_revoke
from curfew_core.web.integrations import tool_setups
from curfew_core.web.integrations.decision import decision as decision_for
from curfew_core.web.shell import (
    HTMX_INVALID,
    base_context,
    is_htmx,
    login_required_page,
    rendered,
    user_of,
)

INTEGRATIONS = "curfew/integrations.html"


@login_required_page
@require_GET
def integrations(request: HttpRequest) -> HttpResponse:
    """Access keys, the capsule embed, setup snippets and the decision preview."""
    return _render_integrations(request)


def _render_integrations(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    user = user_of(request)
    now = timezone.now()
    tz_name = web_selectors.saved_schedule(user).config["timezone"]
    result = decision_for(user, request.GET, now=now, tz_name=tz_name)
    base_url = f"{request.scheme}://{request.get_host()}"
    if status == 200 and result.errors:
        status = 400
    context = base_context(
        request,
        "integrations",
        timezone=tz_name,
        decision=result,
        tokens=web_selectors.access_keys(user),
        base_url=base_url,
        tool_setups=tool_setups.rendered(base_url=base_url, token=_setup_token(extra)),
        **extra,
    )
    return rendered(request, INTEGRATIONS, context, status=status)


def _setup_token(extra: dict[str, Any]) -> str:
    """The key the setup snippets show: a gateway key made just now (shown
    once anyway), else a placeholder to replace."""
    new_token = extra.get("new_token")
    if new_token is not None and new_token.get("kind") != "embed":
        return str(new_token["raw"])
    return f"<{_('your gateway key')}>"


def _tokens_response(
    request: HttpRequest, *, new_token: dict[str, str] | None = None, status: int = 200
) -> HttpResponse:
    context = {
        "tokens": web_selectors.access_keys(user_of(request)),
        # "Last used" is read on the user's clock, as on the full page.
        "timezone": web_selectors.saved_schedule(user_of(request)).config["timezone"],
        "new_token": new_token,
        "base_url": f"{request.scheme}://{request.get_host()}",
    }
    return rendered(request, f"{INTEGRATIONS}#tokens", context, status=status)


@login_required_page
@require_POST
def token_new(request: HttpRequest) -> HttpResponse:
    kind = request.POST.get("kind", TokenKind.API)
    # A person makes their own keys here; a team key is made on the team's
    # page, with its team (token_create refuses it: that was a 500).
    if kind not in TokenKind.values or kind == TokenKind.TEAM:
        raise Http404("no such token kind")
    # A label, trimmed and cut to fit; NUL dropped (PostgreSQL text cannot
    # hold it, and a browser never types it).
    name = request.POST.get("name", "").replace("\x00", "").strip()[:100]
    token, raw = token_create(
        user=user_of(request), name=name, kind=kind, actor=user_of(request), channel="page"
    )
    new_token = {"raw": raw, "kind": token.kind, "name": token.name, "prefix": token.prefix}
    if is_htmx(request):
        return _tokens_response(request, new_token=new_token, status=201)
    # Rendered, not redirected: the raw key is shown once and stored nowhere.
    return _render_integrations(request, new_token=new_token, status=201)


@login_required_page
@require_POST
def token_remove(request: HttpRequest, token_id: int) -> HttpResponse:
    """Revoke a key: the first post asks (a page naming the key, for clients
    without script; the page's script asks in a dialog and confirms at once),
    the confirmed one revokes."""
    user = user_of(request)
    token = web_selectors.live_token(user, token_id)
    if token is None:
        raise Http404("no such live key of yours")
    if request.POST.get("confirm") != "1":
        context = base_context(request, "integrations", token=token)
        return rendered(request, "curfew/revoke_confirm.html", context)
    token_revoke(user=user, token_id=token_id, actor=user, channel="page")
    if is_htmx(request):
        return _tokens_response(request)
    messages.success(request, _("Key revoked. Anything using it is refused from now on."))
    return HttpResponseRedirect(reverse("settings-integrations"))


@login_required_page
@require_GET
def decision(request: HttpRequest) -> HttpResponse:
    """What a gateway would get, for a chosen moment and request."""
    if not is_htmx(request):
        return _render_integrations(request)
    user = user_of(request)
    now = timezone.now()
    tz_name = web_selectors.saved_schedule(user).config["timezone"]
    result = decision_for(user, request.GET, now=now, tz_name=tz_name)
    # htmx swaps a 4xx in (see the htmx-config in base.html): the fields are
    # flagged. 422, not 400: see HTMX_INVALID.
    status = HTMX_INVALID if result.errors else 200
    return rendered(request, f"{INTEGRATIONS}#decision-result", {"decision": result}, status=status)
