"""``make clients``'s google-genai row: Google's own SDK through the LiteLLM
proxy set up with Curfew's callback, its ``gemini/`` model in front of the test
kit's recording fake Google (``FakeGemini``).

Set up as the Integrations page says (``tool_setups``, "LiteLLM"): the proxy's
declared config has the ``gemini/`` entry, pointed here at the fake Google
(:func:`at_fake`, as the DeepSeek entry is pointed at the fake OpenAI), its key
read from the variable the entry names (:data:`KEY_ENV`); the user's script
(:data:`CLIENT`) is the declared google-genai snippet, LiteLLM's address and key
the proxy's under test, the member named by ``X-Curfew-User`` with a team key.
The snippet makes one ``generate_content`` call, the script one
``generate_content_stream`` call more with the snippet's client and config,
and prints, for each, the text the user sees and one line ``<call>
finish=<reason> usage=<prompt>/<candidates>/<total>`` that :func:`check` reads:
off duty both must be finished turns (``STOP``) with Curfew's reply and a usage
of zero; winding and on duty the fake's answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from curfew_core.web.integrations import tool_setups
from curfew_testkit.fake_gemini import FakeGemini

#: The declared google-genai snippet, as the page shows it (it has no Curfew
#: address or key to fill in: it asks LiteLLM's proxy).
SNIPPET = tool_setups.setup("litellm").snippet("genai").render(base_url="", token="")
#: The model the SDK asks for, and LiteLLM's deployment of it.
MODEL = tool_setups.GEMINI_MODEL


def _declared_budget(snippet: str) -> int:
    found = re.search(r"max_output_tokens=(\d+)", snippet)
    if found is None:
        raise ValueError("the declared google-genai snippet asks for no max_output_tokens")
    return int(found.group(1))


#: The budget the snippet asks for: above any winding ceiling, so a clamp shows.
BUDGET = _declared_budget(SNIPPET)


def _gemini_entries(loaded: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``gemini/`` deployments of a loaded LiteLLM config."""
    models = loaded.get("model_list")
    if not isinstance(models, list):
        raise ValueError("the LiteLLM config has no model_list")
    found = [
        entry["litellm_params"]
        for entry in models
        if str(entry.get("litellm_params", {}).get("model", "")).startswith("gemini/")
    ]
    if not found:
        raise ValueError("the LiteLLM config has no gemini/ model")
    return found


def _key_env() -> dict[str, str]:
    config = tool_setups.setup("litellm").snippet("config").render(base_url="", token="")
    names = {
        str(params.get("api_key", "")).removeprefix("os.environ/")
        for params in _gemini_entries(yaml.safe_load(config))
    }
    return dict.fromkeys(sorted(names), "AIza-fake-gemini-key")


#: The Gemini deployment's key, in the variable its declared entry names
#: (``GEMINI_API_KEY``; the fake checks none).
KEY_ENV = _key_env()
#: What the fake Google answers (``FakeGemini``: "Hello" + " there" when streamed).
UPSTREAM_SAYS = "Hello there"
#: The calls the script makes, in order.
CALLS = ("generate_content", "generate_content_stream")


class GeminiFake(FakeGemini):
    """The test kit's fake Google, emptied between runs like the other fakes."""

    def reset(self) -> None:
        self.requests.clear()
        self.fail_with = None


def at_fake(config: str, api_base: str) -> str:
    """LiteLLM's proxy config with its declared ``gemini/`` deployments sent to
    ``api_base`` (the fake Google) instead of Google; the rest as declared."""
    loaded: dict[str, Any] = yaml.safe_load(config)
    for params in _gemini_entries(loaded):
        params["api_base"] = api_base
    return yaml.safe_dump(loaded, sort_keys=False).rstrip("\n")


def _once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"the declared google-genai snippet has not one {old}: {text}")
    return text.replace(old, new)


