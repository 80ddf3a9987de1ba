"""No secret in a log: every log record is cleaned as it is made.

Curfew's own loggers never write a credential, but the servers do: uvicorn
logs each WebSocket connection with its full path at INFO (a capsule's
``?token=…``), ``make run``'s access log every request line, and a traceback
may quote a header. Handlers and formatters belong to whoever configured
logging (uvicorn configures its own before the app is imported), so the one
place every record passes, whatever the logger, level or server, is the
record factory: the message is rendered once and secrets are replaced there,
and so is an exception's text.

What counts as a secret (``SECRETS``): Curfew's own credentials by their
prefixes (``cfw_`` API, ``cfe_`` embed, ``cft_`` team key, ``cfi_`` invite),
the value of a ``token``/``key``-like query parameter, a bearer credential,
a provider key (``sk-…``: OpenAI's, Anthropic's ``sk-ant-api…`` and a Claude
Pro/Max login's ``sk-ant-oat…``), a JSON Web Token (``eyJ….….…``: a ChatGPT
login's access token), and the value of any credential header written out
with its name (``x-api-key: …``, ``'api-key': '…'``, ``X-Curfew-Token=…``,
``Authorization: Basic …``), as a traceback or a dumped header list shows
it: the credentials a caller may bring through the proxy
(``CURFEW_PROXY_CALLER_CREDENTIALS``) in every shape they come in.
"""

from __future__ import annotations

import logging
import re
import traceback
from typing import Any

#: Each pattern's first group is kept; the rest of the match becomes ``[redacted]``.
SECRETS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\b(cf[wetih]_)[A-Za-z0-9_\-]{4,}"),
    re.compile(
        r"([?&;](?:token|key|api_key|apikey|access_token|team_key|invite|password)=)[^&\s\"';]+",
        re.IGNORECASE,
    ),
    re.compile(r"(\bBearer\s+)[^\s\"',;]+", re.IGNORECASE),
    re.compile(r"\b(sk-)[A-Za-z0-9_\-]{8,}"),
    # A JSON Web Token: a header ``{"…`` in base64url, a payload, a signature.
    re.compile(r"\b(eyJ)[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    # A credential header with its value: ``name: value``, ``name=value``,
    # ``'name': 'value'``, ``(b'name', b'value')`` (an ASGI header list), and
    # after an ``Authorization`` its scheme (``Basic``, ``Bearer``) is kept.
    re.compile(
        r"(\b(?:x[-_]api[-_]key|api[-_]key|x[-_]curfew[-_]token|(?:proxy[-_])?authorization)"
        r"(?:[\"']?\s*[:=]\s*|[\"']\s*,\s*)(?:(?-i:b)?[\"'])?(?>(?:(?:Basic|Bearer|Token)\s+)?))"
        r"(?![^\s\"',;)\]}]*\[redacted\])[^\s\"',;)\]}]+",
        re.IGNORECASE,
    ),
)
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """``text`` with every credential ``SECRETS`` knows replaced."""
    for pattern in SECRETS:
        text = pattern.sub(lambda found: found.group(1) + REDACTED, text)
    return text


def _clean_value(value: object) -> object:
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, int | float):
        return value
    shown = str(value)
    cleaned = redact(shown)
    return value if cleaned == shown else cleaned


def _clean(record: logging.LogRecord) -> None:
    """Secrets out of the message, its arguments (each on its own: a
    formatter may read them, as uvicorn's access log does), the exception's
    text and the stack."""
    if isinstance(record.msg, str):
        record.msg = redact(record.msg)
    args = record.args
    if isinstance(args, tuple):
        record.args = tuple(_clean_value(arg) for arg in args)
    elif isinstance(args, dict):
        record.args = {key: _clean_value(value) for key, value in args.items()}
    if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
        record.exc_text = redact("".join(traceback.format_exception(*record.exc_info)).rstrip())
    if record.stack_info:
        record.stack_info = redact(record.stack_info)


class _Factory:
    """The record factory in force, wrapped: every record it makes is cleaned."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.inner(*args, **kwargs)
        _clean(record)
        return record


def install() -> None:
    """Clean every log record of this process from now on (idempotent)."""
    current = logging.getLogRecordFactory()
    if not isinstance(current, _Factory):
        logging.setLogRecordFactory(_Factory(current))
