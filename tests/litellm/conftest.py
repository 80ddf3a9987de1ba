"""The real LiteLLM proxy, with the curfew callback, in front of a recording
fake upstream, asking a real Curfew server. That server is also Curfew's own
proxy in front of the same upstream, the hook's measure in the parity tests.

One LiteLLM proxy for the whole package (it takes 10-30 s to start): each test
names its own session, and the callback follows the server's change stream, so
no test sees another's cached verdict. LiteLLM's price map is
read from its package (``LITELLM_LOCAL_MODEL_COST_MAP``): nothing here reaches
the internet.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from curfew_testkit.fake_gemini import FakeGemini
from curfew_testkit.fake_upstream import FakeUpstream
from curfew_testkit.server import ROOT, ServedApp, free_port, wait_for_http
from tests.conftest import IN_CI

# Before anything imports LiteLLM: else importing it fetches a price map from GitHub.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
if IN_CI and importlib.util.find_spec("litellm") is None:
    # The modules skip without LiteLLM; CI installs it (requirements/dev.txt), so there
    # a missing one is an error, never a silent skip.
    raise RuntimeError("LiteLLM is required in CI: install requirements/dev.txt")

MASTER_KEY = "sk-litellm-test-master-key-0123456789abcdef"
#: The key Curfew's own proxy sends upstream (the upstream does not check it).
UPSTREAM_KEY = "sk-upstream-fake"
MODEL = "fake-model"
EMBEDDING_MODEL = "fake-embed"
#: A Gemini deployment (LiteLLM's ``gemini/`` provider) in front of a fake Google.
GEMINI_MODEL = "gemini-2.5-flash"
#: A Tuesday in the user's time zone (Asia/Shanghai, the default).
OFF_DUTY = "2026-09-29 10:00"
LIGHTS_OUT = "2026-09-30 04:00"
WINDING = "2026-09-30 01:00"
ON_DUTY = "2026-09-29 20:00"


def config_yaml(upstream: str, gemini: str = "http://127.0.0.1:9") -> str:
    """The config the README shows, pointed at the fake upstream, plus a
    callback that records LiteLLM's own ledger."""
    return textwrap.dedent(
        f"""\
        model_list:
          - model_name: {MODEL}
            litellm_params:
              model: openai/{MODEL}
              api_base: {upstream}/v1
              api_key: sk-upstream-fake
          - model_name: {EMBEDDING_MODEL}
            litellm_params:
              model: openai/{EMBEDDING_MODEL}
              api_base: {upstream}/v1
              api_key: sk-upstream-fake
          - model_name: {GEMINI_MODEL}
            litellm_params:
              model: gemini/{GEMINI_MODEL}
              api_base: {gemini}
              api_key: AIza-fake-gemini-key
        router_settings:
          # A test that makes the fake fail must not bench the deployment for the next.
          disable_cooldowns: true
        litellm_settings:
          callbacks: ["curfew_client.litellm_hook.curfew", "tests.litellm.ledger.recorder"]
        """
    )


@dataclass
class Curfew:
    app: ServedApp
    token: str

    @property
    def proxy_url(self) -> str:
        """Curfew's own OpenAI-compatible proxy (the same user, the same upstream)."""
        return f"{self.app.base_url}/v1"

    def travel(self, moment: str) -> None:
        """The user's time machine (through the API, so the server's cache drops it)."""
        response = httpx.post(
            f"{self.app.base_url}/api/v1/overrides",
            json={"debug": moment},
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text

    def verdict(self, **body: object) -> dict[str, Any]:
        """What the server says now, asked directly (what the hook should act on)."""
        response = httpx.post(
            f"{self.app.base_url}/api/v1/verdict",
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer


@dataclass
class LiteLLMProxy:
    base_url: str
    upstream: FakeUpstream
    curfew: Curfew
    ledger_path: Path
    log_path: Path
    #: The Gemini deployment's upstream.
    gemini: FakeGemini

    def ledger(self, session: str, calls: int = 1) -> list[dict[str, Any]]:
        """What LiteLLM's own ledger recorded for the calls of ``session``
        (written after the answer: waits up to 10 s for ``calls`` entries)."""
        deadline = time.monotonic() + 10
        while True:
            lines = self.ledger_path.read_text(encoding="utf-8").splitlines()
            found = [entry for line in lines if (entry := json.loads(line))["session"] == session]
            if len(found) >= calls or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


@pytest.fixture(scope="package")
def litellm_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteLLMProxy]:
    workdir = Path(tmp_path_factory.mktemp("litellm"))
    upstream = FakeUpstream().start()
    gemini = FakeGemini().start()
    app = ServedApp(
        workdir,
        env={
            "CURFEW_MANIFEST_STATIC": "0",
            "CURFEW_UPSTREAM_BASE_URL": f"{upstream.base_url}/v1",
            "CURFEW_UPSTREAM_API_KEY": UPSTREAM_KEY,
        },
    )
    app.manage("migrate", "--no-input", "-v0")
    token = app.create_user("litellm-ada")
    config = workdir / "config.yaml"
    config.write_text(config_yaml(upstream.base_url, gemini.base_url), encoding="utf-8")
    port = free_port()
    log_path = workdir / "litellm.log"
    ledger = workdir / "ledger.jsonl"
    ledger.touch()
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "CURFEW_URL": app.base_url,
        "CURFEW_TOKEN": token,
        "CURFEW_POLICY": "fail_open",
        "CURFEW_TEST_LEDGER": str(ledger),
        # This checkout's client first (an installed copy may be another
        # checkout's), and the checkout itself for the ledger callback.
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "client" / "src"), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    # Curfew's own settings are not LiteLLM's: with DATABASE_URL set (as in CI)
    # LiteLLM would start its Prisma database layer, and REDIS_URL its cache.
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"):
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
        app.start()  # while LiteLLM starts
        base_url = f"http://127.0.0.1:{port}"
        wait_for_http(
            f"{base_url}/health/liveliness", process, log_path, timeout=90, label="litellm"
        )
        yield LiteLLMProxy(base_url, upstream, Curfew(app, token), ledger, log_path, gemini)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        app.stop()
        upstream.stop()
        gemini.stop()


@pytest.fixture
def proxy(litellm_proxy: LiteLLMProxy) -> LiteLLMProxy:
    """The module's proxy with an empty recorder."""
    litellm_proxy.upstream.reset()
    litellm_proxy.gemini.requests.clear()
    litellm_proxy.gemini.fail_with = None
    return litellm_proxy
