"""The ledger's codes in words: what the curfew did (action, kind, origin),
each state short for the chart's legend, and a stored reason line undated.
The stored codes stay English: the API, the export and the admin read them."""

from __future__ import annotations

import re

from django.utils.functional import Promise
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from curfew_core import protocols, vocabulary
from curfew_core.ledger.savings import REFUSED
from curfew_core.vocabulary import STATE_NAMES

#: What the curfew did, in words (the stored codes stay English).
ACTION_WORDS: dict[str, str | Promise] = {
    "pass": gettext_lazy("passed"),
    "clamp": gettext_lazy("shortened"),
    "short-circuit": gettext_lazy("answered without a request"),
}
#: The chart's own kind for decisions made in a dry run: decided, never acted on.
DRY_RUN = "dry-run"
KIND_WORDS: dict[str, str | Promise] = {
    **ACTION_WORDS,
    REFUSED: gettext_lazy("embedding refused"),
    DRY_RUN: gettext_lazy("dry run, nothing done"),
}
#: The state beside an action in the chart's legend, short.
STATE_SHORT: dict[str, str | Promise] = {
    state.value: words.short for state, words in vocabulary.STATE_WORDS.items()
}
#: The proxy's routes in words, by their origin in the ledger.
_ROUTE_WORDS: dict[str, str | Promise] = {
    "chat": gettext_lazy("proxy: chat"),
    "completions": gettext_lazy("proxy: completions"),
    "responses": gettext_lazy("proxy: responses"),
    "messages": gettext_lazy("proxy: messages"),
    "embeddings": gettext_lazy("proxy: embeddings"),
    "gemini": gettext_lazy("proxy: Gemini"),
}


def _route_word(origin: str) -> str | Promise:
    """A proxy route's origin in words: its own, or (a new protocol's, not
    named above) ``proxy: <origin>``, never the bare code."""
    return _ROUTE_WORDS.get(origin) or format_lazy(gettext_lazy("proxy: {route}"), route=origin)


#: Where a decision was made (the ledger's ``origin``): each wire protocol's
#: origins (``protocols.ALL``, each declares its own), the verdict API's and
#: the gateways' reports.
ORIGIN_WORDS: dict[str, str | Promise] = {
    **{origin: _route_word(origin) for protocol in protocols.ALL for origin in protocol.origins},
    "verdict": gettext_lazy("verdict API"),
    "gateway": gettext_lazy("gateway report"),
}
#: Bottom to top of each stacked bar: what went through, then what was cut.
ACTION_ORDER = ("pass", "clamp", "short-circuit")
KIND_ORDER = (*ACTION_ORDER, REFUSED, DRY_RUN)


def series_name(state: str, action: str) -> str:
    """``answered without a request (peak)`` for ``("off-duty", "short-circuit")``."""
    return _("%(action)s (%(state)s)") % {
        "action": KIND_WORDS.get(action, action),
        "state": STATE_SHORT.get(state, state),
    }


def action_word(action: str) -> str:
    return str(ACTION_WORDS.get(action, action))


def origin_word(origin: str) -> str:
    return str(ORIGIN_WORDS.get(origin, origin))


def state_word(state: str) -> str:
    return str(STATE_NAMES.get(state, state))


# ---- the chart ---------------------------------------------------------------


def reason_words(reason: str) -> str:
    """A stored reason line (the engine's English, kept as data in the ledger
    and the export) in the reader's words, by the one vocabulary
    (``vocabulary.reason_words``), without its leading local date and time:
    the When column shows it."""
    parts = reason.split(" · ")
    if parts and _REASON_DATE.fullmatch(parts[0].strip()):
        parts = parts[1:]
    return vocabulary.reason_words(" · ".join(parts))


_REASON_DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}")


def did_word(action: str, origin: str) -> str:
    """What the curfew did with one decision: an embedding short-circuited was
    refused, not answered."""
    if action == "short-circuit" and origin == "embeddings":
        return str(KIND_WORDS[REFUSED])
    return action_word(action)


# ---- the price table ---------------------------------------------------------
