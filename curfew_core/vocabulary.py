"""The four states for people: one name per language and one progress number.

Declared once here and used by every display: the settings page (the Now card,
the band legend, the chart's labels) and the capsule, which receives the name
and the percent in the payload it is pushed (``selectors.verdicts.capsule_payload``)
instead of keeping a table of its own. Names are translated through the catalog
(``locale/zh_Hans``); the colours are declared once too, in
``static/curfew/states.css``, which the page's and the capsule's stylesheets import.
"""

from __future__ import annotations

import math

from django.conf import settings
from django.utils.translation import gettext_lazy, override

from curfew_core.engine import State

STATE_NAMES = {
    State.ON_DUTY.value: gettext_lazy("On duty"),
    State.WINDING.value: gettext_lazy("Winding down"),
    State.OFF_DUTY.value: gettext_lazy("Off duty"),
    State.LIGHTS_OUT.value: gettext_lazy("Lights out"),
}
#: The order of the legend: least to most severe.
STATE_ORDER = [state.value for state in State]


def progress_percent(progress: float | None) -> int | None:
    """How far through the winding-down the night is, in whole percent, rounded DOWN.

    Floor, not round: 12.5 % of the night is not yet 13 %, and the number never
    reaches 100 while winding still goes on. Rounding to six places first drops
    float noise (``0.29 * 100 == 28.999999999999996``), so floor never takes a
    point off a percent that is whole. The page and the capsule both show this
    number, computed here from the engine's unrounded progress.
    """
    if progress is None:
        return None
    return max(0, min(100, math.floor(round(progress * 100, 6))))


def state_names(state: str) -> dict[str, str]:
    """``state``'s name in every language the site speaks, by primary subtag
    (``{"en": "On duty", "zh": "上班中"}``): what a capsule on any page shows."""
    names = {}
    for code, _label in settings.LANGUAGES:
        with override(code):
            names[code.split("-")[0]] = str(STATE_NAMES[state])
    return names
