"""The settings site's sections: their names and addresses, one declaration
for the navigation (what each section of the settings form saves is
``schedule.keys``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True, slots=True)
class Section:
    code: str
    title: str | Promise
    url_name: str
    #: Shown only to members of a team (the Team page is a 404 to anyone else).
    members_only: bool = False


SECTIONS = (
    Section("overview", _("Overview"), "settings-page"),
    Section("schedule", _("Schedule"), "settings-schedule"),
    Section("replies", _("Replies & voice"), "settings-replies"),
    Section("integrations", _("Integrations"), "settings-integrations"),
    Section("activity", _("Activity"), "settings-activity"),
    Section("team", _("Team"), "team", members_only=True),
    Section("account", _("Account"), "account"),
)


def sections_for(membership: Any) -> tuple[Section, ...]:
    """The navigation a person sees: the Team page only for a team's members
    (``membership``: theirs, from ``selectors.teams.membership_of``, or ``None``)."""
    if membership is not None:
        return SECTIONS
    return tuple(section for section in SECTIONS if not section.members_only)
