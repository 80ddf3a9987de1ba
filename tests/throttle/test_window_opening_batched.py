"""A token's window opened in the round trip its requests share (issue 40).

A gateway naming thousands of members through a team key, or thousands of
users each asking a few times a minute, open a window (``SET … NX EX``, the
previous window's count read) on most of their requests. That opening was a
pipeline of its own, one round trip and three commands for every such
request; it is now part of the batch's one script (``_COUNT_EACH``), with the
same counts, expiry and sliding estimate.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis

from curfew_core import throttle
from curfew_core.store import async_cache
from tests.throttle.test_token_rate_redis import START, _spy_commands, at, on_redis

pytestmark = pytest.mark.redis

__all__ = ["on_redis"]  # the fixture, used by name


def _spy_pipelines(client: Any) -> list[int]:
    """How many pipelines ``client`` opens (one entry each)."""
    opened: list[int] = []
    pipeline = client.pipeline

    def spied(*args: Any, **kwargs: Any) -> Any:
        opened.append(1)
        return pipeline(*args, **kwargs)

    client.pipeline = spied
    return opened


def _window_key(prefix: str, token: int, moment: float) -> str:
    return f"{prefix}:throttle:token-rate:4:60:{token}:{int(moment // 60)}"


def test_windows_opened_together_are_one_script_and_no_pipeline(
    on_redis: str, redis_url: str
) -> None:
    """Eight tokens' first requests, waiting together: one ``EVALSHA`` opens
    and counts every window; no pipeline, no ``SET`` or ``GET`` of their own
    (before: a pipeline of three commands each, eight round trips)."""
    sent: list[tuple[Any, ...]] = []
    pipelines: list[int] = []

    async def together() -> list[bool]:
        try:
            client = async_cache.client()
            sent.extend(_spy := _spy_commands(client))
            pipelines.extend(_pipes := _spy_pipelines(client))
            passed = await asyncio.gather(*(throttle.ahit_token_rate(t) for t in range(1, 9)))
            sent.extend(_spy)
            pipelines.extend(_pipes)
            return [refusal is None for refusal in passed]
        finally:
            await async_cache.aclose()

    with at(START):
        assert asyncio.run(together()) == [True] * 8
    assert pipelines == []
    names = [command[0] for command in sent]
    assert "SET" not in names
    assert "GET" not in names
    # All eight were waiting when the first round trip went: one script for
    # all (after its SCRIPT LOAD, the first time this Redis sees it).
    assert [name for name in names if name in {"EVALSHA", "EVAL", "INCRBY"}] == ["EVALSHA"]
    client = redis.Redis.from_url(redis_url)
    for token in range(1, 9):
        assert client.get(_window_key(on_redis, token, START)) == b"1"
        assert 0 < client.ttl(_window_key(on_redis, token, START)) <= 180


def test_an_opening_in_the_batch_reads_the_previous_window(on_redis: str, redis_url: str) -> None:
    """The previous window's count comes back with the opening and weighs in:
    30 s into a window after one of 4, the last window's 4 still weigh 2, so
    only 2 pass; a token with no previous window gets all 4."""
    client = redis.Redis.from_url(redis_url)
    client.set(_window_key(on_redis, 7, START - 60), 4, ex=180)

    async def burst() -> list[bool]:
        try:
            passed = await asyncio.gather(
                *(throttle.ahit_token_rate(token) for token in (7, 8) * 4)
            )
            return [refusal is None for refusal in passed]
        finally:
            await async_cache.aclose()

    with at(START):
        passed = asyncio.run(burst())
    assert [ok for ok, token in zip(passed, (7, 8) * 4, strict=True) if token == 7] == [
        True,
        True,
        False,
        False,
    ]
    assert [ok for ok, token in zip(passed, (7, 8) * 4, strict=True) if token == 8] == [True] * 4
    assert client.get(_window_key(on_redis, 7, START)) == b"2"  # refusals taken back
    assert client.get(_window_key(on_redis, 8, START)) == b"4"


def test_a_window_opened_once_is_not_opened_again(on_redis: str, redis_url: str) -> None:
    """The control: after its opening, a token's next requests are a plain
    ``INCRBY`` (no script, no opening), as before."""
    sent: list[tuple[Any, ...]] = []

    async def twice() -> None:
        try:
            await throttle.ahit_token_rate(7)
            spy = _spy_commands(async_cache.client())
            await throttle.ahit_token_rate(7)
            sent.extend(spy)
        finally:
            await async_cache.aclose()

    with at(START):
        asyncio.run(twice())
    assert [command[0] for command in sent] == ["INCRBY"]
