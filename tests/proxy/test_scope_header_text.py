"""The proxy reads ``X-Curfew-*`` scope headers as the text their client
wrote, UTF-8, as the verdict API reads its JSON (issue 41, finding 7): a
session id is the same id at both doors, its length counts characters at
both, and an exempt session written with non-ASCII letters is exempt
through the proxy too (read as latin-1 bytes, it never matched)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create
from curfew_testkit.asgi_client import Client
from tests.api.conftest import FrozenClock, clock
from tests.teams.test_team_key_doors import CHAT, TEAM_NIGHT

SESSION = "会话-1"
EMOJI_200 = "🌙" * 200

__all__ = ["clock"]


def _wire(text: str) -> str:
    """``text`` as its UTF-8 bytes on the wire (the test client sends latin-1)."""
    return text.encode().decode("latin-1")


@pytest.fixture
def token(transactional_db: None, clock: FrozenClock) -> Iterator[str]:
    """A user at lights-out (the clock reads 20:00) whose session ``SESSION`` is exempt."""
    user = User.objects.create_user("ada")
    schedule_update(user=user, changes={**TEAM_NIGHT, "exempt_sessions": [SESSION]}, source="test")
    # Nothing listens here: a call sent upstream is a 502, a short-circuit never is.
    with override_settings(CURFEW_UPSTREAM_BASE_URL="http://127.0.0.1:9/v1"):
        yield token_create(user=user)[1]


def _chat(token: str, **headers: str) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", **headers)
    return client.post("/v1/chat/completions", CHAT, content_type="application/json")


def _verdict(token: str, session: str) -> Any:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client.post("/api/v1/verdict", {"session_id": session}, content_type="application/json")


def test_an_exempt_session_in_utf8_is_exempt_at_both_doors(token: str) -> None:
    assert _verdict(token, SESSION).json()["exempt"] is True
    exempt = _chat(token, HTTP_X_CURFEW_SESSION=_wire(SESSION))
    assert exempt.status_code == 502, "exempt: sent upstream (where nothing listens)"
    # The control group: another session is put to sleep, not sent.
    other = _chat(token, HTTP_X_CURFEW_SESSION=_wire("会话-2"))
    assert other.status_code == 200
    assert other["X-Curfew-State"] == "lights-out"


def test_a_session_id_is_measured_in_characters_at_both_doors(token: str) -> None:
    assert _verdict(token, EMOJI_200).status_code == 200
    assert _chat(token, HTTP_X_CURFEW_SESSION=_wire(EMOJI_200)).status_code == 200
    assert _verdict(token, EMOJI_200 + "🌙").status_code in (400, 422)
    longer = _chat(token, HTTP_X_CURFEW_SESSION=_wire(EMOJI_200 + "🌙"))
    assert longer.status_code == 400
    assert "X-Curfew-Session" in longer.json()["error"]["message"]


def test_a_header_that_is_no_utf8_is_a_400_naming_it(token: str) -> None:
    answer = _chat(token, HTTP_X_CURFEW_SESSION="caf\xe9")  # one latin-1 byte, no UTF-8
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["param"] == "X-Curfew-Session"
    assert "UTF-8" in error["message"]
