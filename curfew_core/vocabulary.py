"""The four states for people: one name per language and one progress number.

Declared once here and used by every display: the settings page (the Now card,
the band legend, the chart's labels) and the capsule, which receives the name
and the percent in the payload it is pushed (``selectors.verdicts.capsule_payload``)
instead of keeping a table of its own. Names are translated through the catalog
(``locale/zh_Hans``); the colours are declared once too, in
``static/curfew/states.css``, which the page's and the capsule's stylesheets import.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext_lazy, override

# The one rounding of progress lives in the pure engine (its reasons use it too);
# re-exported here beside the names, as the displays' vocabulary.
from curfew_core.engine import State, progress_percent

__all__ = ["PRETEND", "STATE_NAMES", "STATE_ORDER", "progress_percent", "state_names"]

#: Plain words, the same everywhere a person reads a state (the page, the
#: legend, the capsule, the chart, the command line, the audit). The wire
#: values (``on-duty``, ``winding``...) stay what the API says.
STATE_NAMES = {
    State.ON_DUTY.value: gettext_lazy("Working"),
    State.WINDING.value: gettext_lazy("Getting sleepy"),
    State.OFF_DUTY.value: gettext_lazy("Off for peak hours"),
    State.LIGHTS_OUT.value: gettext_lazy("Asleep"),
}
#: The one name of the override that makes gateways believe it is another
#: moment (``debug`` on the wire, ``debug_at`` in a verdict): "Pretend".
PRETEND = gettext_lazy("Pretend")
#: The order of the legend: least to most severe.
STATE_ORDER = [state.value for state in State]


def state_names(state: str) -> dict[str, str]:
    """``state``'s name in every language the site speaks, by primary subtag
    (``{"en": "On duty", "zh": "值班"}``): what a capsule on any page shows."""
    names = {}
    for code, _label in settings.LANGUAGES:
        with override(code):
            names[code.split("-")[0]] = str(STATE_NAMES[state])
    return names
