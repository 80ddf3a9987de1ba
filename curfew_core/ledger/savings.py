"""What the curfew saved, from the hourly aggregates and a price table (pure).

- **Requests not sent**: short-circuits that acted (a dry run never acts).
- **Output tokens not generated**: for each request not sent, the output a
  call that went through untouched used on average in the same range
  (upstream ``usage``, where the door saw it). No such call: 0.
- **Tokens not asked for**: on clamps, the budget asked minus the budget
  allowed (``max_tokens`` lowered). A cap, not a saving: how much of the cut
  an answer would have used is not known, so it is never counted as tokens
  saved and never priced.
- **Money**: per hour, the input a typical passed call sent and the output
  above, at the table's per-million prices, times ``1 - discount_rate`` for the
  share of the hour inside a discount window (UTC clock times). Only where the
  usage is known: a request not sent while no passed call's usage is known is
  left out of the money and counted (``unpriced_requests``), never priced at a
  guess; an embedding refused off duty (``REFUSED``) is never priced as a chat
  turn (it has no answer to save) and is counted apart; a clamp's cut is
  never priced (above).

Default prices: DeepSeek's published list (https://api-docs.deepseek.com/quick_start/pricing,
"Models & Pricing", as served on 2026-11-15 and read on 2026-11-30):
``deepseek-flash`` at peak USD 0.30 per million input tokens (cache miss) and
USD 1.20 per million output tokens; off-peak rates are half the peak rates;
peak hours are 01:00-04:00 and 06:00-10:00 UTC, all other hours off-peak. So
the default discount windows are 10:00-01:00 and 04:00-06:00 UTC at 50 %.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from curfew_core.engine.verdict import HELD_OFF, State

MINUTES_A_DAY = 24 * 60
MAX_PRICE = Decimal(10_000)
MAX_WINDOWS = 8
CURRENCY_PATTERN = "^[A-Z]{3}$"
TIME_PATTERN = "^([01][0-9]|2[0-3]):[0-5][0-9]$"
MONEY_PLACES = Decimal("0.000001")

DEFAULT_PRICES: dict[str, Any] = {
    "input_per_million": "0.30",
    "output_per_million": "1.20",
    "currency": "USD",
    "discount_windows": [["10:00", "01:00"], ["04:00", "06:00"]],
    "discount_rate": "0.5",
}
PRICE_FIELDS = tuple(DEFAULT_PRICES)

#: The hourly totals' own action for an embedding refused off duty. The raw
#: decision stays a ``short-circuit`` from the ``embeddings`` door; its tally is
#: kept apart (``ledger.batch``) so that "answered without a request" counts
#: answers only: a refused embedding is a request not sent, not a turn answered.
REFUSED = "refused"
#: The states in which a call held off is AI time kept off (peak, asleep).
OFF_STATES = tuple(sorted(state.value for state in HELD_OFF))


@dataclass(frozen=True, slots=True)
class Prices:
    input_per_million: Decimal
    output_per_million: Decimal
    currency: str
    #: ``(start, end)`` minutes of the UTC day; ``end < start`` wraps midnight.
    discount_windows: tuple[tuple[int, int], ...]
    #: The share taken off inside a window (0.5: half price).
    discount_rate: Decimal


class PriceError(ValueError):
    """Each refused field and why; nothing was changed."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{k}: {v}" for k, v in self.errors.items()))


