"""The proxy's one judgment: the caller's verdict for this call's scope.

The edge has resolved the caller (the live token and the user's rows, warm
from the cache or read once in a thread) and counted its rate; judging is the
engine on rows in hand, on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from curfew_core.edge.caller import Caller
from curfew_core.engine import RequestContext, Verdict
from curfew_core.selectors.verdicts import decide_for


@dataclass(frozen=True, slots=True)
class Judged:
    token_id: int
    verdict: Verdict
    #: Whose token it is: the ledger's entry then needs no lookup by token.
    user_id: int


def judge(caller: Caller, context: RequestContext) -> Judged:
    """``caller``'s verdict for a call with ``context`` (who asks), now."""
    verdict, _ = decide_for(caller.bundle, now=timezone.now(), request=context)
    return Judged(caller.token_id, verdict, caller.user_id)
