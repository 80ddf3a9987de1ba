"""The Replies & voice section's door: the settings form's other section
(what is said, and to whom the curfew applies), with its exemption pickers."""

from __future__ import annotations

import zoneinfo
from typing import Any

from django.utils import timezone

from curfew_core.selectors.bundles import bundle_for
from curfew_core.web.replies import exempt_picker
from curfew_core.web.schedule.schedule_form import ScheduleForm
from curfew_core.web.schedule.section import FormSection, section_page


def _exempt_picks(user: Any, form: ScheduleForm, tz_name: str) -> dict[str, Any]:
    """The exemption pickers for the config the form shows; an unbound
    form's typing boxes then hold only what no box offers. Inside a team,
    what the team voids is marked so (issue 39)."""
    settings_form = form.settings
    source = settings_form.data if settings_form.is_bound else settings_form.initial
    current = {
        setting: settings_form.typed(setting, source.get(setting))
        for setting, _pick, _seen in exempt_picker.PICKERS.values()
    }
    team = bundle_for(user.pk).team
    offered = exempt_picker.picks(
        user_id=user.pk,
        now=timezone.now(),
        current=current,
        tz=zoneinfo.ZoneInfo(tz_name),
        team=team,
    )
    spared = not settings_form.typed("apply_to_subagents", source.get("apply_to_subagents"))
    if not settings_form.is_bound:
        for setting, shown in exempt_picker.typed_only(current, offered).items():
            settings_form.initial[setting] = shown
            # A bound field read before (the preview reads every value)
            # keeps the initial it saw: let it be made again.
            settings_form._bound_fields_cache.pop(setting, None)  # type: ignore[attr-defined]
    watching = bool(settings_form.typed("dry_run", source.get("dry_run")))
    help_text = exempt_picker.dry_run_help(team)
    if help_text is not None and "dry_run" in settings_form.fields:
        # "Holds nothing back" is untrue where the team acts: the engine says so.
        settings_form.fields["dry_run"].help_text = help_text
        settings_form._bound_fields_cache.pop("dry_run", None)  # type: ignore[attr-defined]
    return {
        **offered,
        "subagents_void": exempt_picker.subagents_void(team, spared),
        "dry_run_void": exempt_picker.dry_run_void(team, watching),
    }


def _beside(user: Any, form: ScheduleForm, tz_name: str) -> dict[str, Any]:
    return {"exempt_picks": _exempt_picks(user, form, tz_name)}


replies_section = section_page(
    # The exemption pickers' ticks become their settings' lines first.
    FormSection("replies", read_post=exempt_picker.merged, beside=_beside)
)
