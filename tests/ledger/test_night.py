"""The night in time and money (issue 25): AI time kept off, turns answered
without a request, tokens the clamps saved, embeddings refused apart, each
beside the week before; money only where the usage is known."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from curfew_core.ledger.batch import Batch, tally_action
from curfew_core.ledger.entry import Entry
from curfew_core.ledger.savings import (
    REFUSED,
    Bucket,
    compared,
    night,
    prices_of,
    savings,
)

DEFAULT = prices_of({})


def utc(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 9, day, hour, minute, tzinfo=UTC)


#: A week: two peak hours holding calls off (one of them twice: one hour),
#: one hour asleep, a dry run that held nothing off, a clamp, a refused embedding.
WEEK = [
    Bucket(utc(22, 2), "short-circuit", count=3, requests_not_sent=3, state="off-duty"),
    Bucket(utc(22, 2), REFUSED, count=1, requests_not_sent=1, state="off-duty"),
    Bucket(utc(22, 3), "short-circuit", count=2, requests_not_sent=2, state="off-duty"),
    Bucket(utc(23, 18), "short-circuit", count=4, requests_not_sent=4, state="lights-out"),
    # A dry run decides and never acts: no request was held off in this hour.
    Bucket(utc(23, 19), "short-circuit", count=5, requests_not_sent=0, state="lights-out"),
    Bucket(utc(23, 15), "clamp", count=2, output_tokens_not_generated=3000, state="winding"),
    Bucket(utc(23, 9), "pass", count=7, state="on-duty"),
]


def test_a_week_in_time_and_calls() -> None:
    summary = night(WEEK)
    assert summary.peak_hours == 2  # 02:00 and 03:00; the refused embedding's hour is one of them
    assert summary.asleep_hours == 1  # the dry run's hour held nothing off
    assert summary.hours_kept_off == 3
    assert summary.answered == 9  # 3 + 2 + 4: the refused embedding is not a turn answered
    assert summary.embeddings_refused == 1
    assert summary.clamp_tokens == 3000


def test_each_number_beside_the_week_before() -> None:
    before = night(
        [
            Bucket(utc(15, 2), "short-circuit", count=12, requests_not_sent=12, state="off-duty"),
            Bucket(utc(15, 15), "clamp", count=1, output_tokens_not_generated=500, state="winding"),
        ]
    )
    changes = compared(night(WEEK), before)
    assert {name: (c.now, c.before, c.delta) for name, c in changes.items()} == {
        "hours_kept_off": (3, 1, 2),
        "answered": (9, 12, -3),
        "clamp_tokens": (3000, 500, 2500),
        "embeddings_refused": (1, 0, 1),
    }
    # A quiet week before: everything is new.
    empty = compared(night([]), night([]))
    assert {c.delta for c in empty.values()} == {0}


def test_no_known_usage_leaves_the_turns_out_of_the_money_and_says_how_many() -> None:
    """14 turns answered and no passed call whose usage is known: the money
    is the clamp's alone, and the 14 are counted as unpriced, never priced at 0."""
    night_only = [
        Bucket(utc(22, 2), "short-circuit", count=14, requests_not_sent=14, state="off-duty"),
        Bucket(utc(22, 15), "clamp", count=1, output_tokens_not_generated=1000, state="winding"),
    ]
    result = savings(night_only, DEFAULT)
    assert result.unpriced_requests == 14
    assert result.typical_output_tokens is None
    # 1000 output tokens at 1.20 per million, 15:00 UTC is off-peak: half.
    assert result.money == Decimal("0.000600")
    # Control: with a passed call's usage known, the turns are priced and none left out.
    known = [
        *night_only,
        Bucket(utc(22, 12), "pass", count=1, usage_known=1, input_tokens=1000, output_tokens=500),
    ]
    priced = savings(known, DEFAULT)
    assert priced.unpriced_requests == 0
    assert priced.money > result.money


def test_a_refused_embedding_is_never_priced_as_a_turn() -> None:
    passed = Bucket(
        utc(22, 12), "pass", count=1, usage_known=1, input_tokens=1000, output_tokens=500
    )
    refused = Bucket(utc(22, 2), REFUSED, count=10, requests_not_sent=10, state="off-duty")
    answered = Bucket(utc(22, 2), "short-circuit", count=10, requests_not_sent=10, state="off-duty")
    with_refused = savings([passed, refused], DEFAULT)
    assert with_refused.requests_not_sent == 10  # still a request not sent upstream
    assert with_refused.embeddings_refused == 10
    assert with_refused.unpriced_requests == 10
    assert with_refused.money == 0
    assert with_refused.input_tokens_not_sent == 0
    # Control: ten chat turns answered in the same hour are priced.
    assert savings([passed, answered], DEFAULT).money > 0


def entry(origin: str, action: str) -> Entry:
    return Entry(at=utc(22, 2, 30), state="off-duty", action=action, origin=origin, user_id=1)


def test_a_refused_embedding_is_tallied_apart_from_the_answers() -> None:
    batch = Batch(lambda at, minute: at)
    batch.add(entry("embeddings", "short-circuit"), 1)
    batch.add(entry("chat", "short-circuit"), 1)
    batch.add(entry("embeddings", "pass"), 1)
    minute = int(utc(22, 2, 30).timestamp()) // 60
    assert batch.tallies[(1, minute, "off-duty", REFUSED)][:4] == [1, 0, 0, 1]
    assert batch.tallies[(1, minute, "off-duty", "short-circuit")][:4] == [1, 0, 0, 1]
    assert batch.tallies[(1, minute, "off-duty", "pass")][:4] == [1, 0, 0, 0]
    # The raw row keeps what the door did: a short-circuit of the embeddings door.
    assert (batch.rows[0][5], batch.rows[0][9]) == ("short-circuit", "embeddings")
    # A refused batch is retried in halves, each row's tally worked out again:
    # the same keys (``_count`` follows ``tally_action``).
    parts = batch.split(lambda at: int(at.timestamp()) // 60)
    assert parts is not None
    keys = set(parts[0].tallies) | set(parts[1].tallies)
    assert keys == set(batch.tallies)
    assert tally_action("embeddings", "short-circuit") == REFUSED
    assert tally_action("chat", "short-circuit") == "short-circuit"
