"""The Activity page's totals: the period's night in time and money, each
beside the period before's, with what it counts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from curfew_core.ledger.savings import Bucket, Change, Night, Savings, compared, night
from curfew_core.selectors.ledger_page import PERIODS


def money_text(amount: Decimal) -> str:
    """Cents when there are any; smaller sums to the hundredth of a cent."""
    if amount == 0:
        return "0.00"
    if amount >= Decimal("0.01"):
        return f"{amount.quantize(Decimal('0.01')):,}"
    if amount >= Decimal("0.0001"):
        return f"{amount.quantize(Decimal('0.0001'))}"
    return "< 0.0001"


@dataclass(frozen=True, slots=True)
class Total:
    """One number of the period, in words, beside the period before's."""

    id: str
    number: str
    label: str
    #: ``Week before: 11 (+3)``.
    versus: str
    #: Of a number the arithmetic could not give (money with no usage known): empty.
    note: str = ""
    #: What the number counts, one click away (the manual says the same).
    definition: str = ""


def _signed(delta: int | Decimal, text: str) -> str:
    if delta > 0:
        return "+" + text
    if delta < 0:
        return "−" + text
    return "±0"


def versus_text(before: str, delta: str, days: int) -> str:
    if days == PERIODS[0]:
        return _("Week before: %(before)s (%(delta)s)") % {"before": before, "delta": delta}
    return _("The %(days)s days before: %(before)s (%(delta)s)") % {
        "days": days,
        "before": before,
        "delta": delta,
    }


def hours_text(hours: int) -> str:
    return _("%(h)s h") % {"h": f"{hours:,}"}


def minutes_text(minutes: int) -> str:
    """``3 min``, ``1 h 5 min``, ``12 h``: time as it happened, to the minute."""
    hours, rest = divmod(minutes, 60)
    if not hours:
        return _("%(m)s min") % {"m": f"{rest:,}"}
    if not rest:
        return hours_text(hours)
    return _("%(h)s h %(m)s min") % {"h": f"{hours:,}", "m": rest}


def count_text(n: int) -> str:
    return f"{n:,}"


def _versus_int(now: int, before: int, days: int, text: Callable[[int], str] = count_text) -> str:
    return versus_text(text(before), _signed(now - before, text(abs(now - before))), days)


#: What each total counts (docs/manual.md, "Activity's figures", says the same).
DEFINITIONS: dict[str, str | Promise] = {
    "total-time": gettext_lazy(
        "The minutes in which at least one call was held off, at peak or asleep, "
        "read from each decision's own time: a minute counts once however many "
        "calls it held off, and a dry run holds nothing off. Counted from single "
        "decisions, so only as far back as they are kept."
    ),
    "total-not-sent": gettext_lazy(
        "Calls Curfew answered itself while your AI was off, so no request went "
        "to the model. A dry run answers nothing."
    ),
    "total-tokens": gettext_lazy(
        "While your AI gets sleepy, Curfew lowers the longest answer a call may "
        "ask for (max_tokens). This is the sum of those cuts: tokens not asked "
        "for, not tokens saved (an answer may have ended sooner anyway), so they "
        "are not priced."
    ),
    "total-refused": gettext_lazy(
        "Embedding requests refused while your AI was off: nothing was sent and "
        "nothing answered. Not priced."
    ),
    "total-money": gettext_lazy(
        "What the turns answered without a request would have cost: each priced "
        "as a typical call that went through in the period (the usage it "
        "reported), at your prices below. Only where that usage is known; budget "
        "cuts are never priced."
    ),
}


def definition(total_id: str) -> str:
    return str(DEFINITIONS.get(total_id, ""))


