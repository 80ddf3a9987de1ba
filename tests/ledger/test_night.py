"""The night in time and money (issues 25, 39): AI time kept off, to the
minute, turns answered without a request, tokens not asked for (budget cuts),
embeddings refused apart, each beside the week before; money only where the
usage is known, never for a budget cut."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from curfew_core.ledger.batch import Batch, tally_action
from curfew_core.ledger.entry import Entry
from curfew_core.ledger.savings import (
    REFUSED,
    Bucket,
    compared,
    held_minutes,
    night,
    prices_of,
    savings,
)

DEFAULT = prices_of({})


def utc(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 9, day, hour, minute, tzinfo=UTC)


#: A week: calls held off at peak and asleep, a dry run that held nothing
#: off, a clamp, a refused embedding.
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
#: The instants of the week's calls held off: three peak minutes (two calls in
#: 02:00, one of them at 02:00:40), one asleep minute, and states that hold
#: nothing off (a clamp while winding, a pass).
HELD = [
    ("off-duty", utc(22, 2)),
    ("off-duty", datetime(2026, 9, 22, 2, 0, 40, tzinfo=UTC)),
    ("off-duty", utc(22, 2, 1)),
    ("off-duty", utc(22, 3, 59)),
    ("lights-out", utc(23, 18, 30)),
    ("winding", utc(23, 15)),
    ("on-duty", utc(23, 9)),
]


def test_time_is_counted_as_it_happened_by_the_minute() -> None:
    """About three minutes switched off are three minutes, never "1 h":
    a minute counts once however many calls it held off."""
    assert held_minutes(HELD) == {"off-duty": 3, "lights-out": 1}
    three = [("lights-out", utc(22, 12, m)) for m in (0, 1, 2)]
    assert held_minutes(three) == {"off-duty": 0, "lights-out": 3}
    assert night([], held_minutes(three)).minutes_kept_off == 3
    # Control: the same calls within one minute are one minute.
    assert held_minutes([("lights-out", utc(22, 12, 0))] * 3)["lights-out"] == 1


def test_a_week_in_time_and_calls() -> None:
    summary = night(WEEK, held_minutes(HELD))
    assert summary.peak_minutes == 3
    assert summary.asleep_minutes == 1
    assert summary.minutes_kept_off == 4
    assert summary.answered == 9  # 3 + 2 + 4: the refused embedding is not a turn answered
    assert summary.embeddings_refused == 1
    assert summary.tokens_not_asked_for == 3000


def test_each_number_beside_the_week_before() -> None:
    before = night(
        [
            Bucket(utc(15, 2), "short-circuit", count=12, requests_not_sent=12, state="off-duty"),
            Bucket(utc(15, 15), "clamp", count=1, output_tokens_not_generated=500, state="winding"),
        ],
        {"off-duty": 1},
    )
    changes = compared(night(WEEK, held_minutes(HELD)), before)
    assert {name: (c.now, c.before, c.delta) for name, c in changes.items()} == {
        "minutes_kept_off": (4, 1, 3),
        "answered": (9, 12, -3),
        "tokens_not_asked_for": (3000, 500, 2500),
        "embeddings_refused": (1, 0, 1),
    }
    # A quiet week before: everything is new.
    empty = compared(night([]), night([]))
    assert {c.delta for c in empty.values()} == {0}


def test_no_known_usage_leaves_the_turns_out_of_the_money_and_says_how_many() -> None:
    """14 turns answered and no passed call whose usage is known: nothing is
    priced (a clamp's cut never is), and the 14 are counted as unpriced,
    never priced at 0."""
    night_only = [
        Bucket(utc(22, 2), "short-circuit", count=14, requests_not_sent=14, state="off-duty"),
        Bucket(utc(22, 15), "clamp", count=1, output_tokens_not_generated=1000, state="winding"),
    ]
    result = savings(night_only, DEFAULT)
    assert result.unpriced_requests == 14
    assert result.typical_output_tokens is None
    assert result.money == Decimal(0)
    assert result.tokens_not_asked_for == 1000
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
