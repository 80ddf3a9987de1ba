"""What each section of the settings form saves, and nothing else: saving one
section never touches another's (a checkbox missing from a post would
otherwise read as "off"). The keys are derived from the page's field runs
(``forms.FIELDSETS``): a new setting lands in the "scope" run and so in
Replies & voice, with no edit here."""

from __future__ import annotations

from curfew_core.schedules.declaration import settings_of
from curfew_core.web.schedule.forms import FIELDSETS

#: What the Account section edits of the schedule: the clock it is read on
#: (one page only: it is the person's clock, for every page).
ACCOUNT_KEYS = frozenset({"timezone"})


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
