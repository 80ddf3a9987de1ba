"""The canned answers, streamed or not, come from templates (``sse.Template``):
encoded once per shape, their holes filled per request. What a client receives
must not change by a byte for it, ids and timestamps aside:

- against the slow construction (``sse.stream`` over the shape's
  ``answer_events``, or ``json.dumps`` of its ``answer``, which build and encode
  every object), for a spread of request bodies and for generated ones;
- against bodies written before templates existed (``canned/``: the
  construction of commit d425c69, with the ids and the clock of :func:`fixed`),
  so the slow construction cannot drift along unseen either;
- each Responses event, and the Responses answer, still what the openai SDK's own
  models accept.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai._models import validate_type
from openai.types.responses import Response, ResponseStreamEvent

from curfew_client import (
    anthropic_shapes,
    completions_shapes,
    openai_shapes,
    responses_shapes,
    shapes,
    sse,
)

CANNED = Path(__file__).parent / "canned"
NOW = 1_764_567_890.75
#: Each shape's id makers, fixed by :func:`fixed`.
IDS = {
    responses_shapes: ("response_id", "_item_id"),
    openai_shapes: ("completion_id",),
    anthropic_shapes: ("message_id",),
    completions_shapes: ("completion_id",),
}
#: Whether each shape's stream ends ``[DONE]``.
DONE = {"chat": True, "responses": False, "messages": False, "completions": True}


@contextmanager
def fixed() -> Iterator[None]:
    """Every shape's ids and the clock fixed, so two constructions of one answer
    can be compared byte for byte."""
    with ExitStack() as stack:
        for module, names in IDS.items():
            for name in names:
                made = f"{name.strip('_')}_0123456789abcdef01234567"
                stack.enter_context(mock.patch.object(module, name, return_value=made))
        stack.enter_context(mock.patch("time.time", return_value=NOW))
        yield


def slow(shape: shapes.Shape, body: Mapping[str, Any], text: str) -> bytes:
    """The answer as it was built before templates: every object built, then encoded."""
    module = shapes.module(shape)
    if body.get("stream") is True:
        return sse.stream(module.answer_events(body, text), done=DONE[shape])
    return json.dumps(module.answer(body, text), ensure_ascii=False).encode()


def fast(shape: shapes.Shape, body: Mapping[str, Any], text: str) -> bytes:
    payload, content_type = shapes.module(shape).short_circuit_body(body, text)
    streamed = body.get("stream") is True
    assert content_type == (sse.CONTENT_TYPE if streamed else "application/json")
    return payload


ODD = 'q"uo\\te {model} {{x}} %s %(id)s é 日本 \u2028 \x00 \x1f 😀 </script>'
MODELS: list[Any] = ["gpt-4.1", "", None, 42, ODD]
TEXTS = ["。", "The curfew is on: back after 18:00.", ODD, "{reply}"]
RESPONSES_BODIES: list[dict[str, Any]] = [
    {"input": "hi"},
    {"instructions": 'Be "brief".\n{instructions}'},
    {"instructions": [{"type": "message", "role": "developer", "content": ODD}]},
    {"metadata": {"team": "moon", "{x}": ODD, "n": "1"}},
    {"previous_response_id": "resp_abc"},
    {"text": {"format": {"type": "json_schema", "name": "Moon", "schema": {"type": "object"}}}},
    {"text": {"format": {"type": "json_object"}}, "instructions": "JSON only."},
    {"text": {"format": {"type": "text"}, "verbosity": "low"}},
    {
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "name": "f"},
        "parallel_tool_calls": False,
    },
    {"tool_choice": "required", "parallel_tool_calls": True},
    {"reasoning": {"effort": "low"}, "temperature": 0.7, "top_p": 1, "max_output_tokens": 64},
    {"temperature": float("nan"), "top_p": 1e300, "max_output_tokens": 2**70},
    # Wrong types: the defaults are echoed instead.
    {"max_output_tokens": True, "temperature": "hot", "metadata": [], "tools": {}, "text": "x"},
    {"instructions": "", "reasoning": None, "tool_choice": 3, "previous_response_id": 7},
]
OTHER_BODIES: dict[shapes.Shape, list[dict[str, Any]]] = {
    "chat": [
        {},
        {"n": 3},
        {"stream_options": {"include_usage": True}},
        {"n": 2, "response_format": {"type": "json_object"}},
        {"response_format": {"type": "json_schema"}, "stream_options": {"include_usage": True}},
        {"n": 0},
        {"n": True},
    ],
    "messages": [{}, {"max_tokens": 256, "system": ODD}],
    "completions": [{}, {"n": 2}, {"prompt": ["a", "b"], "n": 2}, {"prompt": [[1, 2], "b"]}],
}


def cases() -> Iterator[tuple[shapes.Shape, dict[str, Any], str]]:
    for stream in (True, False):
        for body, model, text in itertools.product(RESPONSES_BODIES, MODELS, TEXTS[:3]):
            yield "responses", {**body, "model": model, "stream": stream}, text
        for shape, bodies in OTHER_BODIES.items():
            for body, model, text in itertools.product(bodies, MODELS, TEXTS):
                yield shape, {**body, "model": model, "stream": stream}, text


@pytest.mark.parametrize(("shape", "body", "text"), list(cases()))
def test_the_template_gives_the_slow_constructions_very_bytes(
    shape: shapes.Shape, body: dict[str, Any], text: str
) -> None:
    with fixed():
        assert fast(shape, body, text) == slow(shape, body, text)


#: The bodies in ``canned/``, by file name: written by the construction before
#: templates, under :func:`fixed`.
GOLDEN: dict[str, tuple[shapes.Shape, dict[str, Any], str]] = {
    "responses.sse": ("responses", {"model": "gpt-4.1", "input": "hi", "stream": True}, "。"),
    "responses_everything.sse": (
        "responses",
        {
            "model": ODD,
            "stream": True,
            "instructions": ODD,
            "metadata": {"{k}": ODD},
            "previous_response_id": "resp_abc",
            "text": {"format": {"type": "json_schema", "name": "M", "schema": {}}},
            "tools": [{"type": "function", "name": "f"}],
            "tool_choice": "auto",
            "parallel_tool_calls": False,
            "reasoning": {"effort": "low"},
            "temperature": 0.5,
            "top_p": 1,
            "max_output_tokens": 100,
        },
        ODD,
    ),
    "chat.sse": ("chat", {"model": "m", "stream": True}, "。"),
    "chat_two_usage.sse": (
        "chat",
        {"model": ODD, "n": 2, "stream": True, "stream_options": {"include_usage": True}},
        ODD,
    ),
    "messages.sse": ("messages", {"model": ODD, "max_tokens": 9, "stream": True}, ODD),
    "completions.sse": ("completions", {"model": ODD, "n": 2, "stream": True}, ODD),
}
GOLDEN.update(
    {
        name.replace(".sse", ".json"): (shape, {**body, "stream": False}, text)
        for name, (shape, body, text) in GOLDEN.items()
    }
)


@pytest.mark.parametrize("name", GOLDEN)
def test_what_clients_receive_is_what_they_received_before_templates(name: str) -> None:
    shape, body, text = GOLDEN[name]
    written = (CANNED / name).read_bytes()
    with fixed():
        assert fast(shape, body, text) == written
        assert slow(shape, body, text) == written


def test_the_golden_bodies_have_content() -> None:
    """The control for the test above: the files are real streams, ids in."""
    for name, (shape, _, _) in GOLDEN.items():
        text = (CANNED / name).read_text()
        if name.endswith(".json"):
            assert json.loads(text)["id"].endswith("0123456789abcdef01234567")
        else:
            assert text.endswith("data: [DONE]\n\n" if DONE[shape] else "}\n\n"), name
        assert "0123456789abcdef01234567" in text
        assert str(int(NOW)) in text or shape == "messages"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)
#: What a body may set that changes a canned stream, in any shape.
SETTINGS = [
    *("model", "instructions", "max_output_tokens", "parallel_tool_calls"),
    *("previous_response_id", "reasoning", "temperature", "text", "tool_choice"),
    *("tools", "top_p", "metadata", "n", "prompt", "stream_options", "response_format"),
]


@given(
    shape=st.sampled_from(shapes.SHAPES),
    body=st.dictionaries(st.sampled_from(SETTINGS), JSON_VALUES, max_size=6),
    text=st.text(),
    stream=st.booleans(),
)
def test_any_body_gets_the_slow_constructions_very_bytes(
    shape: shapes.Shape, body: dict[str, Any], text: str, stream: bool
) -> None:
    body = {**body, "stream": stream}
    with fixed():
        assert fast(shape, body, text) == slow(shape, body, text)


def test_ids_and_timestamps_are_fresh_per_request() -> None:
    """The template holds none of them: two answers differ in their ids."""
    body = {"model": "m", "input": "hi", "stream": True}
    first, second = (_events(fast("responses", body, ".")) for _ in range(2))
    assert first[0]["response"]["id"] != second[0]["response"]["id"]
    assert first[2]["item"]["id"] != second[2]["item"]["id"]
    with fixed():
        assert _events(fast("responses", body, "."))[0]["response"]["created_at"] == int(NOW)
    for shape, stream in itertools.product(shapes.SHAPES, (True, False)):
        one, two = (fast(shape, {"model": "m", "stream": stream}, ".") for _ in range(2))
        assert one != two, shape


@pytest.mark.parametrize(
    ("body", "model", "text"),
    [
        (body, MODELS[n % len(MODELS)], TEXTS[n % len(TEXTS)])
        for n, body in enumerate(RESPONSES_BODIES)
    ],
)
def test_every_templated_responses_answer_is_one_the_sdk_accepts(
    body: dict[str, Any], model: Any, text: str
) -> None:
    events = _events(fast("responses", {**body, "model": model, "stream": True}, text))
    for data in events:
        parsed: Any = validate_type(type_=ResponseStreamEvent, value=data)  # type: ignore[arg-type]
        assert parsed.type == data["type"]
    assert events[-1]["response"]["model"] == (
        model if isinstance(model, str) and model else "curfew"
    )
    assert events[4]["delta"] == text
    answer = json.loads(fast("responses", {**body, "model": model}, text))
    assert validate_type(type_=Response, value=answer).model == events[-1]["response"]["model"]


def _events(payload: bytes) -> list[dict[str, Any]]:
    blocks = [block for block in payload.decode().split("\n\n") if block]
    return [json.loads(block.split("data: ", 1)[1]) for block in blocks if "[DONE]" not in block]


# -- the template itself ------------------------------------------------------------


def test_a_template_fills_each_hole_with_json_text_and_keeps_the_rest() -> None:
    template = sse.Template.of_stream(
        [
            ("x", {"a": sse.hole("one"), "b": "{one} %s", "c": [sse.hole("two"), sse.hole("one")]}),
            (None, {"d": 1}),
        ],
        done=True,
    )
    assert template.names == {"one", "two"}
    filled = template.fill({"one": sse.value('"{two}"'), "two": sse.value(None)})
    assert filled == (
        b'event: x\ndata: {"a": "\\"{two}\\"", "b": "{one} %s", "c": [null, "\\"{two}\\""]}\n\n'
        b'data: {"d": 1}\n\ndata: [DONE]\n\n'
    )


def test_a_hole_left_without_a_value_is_an_error() -> None:
    template = sse.Template(sse.value({"a": sse.hole("one"), "b": sse.hole("two")}))
    with pytest.raises(KeyError):
        template.fill({"one": "1"})
    assert sse.Template(sse.value([sse.hole("one")])).fill({"one": "2"}) == b"[2]"


@pytest.mark.parametrize(
    "data",
    [None, True, False, 0, -7, 2**70, 0.1, float("nan"), "", ODD, [], {}, [1, "a"], {"k": [None]}],
)
def test_a_value_is_what_the_writer_writes_inside_an_event(data: Any) -> None:
    assert sse.event({"v": data}) == b'data: {"v": ' + sse.value(data).encode() + b"}\n\n"


@pytest.mark.parametrize("name", ["", "Reply", "re-ply", "reply1", "a b"])
def test_a_hole_is_named_so_it_is_found_again(name: str) -> None:
    """A name the encoded text is not searched for would leave the hole's
    stand-in in every answer: refused when the template is built."""
    with pytest.raises(ValueError, match="lower-case"):
        sse.hole(name)
