"""``make clients``'s google-genai row: Google's own SDK through the LiteLLM
proxy set up with Curfew's callback, its ``gemini/`` model in front of the test
kit's recording fake Google (``FakeGemini``).

The proxy's declared config (``tool_setups``, "LiteLLM") has one OpenAI-shaped
model; a user with Gemini adds a ``gemini/`` entry (:func:`with_gemini`), and
points the SDK at the proxy with ``http_options`` (:data:`CLIENT`): the
proxy's address as ``base_url`` and ``api_version="v1beta"`` (the SDK's default
path meets LiteLLM's GET ``/v1/models/{model}``, a 405), LiteLLM's key as the
API key. The script makes one ``generate_content`` and one
``generate_content_stream`` call and prints, for each, the text the user sees
and one line ``<call> finish=<reason> usage=<prompt>/<candidates>/<total>``
that :func:`check` reads: off duty both must be finished turns (``STOP``) with
Curfew's reply and a usage of zero; winding and on duty the fake's answer.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from curfew_testkit.fake_gemini import FakeGemini

#: The model the SDK asks for, and LiteLLM's deployment of it (the fake's own).
MODEL = "gemini-2.5-flash"
#: The deployment's key, read by LiteLLM from its environment (the fake checks none).
KEY_ENV = {"GEMINI_API_KEY": "AIza-fake-gemini-key"}
#: What the fake Google answers (``FakeGemini``: "Hello" + " there" when streamed).
UPSTREAM_SAYS = "Hello there"
#: The calls the script makes, in order.
CALLS = ("generate_content", "generate_content_stream")
#: The budget the script asks for: above any winding ceiling, so a clamp shows.
BUDGET = 4096


class GeminiFake(FakeGemini):
    """The test kit's fake Google, emptied between runs like the other fakes."""

    def reset(self) -> None:
        self.requests.clear()
        self.fail_with = None


def with_gemini(config: str, api_base: str) -> str:
    """LiteLLM's proxy config with a ``gemini/`` deployment of :data:`MODEL`
    added to its model list, at ``api_base`` (the fake Google), its key from
    the environment as the declared entry's is; the rest as it was."""
    loaded: dict[str, Any] = yaml.safe_load(config)
    models = loaded.get("model_list")
    if not isinstance(models, list):
        raise ValueError("the LiteLLM config has no model_list")
    entry = {
        "model_name": MODEL,
        "litellm_params": {
            "model": f"gemini/{MODEL}",
            "api_base": api_base,
            "api_key": f"os.environ/{next(iter(KEY_ENV))}",
        },
    }
    loaded["model_list"] = [*models, entry]
    return yaml.safe_dump(loaded, sort_keys=False).rstrip("\n")


#: The user's script: argv base_url (the proxy), LiteLLM's key, the prompt,
#: and with a team key the member (named by ``X-Curfew-User``, as the other
#: clients of the proxy name it).
CLIENT = f"""
import sys

from google import genai
from google.genai import types

base_url, key, prompt = sys.argv[1:4]
member = {{"X-Curfew-User": sys.argv[4]}} if len(sys.argv) > 4 else {{}}
client = genai.Client(
    api_key=key,
    http_options=types.HttpOptions(base_url=base_url, api_version="v1beta", headers=member),
)
config = types.GenerateContentConfig(
    system_instruction="Answer briefly.", max_output_tokens={BUDGET}
)


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


reply = client.models.generate_content(model="{MODEL}", contents=prompt, config=config)
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
