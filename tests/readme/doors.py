"""Every door of a served Curfew, driven as its own clients drive it.

One set of checks for every way the app is served: ``make run``
(``test_make_run.py``), ``bin/serve`` (``test_bin_serve.py``) and another
conformant ASGI server (``test_any_server.py``). ``drive_every_door`` runs them
all and fails once, naming every door that failed and how, so one server
start shows the whole picture.

The model doors are driven off duty only (the user's time machine at a peak
hour, set through the API), so the curfew answers them itself and nothing is
sent upstream: each check first reads the state the override answered with,
and never calls a model door unless it is off duty.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
import pytest
from websockets.sync.client import connect

from curfew_testkit.server import ServedApp

#: A Tuesday at 10:00 in Shanghai: peak hours, off duty on the default schedule.
OFF_DUTY_MOMENT = "2026-09-29 10:00"
#: The next night after it, past lights-out.
LIGHTS_OUT_MOMENT = "2026-09-30 03:10"
#: When the morning peak of OFF_DUTY_MOMENT ends (the default peak hours).
OFF_DUTY_UNTIL = "12:00"
MODEL = "deepseek-chat"
MESSAGES = [{"role": "user", "content": "hi"}]
STATES = {"on-duty", "winding", "off-duty", "lights-out"}


@dataclass(frozen=True)
class Served:
    """A running Curfew as a client sees it."""

    base_url: str
    #: An API token (gateway key) and a read-only embed token of one user.
    token: str
    embed_token: str
    #: What every request carries besides: ``X-Forwarded-Proto: https`` in front
    #: of ``bin/serve``, as its TLS-terminating balancer would add.
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, app: ServedApp, username: str = "readme") -> Served:
        """A served app as a new user of it sees it: their API token and
        embed token, and the headers its balancer would add."""
        token = app.create_user(username)
        embed = app.manage("curfew", "embed-token", "--user", username).stdout.split()[-1]
        return cls(app.base_url, token, embed, app.client_headers)

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers={**self.headers, **headers}, timeout=20)

    def api(self, method: str, path: str, body: Any = None) -> Any:
        with self.client(Authorization=f"Bearer {self.token}") as http:
            response = http.request(method, f"/api/v1/{path}", json=body)
        assert response.status_code == 200, (method, path, response.status_code, response.text)
        return response.json()

    def pretend(self, moment: str, state: str) -> dict[str, Any]:
        """The user's time machine at ``moment`` (through the API, so the server
        drops its cache at once); its answer must be ``state``."""
        answered = self.api("POST", "overrides", {"debug": moment})
        assert answered["state"] == state, answered
        return dict(answered)

    def off_duty(self) -> str:
        """Off duty, checked: after this a model door is answered by the curfew,
        with the reply returned: the user's own off-duty reply as their schedule
        words it, its ``{until}`` the peak's end (an account ``make run``'s demo
        or a sign-up made says "Curfew: peak hours until 12:00."; one made
        directly keeps the terse default)."""
        self.pretend(OFF_DUTY_MOMENT, "off-duty")
        template: str = self.api("GET", "schedule")["off_duty_reply"]
        return template.replace("{until}", OFF_DUTY_UNTIL)

    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=f"{self.base_url}/v1",
            api_key=self.token,
            default_headers=self.headers,
            max_retries=0,
            timeout=20,
        )

    def anthropic(self) -> anthropic.Anthropic:
        # The SDK adds /v1/messages to the base URL itself: the server's root.
        return anthropic.Anthropic(
            base_url=self.base_url,
            api_key=self.token,
            default_headers=self.headers,
            max_retries=0,
            timeout=20,
        )


def short_circuited(headers: Any) -> None:
    assert headers["X-Curfew-State"] == "off-duty", dict(headers)
    assert headers["X-Curfew-Action"] == "short-circuit", dict(headers)


# -- the API ----------------------------------------------------------------------------


def verdict(served: Served) -> None:
    """The README's verdict request (an explicit ``at`` ignores any override)."""
    body = {"session_id": "chat-42", "max_tokens": 4096, "at": "2026-09-29T23:30:00+08:00"}
    answer = served.api("POST", "verdict", body)
    assert (answer["state"], answer["action"]) == ("winding", "clamp"), answer
    assert 0 < answer["max_tokens"] < 4096, answer