def script(snippet: str) -> str:
    """The user's script from the declared ``snippet``: argv's base_url (the
    proxy's tee), LiteLLM's key, the prompt, and with a team key the member
    (named by ``X-Curfew-User`` in the client's headers, as the other clients of
    the proxy name it); LiteLLM's address and key in the snippet are these."""
    setup = _once(snippet, json.dumps(tool_setups.LITELLM_PROXY_URL), "base_url")
    setup = _once(setup, json.dumps(tool_setups.LITELLM_KEY), "key")
    setup = _once(setup, 'api_version="v1beta"', 'api_version="v1beta", headers=member')
    return HEAD + setup + "\n" + TAIL


HEAD = """
import sys

base_url, key, prompt = sys.argv[1:4]
member = {"X-Curfew-User": sys.argv[4]} if len(sys.argv) > 4 else {}

"""
TAIL = f"""

def said(call, text, last, chunks=None):
    usage = last.usage_metadata
    counts = "none"
    if usage is not None:
        fields = (usage.prompt_token_count, usage.candidates_token_count, usage.total_token_count)
        counts = "/".join("none" if n is None else str(n) for n in fields)
    finish = last.candidates[0].finish_reason if last.candidates else None
    finish = getattr(finish, "name", finish)
    print(f"{{call.removeprefix('generate_content').lstrip('_') or 'reply'}}: {{text}}")
    more = "" if chunks is None else f" chunks={{chunks}}"
    print(f"{{call}} finish={{finish}} usage={{counts}}{{more}}")


said("generate_content", reply.text, reply)
text, chunks, last = "", 0, None
for chunk in client.models.generate_content_stream(
    model="{MODEL}", contents=prompt, config=config
):
    text += chunk.text or ""
    chunks += 1
    last = chunk
said("generate_content_stream", text, last, chunks)
"""
#: The user's script (:func:`script` of the declared snippet).
CLIENT = script(SNIPPET)

#: What a Gemini request asks for: LiteLLM rebuilds the body it sends Google
#: (it adds ``model`` and ``tools``), these it must pass as the SDK sent them.
FIELDS = ("contents", "systemInstruction", "generationConfig")


def changed(sent: Any, reached: Any) -> list[str]:
    """The fields of :data:`FIELDS` the SDK sent that did not reach Google as
    sent (a body that is no JSON object: all of them)."""
    if not isinstance(sent, dict) or not isinstance(reached, dict):
        return list(FIELDS)
    return [name for name in FIELDS if name in sent and reached.get(name) != sent[name]]


_TURN = re.compile(r"^(generate_content(?:_stream)?) finish=(\S+) usage=(\S+)", re.MULTILINE)


def turns(seen: str) -> dict[str, tuple[str, str]]:
    """Each call's ``(finish reason, usage)`` as the script printed them."""
    return {call: (finish, usage) for call, finish, usage in _TURN.findall(seen)}


def replies(seen: str) -> dict[str, str]:
    """The text each call showed the user (``reply: …``, ``stream: …``)."""
    shown = {}
    for line in seen.splitlines():
        label, _, text = line.partition(": ")
        if label in ("reply", "stream"):
            shown[CALLS[label == "stream"]] = text
    return shown


def check(state: str, seen: str) -> list[str]:
    """Both calls finished as the SDK reads them: off duty Curfew's reply with
    a usage of zero; winding and on duty the fake Google's answer."""
    problems: list[str] = []
    found, shown = turns(seen), replies(seen)
    for call in CALLS:
        if call not in found:
            problems.append(f"{call}: no finished turn")
            continue
        finish, usage = found[call]
        if finish != "STOP":
            problems.append(f"{call}: finish {finish}, not STOP")
        text = shown.get(call, "")
        if state == "off duty":
            if "Curfew" not in text:
                problems.append(f"{call}: the reply shown does not say Curfew")
            if usage != "0/0/0":
                problems.append(f"{call}: usage {usage}, not zero")
        elif UPSTREAM_SAYS not in text:
            problems.append(f"{call}: the upstream's reply is not shown")
    return problems


def words(state: str, seen: str) -> str:
    """What the SDK read from each call, for the table."""
    found = turns(seen)
    said = [f"{call}: {found[call][0]}, usage {found[call][1]}" for call in CALLS if call in found]
    return "SDK read " + "; ".join(said) if said else ""
