"""Off duty, a LiteLLM ``vertex_ai/`` deployment sends nothing either: not the
prompt, and not the OAuth token request Google's credentials make before a
call (a service-account JWT POSTed to its ``token_uri``, or Application
Default Credentials doing the same, or asking the metadata server).

The real LiteLLM proxy, with the curfew callback, in front of two recording
fakes: Vertex AI's model endpoint (the deployments' ``api_base``) and Google's
token endpoint (the ``token_uri`` of a service account made here with a
throwaway RSA key). One deployment names that account in ``vertex_credentials``,
the other finds it by Application Default Credentials
(``GOOGLE_APPLICATION_CREDENTIALS``). The metadata server's address is the
token fake too, so a lookup there would be recorded; nothing can reach Google.
The fake token endpoint's tokens expire at once, so every call that needs
credentials asks for a new one: no test's token is cached for the next.

Off duty, every call type the callback answers gets Curfew's answer, and
neither fake records anything. The control: on duty the same calls reach the
token endpoint and the model. (Before the fix an off-duty
``:streamGenerateContent`` was answered in process but LiteLLM's Vertex
handler refreshed the credentials first: ``VertexBase.get_access_token_async``
from ``VertexAIGoogleGenAIConfig.get_auth_token_and_url``, after the deployment
hook.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("litellm", reason="LiteLLM is not installed (requirements/dev.txt has it)")

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from curfew_testkit.fake_gemini import FakeGemini
from curfew_testkit.fake_upstream import Recorded, read_body, recorded
from curfew_testkit.local_http import LocalHttpServer, QuietHandler
from curfew_testkit.server import ROOT, ServedApp, free_port, wait_for_http
from tests.litellm.conftest import MASTER_KEY, OFF_DUTY, ON_DUTY, Curfew

GEMINI = "gemini-2.5-flash"
#: The deployment whose credentials are a service account's JSON, and the one
#: that finds the same account by Application Default Credentials.
SERVICE_ACCOUNT = "vertex-sa"
ADC = "vertex-adc"
DEPLOYMENTS = (SERVICE_ACCOUNT, ADC)
PROJECT = "curfew-test"
LOCATION = "us-central1"
CONTENTS = [{"role": "user", "parts": [{"text": "hi"}]}]
MESSAGES = [{"role": "user", "content": "hi"}]


class FakeGoogleAuth(LocalHttpServer):
    """Google's OAuth token endpoint (and, as ``GCE_METADATA_HOST``, its
    metadata server): records every request; a token POST gets a token that
    has already expired, so the next call that needs one asks again."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        fake = self

        class Handler(QuietHandler):
            def _answer(self, status: int, body: dict[str, Any]) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                fake.requests.append(recorded("POST", self, read_body(self)))
                if self.path.startswith("/token"):
                    token = {"access_token": "ya29.fake", "expires_in": 0, "token_type": "Bearer"}
                    self._answer(200, token)
                else:
                    self._answer(404, {"error": "not_found"})

            def do_GET(self) -> None:  # a metadata server lookup: not on GCE
                fake.requests.append(recorded("GET", self))
                self._answer(404, {"error": "not_found"})

        super().__init__(Handler)

    def token_posts(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "POST" and r.path.startswith("/token")]


