"""``X-Curfew-Purpose`` exempts only a listed purpose (issue 11, part D).

Any purpose at all used to pass. Two calls at the same lights-out instant that
differ only in the header: the unlisted purpose gets the canned answer and the
recording upstream sees nothing; the listed one (a default, sent in another
case) is forwarded byte for byte.
"""

from __future__ import annotations

from typing import Any

import openai

from curfew_testkit.fake_upstream import FakeUpstream
from tests.proxy.conftest import Proxy

LIGHTS_OUT_4AM = "2026-09-30 04:00"  # Wednesday morning, the served user's default schedule
MESSAGES = [{"role": "user", "content": "Name this chat."}]


def _sdk(proxy: Proxy, purpose: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=proxy.base_url,
        api_key=proxy.token,
        max_retries=0,
        timeout=20,
        default_headers={"X-Curfew-Session": "s-1", "X-Curfew-Purpose": purpose},
    )


def test_an_unlisted_purpose_is_short_circuited_and_a_listed_one_forwarded(
    proxy: Proxy, upstream: FakeUpstream
) -> None:
    proxy.travel(LIGHTS_OUT_4AM)
    request: dict[str, Any] = {"model": "m", "messages": MESSAGES, "max_tokens": 64}

    refused = _sdk(proxy, "anything").chat.completions.with_raw_response.create(**request)
    assert refused.headers["X-Curfew-State"] == "lights-out"
    assert refused.headers["X-Curfew-Action"] == "short-circuit"
    completion = refused.parse()
    assert completion.choices[0].message.content == "明天再说。"
    assert completion.usage is not None
    assert completion.usage.total_tokens == 0
    assert upstream.chat_requests == []  # nothing went upstream

    # The control: the same instant, session and body, a listed purpose.
    listed = _sdk(proxy, "Title").chat.completions.with_raw_response.create(**request)
    assert listed.headers["X-Curfew-State"] == "lights-out"
    assert listed.headers["X-Curfew-Action"] == "pass"
    [sent] = upstream.chat_requests
    assert sent.json == request