def _minutes(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def _decimal(value: Any, field: str, errors: dict[str, str], *, upper: Decimal) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        errors[field] = f"must be a number, not {type(value).__name__}"
        return None
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        errors[field] = f"must be a number, not {str(value)[:40]!r}"
        return None
    if not number.is_finite() or number < 0 or number > upper:
        errors[field] = f"must be between 0 and {upper}, not {str(value)[:40]}"
        return None
    return format(number.normalize(), "f")


def check_prices(config: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical table (every field) for ``config`` laid over the defaults,
    or ``PriceError`` naming every bad or unknown field."""
    errors: dict[str, str] = {}
    for key in config:
        if key not in PRICE_FIELDS:
            errors[str(key)[:64]] = f"is not a price field; use {', '.join(PRICE_FIELDS)}"
    merged = {**DEFAULT_PRICES, **{k: v for k, v in config.items() if k in PRICE_FIELDS}}
    out: dict[str, Any] = {}
    for field in ("input_per_million", "output_per_million"):
        out[field] = _decimal(merged[field], field, errors, upper=MAX_PRICE)
    out["discount_rate"] = _decimal(
        merged["discount_rate"], "discount_rate", errors, upper=Decimal(1)
    )
    currency = merged["currency"]
    if not isinstance(currency, str) or not re.fullmatch(CURRENCY_PATTERN, currency):
        errors["currency"] = "must be a three-letter currency code in capitals, like USD or CNY"
    out["currency"] = currency
    windows = merged["discount_windows"]
    good = (
        isinstance(windows, list)
        and len(windows) <= MAX_WINDOWS
        and all(
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(t, str) and re.fullmatch(TIME_PATTERN, t) for t in pair)
            and pair[0] != pair[1]
            for pair in windows
        )
    )
    if not good:
        errors["discount_windows"] = (
            f"must be a list of at most {MAX_WINDOWS} [start, end] pairs of different "
            'UTC times "HH:MM" (an end before its start wraps midnight)'
        )
    out["discount_windows"] = windows
    if errors:
        raise PriceError(errors)
    return out


def prices_of(stored: Mapping[str, Any]) -> Prices:
    """The ``Prices`` of a stored table (defaults where it is silent)."""
    table = check_prices(stored)
    return Prices(
        input_per_million=Decimal(table["input_per_million"]),
        output_per_million=Decimal(table["output_per_million"]),
        currency=table["currency"],
        discount_windows=tuple(
            (_minutes(start), _minutes(end)) for start, end in table["discount_windows"]
        ),
        discount_rate=Decimal(table["discount_rate"]),
    )


def _in_windows(minute: int, windows: Iterable[tuple[int, int]]) -> bool:
    for start, end in windows:
        if start < end and start <= minute < end:
            return True
        if start > end and (minute >= start or minute < end):
            return True
    return False


def discounted_share(hour_start: datetime, prices: Prices) -> Decimal:
    """The share of the hour from ``hour_start`` (UTC) inside a discount window,
    counted by the minute (an hour from 00:30 UTC in a window ending 01:00: 1/2)."""
    first = hour_start.hour * 60 + hour_start.minute
    inside = sum(
        1
        for minute in range(first, first + 60)
        if _in_windows(minute % MINUTES_A_DAY, prices.discount_windows)
    )
    return Decimal(inside) / Decimal(60)


@dataclass(frozen=True, slots=True)
class Bucket:
    """One hourly aggregate, as the arithmetic needs it."""

    start: datetime
    action: str
    count: int = 0
    requests_not_sent: int = 0
    output_tokens_not_generated: int = 0
    usage_known: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    #: The schedule state of the hour's decisions (the night's summary needs it).
    state: str = ""


@dataclass(frozen=True, slots=True)
class Savings:
    decisions: int
    requests_not_sent: int
    output_tokens_not_generated: int
    input_tokens_not_sent: int
    money: Decimal
    currency: str
    #: The typical passed call the estimate for requests not sent rests on
    #: (``None`` when no passed call's usage is known in the range).
    typical_input_tokens: Decimal | None
    typical_output_tokens: Decimal | None
    #: Requests not sent that the money leaves out: answered while no passed
    #: call's usage was known (nothing to price them by), and refused embeddings.
    unpriced_requests: int = 0
    #: Of ``requests_not_sent``, embeddings refused off duty (never priced).
    embeddings_refused: int = 0
    #: The clamps' cuts of ``max_tokens`` (budget asked minus allowed): tokens
    #: not asked for, neither saved nor priced.
    tokens_not_asked_for: int = 0


def _typical(rows: list[Bucket]) -> tuple[Decimal, Decimal] | None:
    """The average passed call's input and output tokens, where any usage is known."""
    known = sum(b.usage_known for b in rows if b.action == "pass")
    if not known:
        return None
    return (
        Decimal(sum(b.input_tokens for b in rows if b.action == "pass")) / Decimal(known),
        Decimal(sum(b.output_tokens for b in rows if b.action == "pass")) / Decimal(known),
    )


def savings(
    buckets: Iterable[Bucket], prices: Prices, *, typical_of: Iterable[Bucket] = ()
) -> Savings:
    """What ``buckets`` saved. A request not sent is priced as the typical passed
    call among them; where none of theirs is known (one session that is always
    answered without a request), as the typical one of ``typical_of``."""
    rows = list(buckets)
    typical = _typical(rows) or _typical(list(typical_of))
    typical_in: Decimal | None = typical[0] if typical else None
    typical_out: Decimal | None = typical[1] if typical else None
    per_in = typical_in or Decimal(0)
    per_out = typical_out or Decimal(0)
    million = Decimal(1_000_000)
    money = Decimal(0)
    input_saved = Decimal(0)
    output_saved = Decimal(0)
    unpriced = 0
    refused = 0
    not_asked = 0
    for b in rows:
        not_asked += b.output_tokens_not_generated
        answered = b.requests_not_sent
        if b.action == REFUSED:
            refused += answered
            unpriced += answered
            answered = 0
        elif typical is None:
            unpriced += answered
        tokens_in = answered * per_in
        tokens_out = answered * per_out
        input_saved += tokens_in
        output_saved += tokens_out
        if not tokens_in and not tokens_out:
            continue
        rate = Decimal(1) - prices.discount_rate * discounted_share(b.start, prices)
        cost = tokens_in * prices.input_per_million + tokens_out * prices.output_per_million
        money += cost / million * rate
    return Savings(
        decisions=sum(b.count for b in rows),
        requests_not_sent=sum(b.requests_not_sent for b in rows),
        output_tokens_not_generated=int(output_saved.to_integral_value(ROUND_HALF_UP)),
        input_tokens_not_sent=int(input_saved.to_integral_value(ROUND_HALF_UP)),
        money=money.quantize(MONEY_PLACES, ROUND_HALF_UP),
        currency=prices.currency,
        typical_input_tokens=typical_in,
        typical_output_tokens=typical_out,
        unpriced_requests=unpriced,
        embeddings_refused=refused,
        tokens_not_asked_for=not_asked,
    )


@dataclass(frozen=True, slots=True)
class Night:
    """What the curfew kept off in a period, in time and calls (no money):
    the time from the decisions' own instants, the calls from the hourly totals."""

    #: Minutes at peak (``off-duty``) in which at least one call was held off.
    peak_minutes: int
    #: Minutes asleep (``lights-out``) in which at least one call was held off.
    asleep_minutes: int
    #: Turns answered without a request (short-circuits that acted; not embeddings).
    answered: int
    #: Embeddings refused off duty (nothing sent, nothing answered).
    embeddings_refused: int
    #: The clamps' cuts of ``max_tokens``: tokens not asked for (never "saved").
    tokens_not_asked_for: int

    @property
    def minutes_kept_off(self) -> int:
        return self.peak_minutes + self.asleep_minutes


def held_minutes(held: Iterable[tuple[str, datetime]]) -> dict[str, int]:
    """The minutes, per off state, in which a call was held off, from the
    instants of the calls held off (``(state, at)``; a dry run holds nothing
    off, so the caller passes only short-circuits that acted). Time counted as
    it happened: a minute counts once however many calls it held off, and
    three minutes switched off with a call in each are three minutes, never an
    hour. Every zone's offset is whole minutes, so a UTC minute is a local one."""
    seen: dict[str, set[int]] = {state: set() for state in OFF_STATES}
    for state, at in held:
        if state in seen:
            seen[state].add(int(at.timestamp()) // 60)
    return {state: len(minutes) for state, minutes in seen.items()}


def night(buckets: Iterable[Bucket], held: Mapping[str, int] | None = None) -> Night:
    """``buckets`` summed as calls kept off, beside ``held`` (``held_minutes``
    of the same period) as the time. A dry run holds nothing off
    (``requests_not_sent`` counts only short-circuits that acted)."""
    minutes = held or {}
    answered = refused = not_asked = 0
    for b in buckets:
        if b.action == REFUSED:
            refused += b.requests_not_sent
        elif b.action == "short-circuit":
            answered += b.requests_not_sent
        elif b.action == "clamp":
            not_asked += b.output_tokens_not_generated
    return Night(
        peak_minutes=minutes.get(State.OFF_DUTY, 0),
        asleep_minutes=minutes.get(State.LIGHTS_OUT, 0),
        answered=answered,
        embeddings_refused=refused,
        tokens_not_asked_for=not_asked,
    )


@dataclass(frozen=True, slots=True)
class Change:
    """A number and the same number the period before."""

    now: int
    before: int

    @property
    def delta(self) -> int:
        return self.now - self.before


def compared(this: Night, before: Night) -> dict[str, Change]:
    """Each of ``this`` period's numbers beside the period before's."""
    return {
        name: Change(getattr(this, name), getattr(before, name))
        for name in (
            "minutes_kept_off",
            "answered",
            "tokens_not_asked_for",
            "embeddings_refused",
        )
    }