def state(served: Served) -> None:
    expected = served.off_duty()
    answer = served.api("GET", "state")
    assert answer["state"] == "off-duty", answer
    assert answer["reply"] == expected, answer
    assert answer["debug_at"] is not None, answer


# -- the proxy's doors, off duty --------------------------------------------------------


def chat_completions(served: Served) -> None:
    expected = served.off_duty()
    client = served.openai()
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)
    short_circuited(raw.headers)
    reply = raw.parse()
    assert reply.choices[0].message.content == expected, reply
    assert reply.usage is not None
    assert reply.usage.total_tokens == 0, reply.usage
    stream = client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == expected


def completions(served: Served) -> None:
    expected = served.off_duty()
    client = served.openai()
    raw = client.completions.with_raw_response.create(model=MODEL, prompt="hi")
    short_circuited(raw.headers)
    assert raw.parse().choices[0].text == expected
    stream = client.completions.create(model=MODEL, prompt="hi", stream=True)
    assert "".join(c.choices[0].text for c in stream if c.choices) == expected


def responses(served: Served) -> None:
    expected = served.off_duty()
    client = served.openai()
    raw = client.responses.with_raw_response.create(model=MODEL, input="hi")
    short_circuited(raw.headers)
    assert raw.parse().output_text == expected
    stream = client.responses.create(model=MODEL, input="hi", stream=True)
    deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
    assert "".join(deltas) == expected


def messages(served: Served) -> None:
    expected = served.off_duty()
    client = served.anthropic()
    raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=1024, messages=MESSAGES)
    short_circuited(raw.headers)
    message = raw.parse()
    assert [b.text for b in message.content if b.type == "text"] == [expected], message
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=MESSAGES) as stream:
        assert stream.get_final_text() == expected


def embeddings(served: Served) -> None:
    """No canned vector: off duty the door refuses, 503 ``curfew_off_duty``."""
    served.off_duty()
    with pytest.raises(openai.InternalServerError) as refused:
        served.openai().embeddings.create(model="text-embedding-3-small", input="hi")
    error = refused.value
    assert (error.status_code, error.code) == (503, "curfew_off_duty"), error
    assert error.response.headers["X-Curfew-State"] == "off-duty"


# -- the site ---------------------------------------------------------------------------

ASSET = re.compile(r'<(?:link rel="stylesheet"[^>]*\shref|script[^>]*\ssrc)="([^"]+)"')
IMPORT = re.compile(r'@import\s+(?:url\()?["\']?([^"\')\s;]+)')


def sign_in(served: Served) -> None:
    """``/`` asks a stranger to sign in, on a page with our own stylesheet
    and scripts, served by this server (whitenoise; no CDN)."""
    with served.client() as http:
        page = http.get("/", follow_redirects=True)
        assert page.status_code == 200, (page.status_code, page.text[:500])
        assert page.headers["Content-Type"].startswith("text/html")
        assert urlsplit(str(page.url)).path == "/login/", page.url
        html = page.text
        assert 'name="username"' in html, html[:500]
        assert 'name="password"' in html, html[:500]
        assets = ASSET.findall(html)
        assert any(a.endswith(".css") for a in assets), assets
        assert all(a.startswith("/static/") for a in assets), assets
        seen: set[str] = set()
        while assets:
            path = assets.pop()
            if path in seen:
                continue
            seen.add(path)
            asset = http.get(path)
            assert asset.status_code == 200, (path, asset.status_code)
            kind = asset.headers["Content-Type"]
            if path.endswith(".css"):
                assert kind.startswith("text/css"), (path, kind)
                base = path.rsplit("/", 1)[0]
                assets += [f"{base}/{name}" for name in IMPORT.findall(asset.text)]
            else:
                assert "javascript" in kind, (path, kind)
        # The states' colours, imported by the page's stylesheet (hashed in production).
        assert any(re.search(r"/states(\.[0-9a-f]{12})?\.css$", p) for p in seen), seen


