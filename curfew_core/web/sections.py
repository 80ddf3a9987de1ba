"""The settings site's sections: their names, addresses and the settings each saves.

One declaration for the navigation, the views and the forms. A section that
edits settings saves only its own keys, so saving one section never touches
another's (a checkbox missing from a post would otherwise read as "off").
The keys are derived from the page's field runs (``forms.FIELDSETS``): a new
setting lands in the "scope" run and so in Replies & persona, with no edit here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from curfew_core.schedules.declaration import settings_of
from curfew_core.web.forms import FIELDSETS


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

#: What the Account section edits of the schedule: the clock it is read on
#: (one page only: it is the person's clock, for every page).
ACCOUNT_KEYS = frozenset({"timezone"})


def sections_for(membership: Any) -> tuple[Section, ...]:
    """The navigation a person sees: the Team page only for a team's members
    (``membership``: theirs, from ``selectors.teams.membership_of``, or ``None``)."""
    if membership is not None:
        return SECTIONS
    return tuple(section for section in SECTIONS if not section.members_only)


#: What the Schedule section edits: when, and how the night winds down.
SCHEDULE_KEYS = frozenset(
    {
        "enabled",
        "weekdays",
        "peak_shift",
        "peak_windows",
        "curve",
        "anchors",
        *FIELDSETS["times"],
        *FIELDSETS["calendar"],
    }
)
#: Everything else: what is said, and to whom the curfew applies.
REPLIES_KEYS = frozenset(settings_of()) - SCHEDULE_KEYS - ACCOUNT_KEYS

FORM_KEYS = {"schedule": SCHEDULE_KEYS, "replies": REPLIES_KEYS}
