"""The Gemini door: ``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent`` (Google's ``generateContent`` API).

Point the google-genai SDK's base URL at the server's root, with a curfew
token as its API key (sent as ``x-goog-api-key``). The door acts as the chat
door does, in Gemini's protocol (``protocols.gemini``):

- short-circuit: the canned reply as a ``GenerateContentResponse`` (one JSON
  object; streamed, one event with ``alt=sse`` or a JSON array without it),
  zero usage, nothing sent upstream;
- clamp: forwarded as the client's ``gemini_shapes.apply_verdict`` makes it:
  ``generationConfig.maxOutputTokens`` clamped (``min``),
  ``generationConfig.thinkingConfig.thinkingBudget`` at most the verdict's
  budget (``min``; ``-1``, dynamic, becomes it; ``0``, off, stays), Gemini 3's
  ``thinkingLevel`` lowered to ``low`` when above the verdict's reasoning
  effort (never raised), the persona in ``systemInstruction``, tools dropped
  when denied;
- pass (on duty, exempt, dry run): the very bytes forwarded, with the headers
  and the query as sent (``alt=sse``), a ``key`` in the query left out.

A REST client may put its curfew token in the query (``?key=``, as Google's
examples do) instead of ``x-goog-api-key``: the door reads it there when no
header holds one (``protocols.gemini.QUERY_KEY``), and it never goes upstream
(the operator's key does, as ``x-goog-api-key``).

The upstream is the operator's (``CURFEW_GEMINI_UPSTREAM_BASE_URL``); the model
id is one checked path segment, so no client input shapes where a request goes.
"""

from __future__ import annotations

from curfew_client import gemini_shapes
from django.http.response import HttpResponseBase

from curfew_core.edge.request import EdgeRequest
from curfew_core.protocols import gemini
from curfew_core.proxy import calls, upstream

WHAT = "a generateContent JSON object"


async def _model_call(request: EdgeRequest, method: str) -> HttpResponseBase:
    stream = method == gemini.STREAM
    model = request.params["model"]
    call = calls.read_call(request, WHAT)
    if not isinstance(call, calls.Call):
        return call
    try:
        # The model id is one plain segment (``upstream.model_path``'s rule),
        # and the whole URL is checked now, not mid-forward.
        upstream.model_path(model)
        path = gemini.path(model, method)
        upstream.upstream_url(path, gemini.GEMINI)
    except upstream.UnsafePath as exc:
        return calls.refused(
            request.door.dialect, call.verdict, 400, exc, code="invalid_model", param="model"
        )
    # The answer's shape, as a gateway's (its path and query say how it streams).
    shape = gemini_shapes.GeminiCall(
        model, stream=stream, alt_sse=gemini_shapes.wants_sse(request.query_string)
    )
    endpoint = calls.ModelEndpoint(
        name="gemini",
        what=WHAT,
        path=path,
        shapes=shape,
        protocol=gemini.GEMINI,
    )
    return await calls.act(call, endpoint, request)


async def generate_content(request: EdgeRequest) -> HttpResponseBase:
    """``POST /v1beta/models/{model}:generateContent``."""
    return await _model_call(request, gemini.GENERATE)


async def stream_generate_content(request: EdgeRequest) -> HttpResponseBase:
    """``POST /v1beta/models/{model}:streamGenerateContent``."""
    return await _model_call(request, gemini.STREAM)