def capsule(served: Served) -> None:
    """The capsule's socket: the state on connect, then each change, pushed."""
    served.off_duty()
    base = urlsplit(served.base_url)
    url = f"ws://{base.netloc}/ws/capsule/?token={served.embed_token}"
    with connect(url, additional_headers=served.headers, open_timeout=10) as socket:
        first = json.loads(socket.recv(timeout=10))
        assert first["state"] == "off-duty", first
        assert set(first["names"]) == {"en", "zh"}, first  # the words it shows
        served.pretend(LIGHTS_OUT_MOMENT, "lights-out")
        pushed = json.loads(socket.recv(timeout=10))
        assert pushed["state"] == "lights-out", pushed


def secrets_everywhere(served: Served) -> None:
    """Tokens where a client may put them, right or wrong: query strings (a
    page, a token door, an unknown path, the capsule's socket, a bad token's
    socket), headers and bodies. What the server logs of them is checked by
    ``assert_no_secret_logged`` (issue 41: uvicorn logged every capsule
    socket's ``?token=`` at INFO)."""
    unknown = "cfw_" + "x" * 43
    with served.client() as http:
        for path in (
            f"/api/v1/state?token={served.token}",
            f"/embed/capsule/?token={served.embed_token}",
            f"/no/such/page?token={served.token}&key={served.token}",
            f"/api/v1/state?token={unknown}",
        ):
            http.get(path)
        http.post("/api/v1/verdict", headers={"Authorization": f"Bearer {unknown}"}, json={})
        http.post(
            "/api/v1/verdict",
            headers={"Authorization": f"Bearer {served.token}"},
            json={"token": served.token, "session_id": served.token},
        )
        http.post("/v1/chat/completions", headers={"X-Api-Key": served.token}, content=b"{")
        # A Gemini REST client's ``?key=`` (a broken body: nothing goes upstream).
        gemini = "/v1beta/models/gemini-2.0-flash:generateContent"
        http.post(f"{gemini}?alt=sse&key={served.token}", content=b"{")
        http.post(
            f"{gemini}?key={served.token}",
            headers={"x-goog-api-key": served.token},
            content=b"{",
        )
    base = urlsplit(served.base_url)
    for token in (served.embed_token, unknown, served.token):
        url = f"ws://{base.netloc}/ws/capsule/?token={token}"
        try:
            with connect(url, additional_headers=served.headers, open_timeout=10) as socket:
                socket.recv(timeout=10)
        except Exception:  # noqa: S110 - refused sockets are fine: only the log is checked
            pass


def assert_no_secret_logged(log: str, served: Served, *, allowed: tuple[str, ...] = ()) -> None:
    """No raw token of ``served`` in ``log``, outside the ``allowed`` lines
    (``make run`` prints its demo token on purpose, once)."""
    lines = [line for line in log.splitlines() if not (allowed and line.startswith(allowed))]
    for secret in (served.token, served.embed_token, served.token[4:], served.embed_token[4:]):
        leaked = [line for line in lines if secret in line]
        assert not leaked, f"a raw token in the server's log: {leaked[:3]}"
    assert "ws/capsule" in log or "WebSocket" in log, "the log under test has the socket lines"


DOORS: dict[str, Callable[[Served], None]] = {
    "POST /api/v1/verdict": verdict,
    "GET /api/v1/state": state,
    "POST /v1/chat/completions (openai)": chat_completions,
    "POST /v1/completions (openai)": completions,
    "POST /v1/responses (openai)": responses,
    "POST /v1/messages (anthropic)": messages,
    "POST /v1/embeddings (openai)": embeddings,
    "GET / (sign-in page)": sign_in,
    "WebSocket /ws/capsule/": capsule,
    "tokens in queries, headers and bodies": secrets_everywhere,
}


def drive_every_door(
    served: Served, also: dict[str, Callable[[Served], None]] | None = None
) -> None:
    """Every check in ``DOORS``, then those in ``also`` (what one way of serving
    adds); one failure naming each check that failed and how."""
    checks = {**DOORS, **(also or {})}
    failed: dict[str, str] = {}
    for name, check in checks.items():
        try:
            check(served)
        except (Exception, pytest.fail.Exception) as error:
            failed[name] = f"{type(error).__name__}: {error}"[:1000]
    assert not failed, f"{len(failed)} of {len(checks)} checks failed:\n" + "\n".join(
        f"- {name}: {problem}" for name, problem in failed.items()
    )
