"""What a schedule form's post came to, and the page's answer to it: the
settings sections' saves (``section``) and the team's schedule (``web.team``).

A save reads the post as the form, makes its one service call and returns a
``Shown`` (nothing saved: the form again, with why) or a ``Saved``; ``answer``
turns that into the page: the form in place with htmx, else a redirect that
says what happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.translation import gettext as _

from curfew_core.web.schedule.schedule_form import ScheduleForm
from curfew_core.web.shell import is_htmx


@dataclass(frozen=True, slots=True)
class Shown:
    """A post that saved nothing: the form as posted, shown again with what
    to say (``notice``: a preset filled in; ``stale``: saved elsewhere meanwhile)."""

    form: ScheduleForm
    status: int = 200
    words: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Saved:
    """A save that went through; ``changed`` is False when it changed nothing."""

    changed: bool


def answer(
    request: HttpRequest,
    outcome: Shown | Saved,
    *,
    show: Callable[..., HttpResponse],
    saved_form: Callable[[], ScheduleForm],
    said: str,
    back: str,
) -> HttpResponse:
    """The page's answer to a post: ``show(form=..., status=..., **words)``
    renders the form; ``saved_form`` reads it anew after a save, which
    ``said`` announces (unless nothing changed); ``back`` is where a save
    without htmx is sent."""
    if isinstance(outcome, Shown):
        return show(form=outcome.form, status=outcome.status, **outcome.words)
    text = said if outcome.changed else _("Nothing changed, so nothing was saved.")
    if is_htmx(request):
        return show(form=saved_form(), toast=text, saved=outcome.changed)
    if outcome.changed:
        messages.success(request, text)
    else:
        messages.info(request, text)
    return HttpResponseRedirect(back)
