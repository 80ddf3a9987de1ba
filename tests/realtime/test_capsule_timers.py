"""When a capsule looks again: the verdict's edge, the local midnight, or an hour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from curfew_core.realtime.timers import MAX_SLEEP, next_local_midnight, next_wake, recheck_at

NOW = datetime(2026, 9, 29, 12, 0, tzinfo=UTC)  # 20:00 in Shanghai


def payload(valid_until: datetime, timezone: str = "Asia/Shanghai") -> dict[str, str]:
    return {"valid_until": valid_until.isoformat(), "timezone": timezone}


def test_the_verdicts_own_edge_wins_when_it_is_first():
    edge = NOW + timedelta(minutes=7, seconds=3)
    assert next_wake(payload(edge), NOW) == edge


def test_the_local_midnight_wins_when_the_verdict_lasts_past_it():
    # 23:30 in Shanghai, nothing scheduled until the morning: the day plan rolls at 00:00.
    now = NOW + timedelta(hours=3, minutes=30)
    wake = next_wake(payload(now + timedelta(hours=10)), now)
    local = wake.astimezone(ZoneInfo("Asia/Shanghai"))
    assert (local.date().isoformat(), local.hour, local.minute) == ("2026-09-30", 0, 0)
    assert wake - now == timedelta(minutes=30)


def test_a_far_wake_is_rechecked_within_max_sleep():
    # Honolulu's midnight is 22 h away; nothing else changes for a day.
    wake = next_wake(payload(NOW + timedelta(hours=24), "Pacific/Honolulu"), NOW)
    assert wake == NOW + MAX_SLEEP


def test_the_hourly_recheck_is_on_a_whole_minute_so_sockets_share_it():
    # Sockets opened seconds apart wake together (one shared timer), within MAX_SLEEP.
    opened = [NOW + timedelta(seconds=s, microseconds=ms) for s, ms in ((3, 5), (17, 0), (59, 999))]
    wakes = {recheck_at(at) for at in opened}
    assert wakes == {NOW + MAX_SLEEP}
    for at in opened:
        assert at < recheck_at(at) <= at + MAX_SLEEP


def test_midnight_that_does_not_exist_still_lands_after_now():
    # Santiago skips 2026-09-06 00:00 → 01:00 (DST starts at midnight).
    tz = ZoneInfo("America/Santiago")
    now = datetime(2026, 9, 5, 23, 30, tzinfo=tz)
    midnight = next_local_midnight(now, "America/Santiago")
    assert midnight > now
    assert midnight - now <= timedelta(minutes=30)
    assert midnight.astimezone(tz).date().isoformat() == "2026-09-06"
