"""The control group (``python -m tests.clients.run --control``) goes past
Curfew for every tool: LiteLLM's proxy too, whose Curfew is its callback."""

from __future__ import annotations

import yaml

from curfew_core.web.integrations import tool_setups
from tests.clients import run


def config() -> str:
    return (
        tool_setups.setup("litellm")
        .snippet("config")
        .render(base_url="http://127.0.0.1:8000", token="cft_x", model=run.MODEL)
    )


def test_the_declared_config_asks_curfew() -> None:
    # The control of the control: without this callback the gateway never asks.
    loaded = yaml.safe_load(config())
    assert any("curfew_client" in c for c in loaded["litellm_settings"]["callbacks"])


def test_the_control_groups_litellm_has_no_curfew_callback() -> None:
    loaded = yaml.safe_load(run.without_curfew(config()))
    assert "curfew_client" not in run.without_curfew(config())
    assert "litellm_settings" not in loaded
    # The model list, the provider and its key stay as declared.
    assert loaded["model_list"] == yaml.safe_load(config())["model_list"]


def test_other_callbacks_stay() -> None:
    text = config().replace(
        '["curfew_client.litellm_hook.curfew"]', '["curfew_client.litellm_hook.curfew", "otel"]'
    )
    loaded = yaml.safe_load(run.without_curfew(text))
    assert loaded["litellm_settings"]["callbacks"] == ["otel"]
