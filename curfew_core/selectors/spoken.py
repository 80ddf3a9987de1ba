"""A team's words in each member's language (issue 39).

A team has one schedule and members who read different languages. Its
replies and sleepy voice are stored once; what a member's gateway says is
chosen when that member's team side is built (``selectors.bundles``), never
inside the engine:

- a reply that is the template that says why ("Curfew: lights out until
  {until}.") in any language the site speaks is that template in the
  member's language;
- a sleepy voice (or its stage lines) that is a ready-made one
  (``schedule_config.PERSONA_PRESETS``) in any language is the ready-made one
  in the member's language;
- anything else (the terse seed replies ``。`` / ``明天再说。``, a team's own
  words) is said as written, to everyone.

The member's language is their account's preference; without one, the
language their own sleepy voice speaks (a new account's is its language);
else the site's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from curfew_core.models import UNSAVED_VERSION
from curfew_core.schedules import config as schedule_config

#: The replies that say why, as written in the source (the .po translates them).
WHY_REPLIES: dict[str, str] = {
    "off_duty_reply": gettext_noop("Curfew: peak hours until {until}."),
    "lights_out_reply": gettext_noop("Curfew: lights out until {until}."),
}
PERSONA_FIELDS = ("tired_persona", "tier_texts")


def preset_key(language: str) -> str:
    """A ``PERSONA_PRESETS`` key for a Django language code: ``zh`` for ``zh*``, else ``en``."""
    return "zh" if language.lower().startswith("zh") else "en"


def _django_code(key: str) -> str:
    for code, _name in settings.LANGUAGES:
        if preset_key(code) == key:
            return code
    return key


@functools.cache
def why_replies(key: str) -> dict[str, str]:
    """The replies that say why in the language of preset key ``key``."""
    with translation.override(_django_code(key)):
        return {field: gettext(text) for field, text in WHY_REPLIES.items()}


@functools.cache
def _why_any() -> dict[str, frozenset[str]]:
    """Each reply field's why-template in every language the site speaks."""
    keys = {preset_key(code) for code, _name in settings.LANGUAGES}
    return {
        field: frozenset({text, *(why_replies(key)[field] for key in keys)})
        for field, text in WHY_REPLIES.items()
    }


def _persona_of(key: str) -> dict[str, Any]:
    persona, tiers = schedule_config.PERSONA_PRESETS[key]
    return {"tired_persona": persona, "tier_texts": list(tiers)}


def spoken_language(language: str, version: int, config: Mapping[str, Any]) -> str:
    """A member's language as a preset key: ``language`` (their account's
    preference, a code of ``settings.LANGUAGES`` or ``""``); else the one
    their own saved sleepy voice is ready-made in; else the site's."""
    if language in dict(settings.LANGUAGES):
        return preset_key(language)
    if version != UNSAVED_VERSION:
        for key in schedule_config.PERSONA_PRESETS:
            if config.get("tired_persona") == _persona_of(key)["tired_persona"]:
                return key
    return preset_key(settings.LANGUAGE_CODE)


def is_why_reply(field: str, text: str) -> bool:
    """Whether ``text`` is the ``field`` reply that says why, in any language."""
    return text in _why_any().get(field, frozenset())


def spoken_config(config: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``config`` (a team's, filled in) as said to a member whose language is
    ``key``: why-replies and ready-made voices in that language, the rest as written."""
    out = dict(config)
    why = why_replies(key)
    for field in WHY_REPLIES:
        if is_why_reply(field, str(config.get(field, ""))):
            out[field] = why[field]
    mine = _persona_of(key)
    for field in PERSONA_FIELDS:
        value = config.get(field)
        if field == "tier_texts":
            value = list(value or [])
        if any(value == _persona_of(other)[field] for other in schedule_config.PERSONA_PRESETS):
            out[field] = mine[field]
    return out
