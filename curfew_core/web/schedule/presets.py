"""The preset buttons (the tired persona, the reply pairs): a click fills
texts into the form, and nothing is saved until Save.

With script the page fills them in place; without, the button posts the
form, and ``filled`` is that post with the preset's texts in, shown again.
"""

from __future__ import annotations

from django.http import Http404, QueryDict
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy

from curfew_core.schedules import config as schedule_config
from curfew_core.services.schedules import informative_replies

NOTICE: Promise = gettext_lazy("Preset filled in. Nothing is saved until you press Save.")


def reply_presets() -> dict[str, dict[str, str]]:
    """The reply pairs one click away: informative ones in the page's language,
    and the seed's terse pair for those who liked it."""
    return {"informative": informative_replies(), "terse": dict(schedule_config.TERSE_REPLIES)}


def persona_presets() -> dict[str, dict[str, str]]:
    """The tired persona and its tier texts (one a line), by language."""
    return {
        code: {"tired_persona": persona, "tier_texts": "\n".join(tiers)}
        for code, (persona, tiers) in schedule_config.PERSONA_PRESETS.items()
    }


#: The buttons a post may come from, in the order they are asked: the
#: button's name and the presets it offers.
BUTTONS = (("reply_preset", reply_presets), ("persona_preset", persona_presets))


def filled(post: QueryDict) -> QueryDict | None:
    """The post with the pressed preset's texts in it; None when no preset
    button was pressed (the post is a save). An unknown preset is a 404."""
    for button, presets in BUTTONS:
        code = post.get(button)
        if code is None:
            continue
        texts = presets().get(code)
        if texts is None:
            raise Http404("no such preset")
        data = post.copy()
        for key, text in texts.items():
            data[key] = text
        return data
    return None
