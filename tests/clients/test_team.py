"""``make clients``'s team-key and server-down rows, held without the tools:
each tool's real declared setup, changed as the manual says it names its
member, must name it where that tool reads it; the rows' checks must pass a
good run and fail a bad one (the control)."""

from __future__ import annotations

import ast
import json
import tomllib
from typing import Any

import pytest
import yaml

from curfew_core.web.integrations import tool_setups
from curfew_testkit.fake_upstream import Recorded
from tests.clients import run, team

MEMBER = "alice"
HEADER = {team.MEMBER_HEADER: MEMBER}
UNCHECKED = "X-Curfew-State: unchecked"
PASSED = "Hello from the fake upstream."
LOGGED = "fail_open: calls pass UNCHECKED until the server answers"


def rendered(setup: str, snippet: str) -> str:
    text = (
        tool_setups.setup(setup)
        .snippet(snippet)
        .render(base_url="http://127.0.0.1:8000", token="cft_team", model=run.MODEL)
    )
    return team.with_member(setup, snippet, text, MEMBER, run.MODEL)


def keyword(code: str, function: str, name: str) -> Any:
    """The literal value of ``name=`` in the first call of ``function`` in ``code``."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == function:
            for given in node.keywords:
                if given.arg == name:
                    return ast.literal_eval(given.value)
    raise AssertionError(f"no {function}({name}=…) in the code")


def test_claude_code_names_the_member_in_anthropic_custom_headers() -> None:
    assert team.member_env("claude-code", MEMBER) == {
        "ANTHROPIC_CUSTOM_HEADERS": "X-Curfew-User: alice"
    }
    assert team.member_env("codex", MEMBER) == {}


def test_codex_names_the_member_in_the_providers_http_headers() -> None:
    config = tomllib.loads(rendered("codex", "config"))
    assert config["model_providers"]["curfew"]["http_headers"] == HEADER
    assert config["model_provider"] == "curfew"


def test_opencode_names_the_member_in_every_provider() -> None:
    config = json.loads(rendered("opencode", "config"))
    providers = config["provider"]
    assert len(providers) > 1
    for provider in providers.values():
        assert provider["options"]["headers"][team.MEMBER_HEADER] == MEMBER
    # The helpers keep their purpose.
    assert providers["curfew-title"]["options"]["headers"]["X-Curfew-Purpose"] == "title"


def test_aider_names_the_member_for_the_main_and_the_weak_model() -> None:
    entries = yaml.safe_load(rendered("aider", "settings"))
    by_name = {entry["name"]: entry for entry in entries}
    main = by_name[f"openai/{run.MODEL}"]
    assert main["extra_params"]["extra_headers"] == HEADER
    helper = by_name[f"openai/{run.MODEL}-helper"]
    assert helper["extra_params"]["extra_headers"] == {"X-Curfew-Purpose": "summary", **HEADER}


def test_llm_names_the_member_on_its_model() -> None:
    [entry] = yaml.safe_load(rendered("llm", "models"))
    assert entry["headers"] == HEADER


def test_the_sdks_and_the_litellm_library_name_the_member() -> None:
    openai = keyword(rendered("openai-sdk", "code"), "OpenAI", "default_headers")
    assert openai == {**HEADER, "X-Curfew-Session": "my-session"}
    anthropic = keyword(rendered("anthropic-sdk", "code"), "anthropic.Anthropic", "default_headers")
    assert anthropic == HEADER
    library = keyword(rendered("litellm", "library"), "litellm.completion", "extra_headers")
    assert library == HEADER


def test_every_tool_has_a_way_to_name_its_member() -> None:
    for tool in run.TOOLS:
        named = (
            tool.gateway
            or bool(team.member_env(tool.setup, MEMBER))
            or any((tool.setup, snippet.key) in team.CHANGES for snippet in _snippets(tool.setup))
        )
        assert named, tool.key


def _snippets(setup: str) -> list[Any]:
    return list(tool_setups.setup(setup).snippets)


def test_the_litellm_proxys_client_sends_the_member() -> None:
    assert "default_headers=member" in run.LITELLM_CLIENT
    assert "sys.argv[4]" in run.LITELLM_CLIENT


def recorded(headers: dict[str, str]) -> Recorded:
    return Recorded(method="POST", path="/v1/chat/completions", headers=headers, body=b"{}")


def test_a_call_without_the_member_fails_the_team_row() -> None:
    assert run.unnamed([recorded({"X-Curfew-User": MEMBER})], MEMBER) == []
    assert run.unnamed([recorded({})], MEMBER) == [f"1 call(s) without X-Curfew-User: {MEMBER}"]


@pytest.mark.parametrize(
    ("state", "seen", "upstream", "ok"),
    [
        ("off duty", f"Curfew: peak hours.\n{run.STRANGER}: refused (404): not a member", 0, True),
        ("off duty", "Curfew: peak hours.", 0, False),  # the stranger passed
        ("off duty", f"Hello from the fake\n{run.STRANGER}: refused (404): …", 1, False),
        ("on duty", f"Hello from the fake upstream.\n{run.STRANGER}: refused (404): …", 1, True),
    ],
)
def test_the_gateway_clients_team_row(state: str, seen: str, upstream: int, ok: bool) -> None:
    assert (run.check_client_team(state, seen, 0, upstream) == []) is ok


@pytest.mark.parametrize(
    ("seen", "upstream", "said", "ok"),
    [
        (f"{UNCHECKED}\n{PASSED}", 1, LOGGED, True),
        (f"X-Curfew-State: on-duty\n{PASSED}", 1, LOGGED, False),
        (f"{UNCHECKED}\n{PASSED}", 1, "", False),
        (f"{UNCHECKED}\nCurfew: off duty.", 0, LOGGED, False),
    ],
)
def test_the_server_down_row(seen: str, upstream: int, said: str, ok: bool) -> None:
    assert (run.check_down(seen, 0, upstream, said) == []) is ok


def test_the_table_says_what_the_new_rows_are() -> None:
    result = run.Result("codex", f"off duty · {run.TEAM_LABEL}", 0, "Curfew", 0, 0, [], "nothing")
    text = run.table([result], {"codex": "1"}, 1.0)
    assert "team-keys-in-tools" in text
    assert "server down" in text
    assert "off duty · team key" in text


@pytest.mark.parametrize(
    ("seen", "upstream", "ok"),
    [
        (
            'HTTP 404 X-Curfew-State: unknown\n{"error": "curfew refused this call: '
            "'not-a-member' is not a member of this key's team. … X-Curfew-User …\"}",
            0,
            True,
        ),
        ("HTTP 200 X-Curfew-State: unchecked\nHello from the fake upstream.", 1, False),
        (
            "HTTP 404 X-Curfew-State: None\nis not a member of this key's team X-Curfew-User",
            0,
            False,
        ),
    ],
)
def test_the_litellm_stranger_row(seen: str, upstream: int, ok: bool) -> None:
    assert (run.check_stranger(seen, 0, upstream) == []) is ok
