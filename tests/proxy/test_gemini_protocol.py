"""The wire protocols' declarations (issue 43), Gemini's shapes, and why a new
protocol needs no migration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from curfew_client import gemini_shapes
from django.core.management import call_command

from curfew_core import protocols
from curfew_core.edge import dialects
from curfew_core.ledger import entry
from curfew_core.models import Decision
from curfew_core.proxy import calls, passing
from curfew_core.proxy.usage import UsageScan, asked_budget


@dataclass
class Verdict:
    max_tokens: int | None = None
    persona: str | None = None
    tools: str = "allow"
    reasoning_effort: str | None = None


BODY: dict[str, Any] = {
    "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    "generationConfig": {"maxOutputTokens": 4096, "topK": 3},
    "tools": [{"functionDeclarations": []}],
    "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
}


def test_every_protocol_has_its_own_name_and_origins_that_fit_the_column() -> None:
    names = [protocol.name for protocol in protocols.ALL]
    origins = [origin for protocol in protocols.ALL for origin in protocol.origins]
    assert len(set(names)) == len(names) == 3
    assert len(set(origins)) == len(origins)
    column = Decision._meta.get_field("origin")
    assert all(len(origin) <= column.max_length for origin in entry.ORIGINS)  # type: ignore[operator]
    assert set(origins) | {"verdict", "gateway"} == set(entry.ORIGINS)
    assert [value for value, _ in column.choices] == list(entry.ORIGINS)  # type: ignore[union-attr]


@pytest.mark.django_db
def test_a_new_protocols_origin_needs_no_migration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entry, "ORIGINS", (*entry.ORIGINS, "bard"))
    assert ("bard", "bard") in Decision._meta.get_field("origin").choices  # type: ignore[operator]
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # no SystemExit


@pytest.mark.django_db
def test_control_choices_written_out_would_need_one(monkeypatch: pytest.MonkeyPatch) -> None:
    field = Decision._meta.get_field("origin")
    monkeypatch.setattr(field, "choices", [(origin, origin) for origin in entry.ORIGINS])
    with pytest.raises(SystemExit):
        call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_model_dialects_come_from_their_protocols() -> None:
    gemini = dialects.of(protocols.gemini.GEMINI)
    refusal = gemini.unauthorized(None)
    assert refusal.status_code == 401
    assert refusal["X-Curfew-Action"] == "none"  # labelled, as every model door's answer
    assert b'"status": "UNAUTHENTICATED"' in refusal.content
    assert gemini.too_large(64 * 2**20).status_code == 413
    assert b"at most 64 MB" in gemini.too_large(64 * 2**20).content
    assert dialects.OPENAI.protocol is protocols.openai.OPENAI
    assert dialects.API.protocol is None


def test_every_protocols_credential_header_stays_here() -> None:
    sent = [
        (b"x-goog-api-key", b"cfw_token"),
        (b"x-api-key", b"cfw_token"),
        (b"authorization", b"Bearer cfw_token"),
        (b"x-goog-api-client", b"genai-py"),
    ]
    assert passing.headers(sent) == [("x-goog-api-client", "genai-py")]
    assert passing.query(b"alt=sse&key=cfw_token", frozenset({"key"})) == "alt=sse"
    assert passing.query(b"key=cfw_token&alt=sse") == "key=cfw_token&alt=sse"  # the control


def test_geminis_query_key_is_read_as_the_token_and_declared_once() -> None:
    """``?key=<curfew token>`` (Google's REST examples) is where a Gemini client
    may put its token: read as the door's token when no header holds one, and
    the very name ``passing`` drops (one declaration, ``QUERY_KEY``)."""
    gemini = protocols.gemini.GEMINI
    assert gemini.query_credentials == frozenset({protocols.gemini.QUERY_KEY}) == {"key"}
    assert gemini.query_token(b"alt=sse&key=cfw_token") == "cfw_token"
    assert gemini.query_token(b"key=cfw_a%2Db&alt=sse") == "cfw_a-b"  # percent-decoded
    assert gemini.query_token(b"key=&key=cfw_second") == "cfw_second"  # the first not blank
    assert gemini.query_token(b"key=%20&alt=sse") is None
    assert gemini.query_token(b"alt=sse&apikey=cfw_token") is None
    assert gemini.query_token(b"") is None
    query = b"alt=sse&key=cfw_token"
    assert passing.query(query, gemini.query_credentials) == "alt=sse"
    # The other protocols' clients never put a key in the query: none is read there.
    assert protocols.openai.OPENAI.query_token(query) is None
    assert protocols.anthropic.ANTHROPIC.query_token(query) is None


def test_geminis_budget_and_usage_names() -> None:
    gemini = protocols.gemini.GEMINI
    assert asked_budget(BODY, gemini.budgets) == 4096
    assert asked_budget(BODY) is None  # OpenAI's names find nothing in it
    scan = UsageScan(sse=True, names=gemini.usage)
    scan.feed(b'data: {"usageMetadata": {"promptTokenCount": 3}}\r\n\r\n')
    scan.feed(b'data: {"usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 9}}\n\n')
    assert scan.tokens == (3, 9)
    whole = UsageScan(sse=False, names=gemini.usage)
    whole.feed(b'[{"x": 1, "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 4}}]')
    assert whole.tokens == (2, 4)


def test_the_clamp_is_a_min_never_a_raise() -> None:
    clamped = gemini_shapes.apply_verdict(BODY, Verdict(max_tokens=100))
    assert clamped["generationConfig"] == {"maxOutputTokens": 100, "topK": 3}
    assert BODY["generationConfig"]["maxOutputTokens"] == 4096  # not modified
    low = {**BODY, "generationConfig": {"maxOutputTokens": 50}}
    assert gemini_shapes.apply_verdict(low, Verdict(max_tokens=100))["generationConfig"] == {
        "maxOutputTokens": 50
    }
    none = {"contents": BODY["contents"]}
    assert gemini_shapes.apply_verdict(none, Verdict(max_tokens=100))["generationConfig"] == {
        "maxOutputTokens": 100
    }
    assert gemini_shapes.apply_verdict(BODY, Verdict()) == BODY


def _thinking(**config: Any) -> dict[str, Any]:
    return {
        **BODY,
        "generationConfig": {
            "maxOutputTokens": 4096,
            "thinkingConfig": {**config, "includeThoughts": True},
        },
    }


def _sent(body: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    """The body the Gemini door sends upstream for ``verdict`` (its endpoint's
    clamp is the client's shape, ``gemini_shapes.GeminiCall``)."""
    shape = gemini_shapes.GeminiCall("gemini-3-pro-preview")
    endpoint = calls.ModelEndpoint(
        name="gemini",
        what="",
        path=(),
        shapes=shape,
        protocol=protocols.gemini.GEMINI,
    )
    return endpoint.shapes.apply_verdict(body, verdict)


#: ``(thinkingConfig sent, verdict, thinkingConfig forwarded)``: the one rule,
#: the proxy's and a gateway's (``gemini_shapes.apply_verdict``) alike.
THINKING_CASES: list[tuple[dict[str, Any], Verdict, dict[str, Any]]] = [
    ({"thinkingBudget": 24576}, Verdict(max_tokens=100), {"thinkingBudget": 100}),
    ({"thinkingBudget": -1}, Verdict(max_tokens=100), {"thinkingBudget": 100}),
    ({"thinkingBudget": 0}, Verdict(max_tokens=100), {"thinkingBudget": 0}),
    ({"thinkingBudget": 60}, Verdict(max_tokens=100), {"thinkingBudget": 60}),
    ({"thinkingBudget": 2048.0}, Verdict(max_tokens=100), {"thinkingBudget": 100}),
    ({"thinkingBudget": "lots"}, Verdict(max_tokens=100), {"thinkingBudget": "lots"}),
    ({"thinkingBudget": True}, Verdict(max_tokens=100), {"thinkingBudget": True}),
    ({"thinkingBudget": -1}, Verdict(persona="late"), {"thinkingBudget": -1}),
    ({"thinkingLevel": "high"}, Verdict(reasoning_effort="low"), {"thinkingLevel": "low"}),
    ({"thinkingLevel": "HIGH"}, Verdict(reasoning_effort="medium"), {"thinkingLevel": "LOW"}),
    ({"thinkingLevel": "low"}, Verdict(reasoning_effort="minimal"), {"thinkingLevel": "low"}),
    ({"thinkingLevel": "minimal"}, Verdict(reasoning_effort="low"), {"thinkingLevel": "minimal"}),
    ({"thinkingLevel": "high"}, Verdict(reasoning_effort="high"), {"thinkingLevel": "high"}),
    ({"thinkingLevel": "high"}, Verdict(max_tokens=100), {"thinkingLevel": "high"}),
    (
        {"thinkingBudget": -1, "thinkingLevel": "high"},
        Verdict(max_tokens=100, reasoning_effort="low"),
        {"thinkingBudget": 100, "thinkingLevel": "low"},
    ),
]


@pytest.mark.parametrize(("asked", "verdict", "sent"), THINKING_CASES)
def test_the_door_and_a_gateway_think_within_the_verdict_alike(
    asked: dict[str, Any], verdict: Verdict, sent: dict[str, Any]
) -> None:
    """The thinking budget: at most the reply budget (``-1``, dynamic, becomes
    it; ``0`` stays off; never raised); Gemini 3's level: ``low`` when above
    the reasoning effort, never raised. The door and a gateway in front of
    Gemini clients send the same body."""
    body = _thinking(**asked)
    door = _sent(body, verdict)
    assert door["generationConfig"]["thinkingConfig"] == {**sent, "includeThoughts": True}
    assert door == gemini_shapes.apply_verdict(body, verdict)
    assert body == _thinking(**asked)  # not modified


def test_no_thinking_is_added_and_without_a_verdict_none_is_changed() -> None:
    # A model that cannot think refuses a thinkingConfig: none is added.
    out = _sent(BODY, Verdict(max_tokens=100, reasoning_effort="low"))
    assert "thinkingConfig" not in out["generationConfig"]
    # On duty (nothing set): the body as sent, thinking and all.
    for body in (_thinking(thinkingBudget=-1), _thinking(thinkingLevel="high")):
        assert _sent(body, Verdict()) == body
    assert _sent(_thinking(thinkingBudget=24576), Verdict(persona="late")) == {
        **_thinking(thinkingBudget=24576),
        "systemInstruction": {"parts": [{"text": "late"}]},
    }
    odd = {**BODY, "generationConfig": {"thinkingConfig": "high"}}
    assert _sent(odd, Verdict(max_tokens=100))["generationConfig"]["thinkingConfig"] == "high"


def test_persona_and_denied_tools() -> None:
    out = gemini_shapes.apply_verdict(
        {**BODY, "systemInstruction": {"parts": [{"text": "be brief"}]}},
        Verdict(persona="It is late.", tools="deny"),
    )
    assert out["systemInstruction"] == {"parts": [{"text": "be brief"}, {"text": "It is late."}]}
    assert "tools" not in out
    assert "toolConfig" not in out


@pytest.mark.parametrize(
    ("status", "name"),
    [(400, "INVALID_ARGUMENT"), (429, "RESOURCE_EXHAUSTED"), (418, "FAILED_PRECONDITION")],
)
def test_geminis_error_status(status: int, name: str) -> None:
    assert gemini_shapes.error_body(status, "m") == {
        "error": {"code": status, "message": "m", "status": name}
    }
