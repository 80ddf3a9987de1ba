"""The Activity page's query (period, session, action, page), read forgivingly:
a value the page does not know is named in a notice and ignored, never an
error page."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.utils.translation import gettext as _

from curfew_core.ledger.entry import ACTIONS, MAX_SCOPE
from curfew_core.schema.query import Problem, QueryReader
from curfew_core.selectors.ledger_page import PERIODS

MAX_PAGE = 10_000


PER_PAGE = 25


@dataclass(frozen=True, slots=True)
class LedgerQuery:
    days: int = PERIODS[0]
    session: str = ""
    action: str = ""
    page: int = 1
    #: What was not understood (and so ignored), each naming its parameter.
    problems: tuple[Problem, ...] = field(default=())

    def params(self) -> str:
        """This view's query string (page 1, defaults left out), for the
        export link and the pager."""
        values = {
            "period": "" if self.days == PERIODS[0] else self.days,
            "session": self.session,
            "action": self.action,
        }
        return urlencode({k: v for k, v in values.items() if v != ""})


def parse_query(params: Mapping[str, str]) -> LedgerQuery:
    """The Activity page's filters, through the pages' one query reader: a
    value it cannot use is named, and the default shown instead."""
    query = QueryReader(params)
    days = int(
        query.choice(
            "period",
            {str(p) for p in PERIODS},
            default=str(PERIODS[0]),
            message=_("The period can be 7 or 30 days; showing the last %(days)s days.")
            % {"days": PERIODS[0]},
        )
    )
    action = query.choice(
        "action",
        ACTIONS,
        default="",
        message=_("There is no such action to filter by; showing every action."),
    )
    session = query.text(
        "session",
        max_length=MAX_SCOPE,
        message=_("A session name has at most %(n)s characters; showing every session.")
        % {"n": MAX_SCOPE},
    )
    page = query.whole(
        "page",
        low=1,
        high=MAX_PAGE,
        default=1,
        message=_("There is no such page; showing the first."),
    )
    return LedgerQuery(days, session, action, page, tuple(query.problems))