def totals(
    this: Night,
    before: Night,
    saved: Savings,
    saved_before: Savings,
    *,
    days: int,
    before_partial: bool = False,
    retention_days: int = 0,
) -> list[Total]:
    """The period's totals: AI time kept off, turns answered without a
    request, tokens not asked for (budget cuts), embeddings refused (when there
    were any), and money, each beside the period before and with its
    definition. Money counts only what it can price, and says what it left out."""
    changes = compared(this, before)
    minutes = changes["minutes_kept_off"]
    time_note = ""
    if before_partial:
        time_note = _(
            "Single decisions are kept for %(days)s days: the period before is "
            "counted from those still kept."
        ) % {"days": retention_days}
    out = [
        Total(
            "total-time",
            minutes_text(minutes.now),
            _("of AI time kept off (%(peak)s at peak, %(asleep)s asleep)")
            % {
                "peak": minutes_text(this.peak_minutes),
                "asleep": minutes_text(this.asleep_minutes),
            },
            _versus_int(minutes.now, minutes.before, days, minutes_text),
            time_note,
            definition("total-time"),
        ),
        _count("total-not-sent", changes["answered"], _("turns answered without a request"), days),
        _count(
            "total-tokens",
            changes["tokens_not_asked_for"],
            _("tokens not asked for (budget cuts)"),
            days,
        ),
    ]
    refused = changes["embeddings_refused"]
    if refused.now or refused.before:
        label = _("embeddings refused (not answered, not priced)")
        out.append(_count("total-refused", refused, label, days))
    out.append(money_total(saved, saved_before, days=days))
    return out


def _count(code: str, change: Change, label: str, days: int) -> Total:
    """A count of the period beside the period before's, with its definition."""
    versus = _versus_int(change.now, change.before, days)
    return Total(code, f"{change.now:,}", label, versus, definition=definition(code))


def money_words(saved: Savings) -> str:
    """The money saved as a person reads it (``CNY 1.20``), or "not known"
    when turns were answered without a request and nothing priced them (no
    call that went through told its usage): the Activity page's total and
    the Team page's card say it by this one rule."""
    unpriced_turns = saved.unpriced_requests - saved.embeddings_refused
    if saved.money > 0 or unpriced_turns == 0:
        return f"{saved.currency} {money_text(saved.money)}"
    return _("not known")


def money_total(saved: Savings, before: Savings, *, days: int) -> Total:
    """The money, where the usage is known. A turn answered without a request
    is priced as a typical call that went through; with no such call's usage
    known there is nothing to price it by, so it is left out and the note says
    so (a total of 0.0013 beside 14 turns answered would otherwise read as
    "those turns were worth nothing"). A budget cut is never priced: how much
    of it an answer would have used is not known."""
    unpriced_turns = saved.unpriced_requests - saved.embeddings_refused
    number = money_words(saved)
    note = ""
    if unpriced_turns > 0:
        note = ngettext(
            "The %(n)s turn answered without a request is not in this sum: no call "
            "that went through told Curfew how many tokens it used, so there is "
            "nothing to price it by.",
            "The %(n)s turns answered without a request are not in this sum: no call "
            "that went through told Curfew how many tokens it used, so there is "
            "nothing to price them by.",
            unpriced_turns,
        ) % {"n": f"{unpriced_turns:,}"}
    delta = saved.money - before.money
    versus = versus_text(
        f"{before.currency} {money_text(before.money)}",
        _signed(delta, money_text(abs(delta))),
        days,
    )
    return Total(
        "total-money", number, _("saved, estimated"), versus, note, definition("total-money")
    )


def period_totals(
    buckets: list[Bucket],
    before: list[Bucket],
    saved: Savings,
    saved_before: Savings,
    *,
    days: int,
    held: Mapping[str, int] | None = None,
    held_before: Mapping[str, int] | None = None,
    before_since: dt.datetime | None = None,
    retention_days: int = 0,
) -> list[Total]:
    """``totals`` of two periods' hourly totals and their minutes held off
    (``ledger_page.minutes_held_off``): the page's one call. The time of the
    period before starting at ``before_since`` is partial when single
    decisions (kept ``retention_days``) no longer reach back that far."""
    before_partial = (
        before_since is not None
        and retention_days > 0
        and before_since < timezone.now() - dt.timedelta(days=retention_days)
    )
    return totals(
        night(buckets, held),
        night(before, held_before),
        saved,
        saved_before,
        days=days,
        before_partial=before_partial,
        retention_days=retention_days,
    )