def service_account(token_uri: str) -> dict[str, str]:
    """A service account's JSON key, with a throwaway RSA key: google-auth
    signs a JWT with it and POSTs it to ``token_uri``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "curfew-test-key",
        "private_key": pem,
        "client_email": f"curfew@{PROJECT}.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    }


def config_yaml(vertex: str, credentials: Path) -> str:
    return textwrap.dedent(
        f"""\
        model_list:
          - model_name: {SERVICE_ACCOUNT}
            litellm_params:
              model: vertex_ai/{GEMINI}
              vertex_project: {PROJECT}
              vertex_location: {LOCATION}
              vertex_credentials: {credentials}
              api_base: {vertex}
          - model_name: {ADC}
            litellm_params:
              model: vertex_ai/{GEMINI}
              vertex_project: {PROJECT}
              vertex_location: {LOCATION}
              api_base: {vertex}
        router_settings:
          disable_cooldowns: true
        litellm_settings:
          callbacks: ["curfew_client.litellm_hook.curfew"]
        """
    )


@dataclass
class VertexProxy:
    base_url: str
    curfew: Curfew
    vertex: FakeGemini
    google: FakeGoogleAuth
    log_path: Path

    def reset(self) -> None:
        self.vertex.requests.clear()
        self.google.requests.clear()


@pytest.fixture(scope="module")
def vertex_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VertexProxy]:
    workdir = Path(tmp_path_factory.mktemp("litellm-vertex"))
    vertex = FakeGemini().start()
    google = FakeGoogleAuth().start()
    credentials = workdir / "service-account.json"
    credentials.write_text(json.dumps(service_account(f"{google.base_url}/token")))
    app = ServedApp(workdir, env={"CURFEW_MANIFEST_STATIC": "0"})
    app.manage("migrate", "--no-input", "-v0")
    token = app.create_user("litellm-vertex")
    config = workdir / "config.yaml"
    config.write_text(config_yaml(vertex.base_url, credentials), encoding="utf-8")
    port = free_port()
    log_path = workdir / "litellm.log"
    metadata = google.base_url.removeprefix("http://")
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "CURFEW_URL": app.base_url,
        "CURFEW_TOKEN": token,
        "CURFEW_POLICY": "fail_open",
        # Application Default Credentials: the same account, found by its file.
        "GOOGLE_APPLICATION_CREDENTIALS": str(credentials),
        # No Google at all: the metadata server is the recording fake, and
        # gcloud's own credentials are looked for in an empty directory.
        "GCE_METADATA_HOST": metadata,
        "GCE_METADATA_IP": metadata,
        "CLOUDSDK_CONFIG": str(workdir / "gcloud"),
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "client" / "src"), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "GOOGLE_CLOUD_PROJECT"):
        env.pop(name, None)
    litellm_bin = Path(sys.executable).with_name("litellm")
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [str(litellm_bin), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        app.start()
        base_url = f"http://127.0.0.1:{port}"
        wait_for_http(
            f"{base_url}/health/liveliness", process, log_path, timeout=90, label="litellm"
        )
        yield VertexProxy(base_url, Curfew(app, token), vertex, google, log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        app.stop()
        vertex.stop()
        google.stop()


@pytest.fixture
def proxy(vertex_proxy: VertexProxy) -> VertexProxy:
    vertex_proxy.reset()
    return vertex_proxy


def scope() -> dict[str, str]:
    return {
        "Authorization": f"Bearer {MASTER_KEY}",
        "X-Curfew-Session": f"litellm-vertex-{uuid.uuid4().hex[:12]}",
    }


def post(proxy: VertexProxy, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{proxy.base_url}{path}", json=body, headers=scope(), timeout=60)


def chat(proxy: VertexProxy, model: str, *, stream: bool = False) -> httpx.Response:
    return post(
        proxy, "/v1/chat/completions", {"model": model, "messages": MESSAGES, "stream": stream}
    )


def generate(proxy: VertexProxy, model: str) -> httpx.Response:
    return post(proxy, f"/v1beta/models/{model}:generateContent", {"contents": CONTENTS})


def stream_generate(proxy: VertexProxy, model: str) -> httpx.Response:
    return post(
        proxy, f"/v1beta/models/{model}:streamGenerateContent?alt=sse", {"contents": CONTENTS}
    )


def messages(proxy: VertexProxy, model: str) -> httpx.Response:
    return post(proxy, "/v1/messages", {"model": model, "max_tokens": 100, "messages": MESSAGES})


def gemini_text(response: httpx.Response) -> str:
    """The reply of a Gemini answer, an object or an event stream of them."""
    if response.headers["content-type"].startswith("text/event-stream"):
        found = [
            json.loads(line.removeprefix("data: "))
            for line in response.text.splitlines()
            if line.startswith("data: ")
        ]
    else:
        found = [response.json()]
    return "".join(
        part.get("text", "")
        for event in found
        for candidate in event.get("candidates", [])
        for part in candidate.get("content", {}).get("parts", [])
    )


def errors(proxy: VertexProxy, offset: int) -> list[str]:
    """LiteLLM's ERROR lines and tracebacks since ``offset`` of its log (read
    once its log has settled: it logs a call after answering it)."""
    time.sleep(0.5)
    with open(proxy.log_path, "rb") as log:
        log.seek(offset)
        text = log.read().decode("utf-8", "replace")
    return [line for line in text.splitlines() if "ERROR" in line or "Traceback" in line]


def sent_nothing(proxy: VertexProxy) -> None:
    assert proxy.google.requests == [], [(r.method, r.path) for r in proxy.google.requests]
    assert proxy.vertex.requests == [], [r.path for r in proxy.vertex.requests]


@pytest.mark.parametrize("model", DEPLOYMENTS)
def test_an_off_duty_vertex_gemini_stream_asks_google_for_nothing(
    proxy: VertexProxy, model: str
) -> None:
    proxy.curfew.travel(OFF_DUTY)
    reply = proxy.curfew.verdict()["reply"]
    offset = proxy.log_path.stat().st_size
    response = stream_generate(proxy, model)
    assert response.status_code == 200, response.text
    assert response.headers["x-curfew-state"] == "off-duty"
    assert response.headers["x-curfew-action"] == "short-circuit"
    assert gemini_text(response) == reply
    # No token request (no JWT to the token_uri, no metadata lookup), no prompt.
    sent_nothing(proxy)
    # LiteLLM logs it as it logs a gemini/ one: a success, no ERROR.
    assert errors(proxy, offset) == []


@pytest.mark.parametrize("model", DEPLOYMENTS)
def test_every_off_duty_vertex_call_is_answered_without_credentials(
    proxy: VertexProxy, model: str
) -> None:
    proxy.curfew.travel(OFF_DUTY)
    reply = proxy.curfew.verdict()["reply"]
    answered = chat(proxy, model)
    assert answered.status_code == 200, answered.text
    assert answered.json()["choices"][0]["message"]["content"] == reply
    streamed = chat(proxy, model, stream=True)
    assert streamed.status_code == 200, streamed.text
    assert reply.strip() in "".join(
        json.loads(line.removeprefix("data: "))["choices"][0]["delta"].get("content") or ""
        for line in streamed.text.splitlines()
        if line.startswith("data: {")
    )
    generated = generate(proxy, model)
    assert generated.status_code == 200, generated.text
    assert gemini_text(generated) == reply
    message = messages(proxy, model)
    assert message.status_code == 200, message.text
    assert message.json()["content"][0]["text"] == reply
    for response in (answered, streamed, generated, message):
        assert response.headers["x-curfew-state"] == "off-duty"
        assert response.headers["x-curfew-action"] == "short-circuit"
    sent_nothing(proxy)


@pytest.mark.parametrize("model", DEPLOYMENTS)
def test_on_duty_the_same_calls_reach_the_token_endpoint_and_the_model(
    proxy: VertexProxy, model: str
) -> None:
    """The control: the fakes are really where these deployments go."""
    proxy.curfew.travel(ON_DUTY)
    streamed = stream_generate(proxy, model)
    assert streamed.status_code == 200, streamed.text
    assert streamed.headers["x-curfew-state"] == "on-duty"
    assert gemini_text(streamed) == "Hello there"
    assert proxy.google.token_posts()
    (post_,) = proxy.vertex.model_posts()
    path = post_.path.partition("?")[0]
    where = f"/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/{GEMINI}"
    assert path.endswith(f"{where}:streamGenerateContent")
    assert {k.lower(): v for k, v in post_.headers.items()}["authorization"] == "Bearer ya29.fake"
    proxy.reset()
    answered = chat(proxy, model)
    assert answered.status_code == 200, answered.text
    assert answered.json()["choices"][0]["message"]["content"] == "Hello there"
    assert proxy.google.token_posts()
    assert len(proxy.vertex.model_posts()) == 1


# -- in process: what the deployment hook hands LiteLLM needs no credentials -------


@pytest.fixture
def google(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeGoogleAuth]:
    """The recording token endpoint (and metadata server) for LiteLLM in this process."""
    fake = FakeGoogleAuth().start()
    metadata = fake.base_url.removeprefix("http://")
    monkeypatch.setenv("GCE_METADATA_HOST", metadata)
    monkeypatch.setenv("GCE_METADATA_IP", metadata)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    try:
        yield fake
    finally:
        fake.stop()


async def test_an_off_duty_vertex_stream_is_handed_to_litellm_as_a_call_needing_no_token(
    google: FakeGoogleAuth,
) -> None:
    """LiteLLM's own Gemini stream route, given the kwargs the deployment hook
    hands it for a ``vertex_ai/`` deployment: answered by the hook's client,
    with no token request. (Given the same kwargs as a ``vertex_ai/`` call, as
    before, LiteLLM POSTs the signed JWT to the ``token_uri`` first.)"""
    from curfew_client import litellm_hook as hook_module
    from litellm.google_genai import agenerate_content_stream

    from tests.litellm.test_litellm_hook import Curfew as ScriptedCurfew
    from tests.litellm.test_litellm_hook import call, gemini, routed, verdict

    hook = ScriptedCurfew(verdict("off-duty", reply="明天见。")).hook()
    data = await call(hook, gemini(stream=True), "agenerate_content_stream")
    deployment = {
        "model": f"vertex_ai/{GEMINI}",
        "custom_llm_provider": "vertex_ai",
        "vertex_credentials": json.dumps(service_account(f"{google.base_url}/token")),
        "vertex_project": PROJECT,
        "vertex_location": LOCATION,
        "api_base": "http://127.0.0.1:9",
        "contents": CONTENTS,
    }
    kwargs = await hook.async_pre_call_deployment_hook(routed(data, **deployment), None)
    assert kwargs is not None
    assert kwargs["model"] == f"gemini/{GEMINI}"
    assert kwargs["custom_llm_provider"] == "gemini"
    assert kwargs["api_base"] == hook_module.NOWHERE
    # LiteLLM's own call, without the test's stand-in logging object.
    sent = {k: v for k, v in kwargs.items() if k not in ("litellm_logging_obj", "litellm_call_id")}
    stream = await agenerate_content_stream(**sent)
    chunks = [chunk async for chunk in stream]
    text = b"".join(c if isinstance(c, bytes) else str(c).encode() for c in chunks)
    assert "明天见。".encode() in text
    assert google.requests == [], [(r.method, r.path) for r in google.requests]


# -- any deployment: an off-duty Gemini stream is a gemini/ call to nowhere ---------


def test_an_off_duty_gemini_stream_through_an_openai_deployment_is_answered(
    litellm_proxy: Any,
) -> None:
    """The hook makes every off-duty stream a ``gemini/`` call, whatever its
    deployment: through an ``openai/`` one (LiteLLM's adapter would make it a
    chat call to the nowhere address, and fail) it is Curfew's answer too,
    and the OpenAI-shaped fake is sent nothing."""
    from tests.litellm.conftest import MODEL

    proxy = litellm_proxy
    proxy.upstream.reset()
    proxy.gemini.requests.clear()
    proxy.curfew.travel(OFF_DUTY)
    reply = proxy.curfew.verdict()["reply"]
    response = httpx.post(
        f"{proxy.base_url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
        json={"contents": CONTENTS},
        headers=scope(),
        timeout=60,
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-curfew-state"] == "off-duty"
    assert gemini_text(response) == reply
    assert proxy.upstream.requests == []
    assert proxy.gemini.requests == []
