"""The credentials a caller may bring through the proxy (issue 42) are cut
from every log record, in every shape a record may show them: a Claude login
(``sk-ant-oat…``), a ChatGPT login (a JSON Web Token), and any credential
header written out with its name, whatever its value looks like
(``curfew_site/redaction.py``). Text that only names such a header is left
alone."""

from __future__ import annotations

import logging

import pytest

from curfew_site import redaction

OAUTH = "sk-ant-oat01-" + "Ab3dE" * 12
JWT = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIn0.c2lnbmF0dXJlLWJ5dGVz"
OPAQUE = "opaque-caller-key-7Hq2"

SHAPES = [
    f"Authorization: Bearer {OAUTH}",
    f"x-api-key: {OAUTH}",
    f"authorization: Bearer {JWT}",
    f"the upstream said: token {JWT} expired",
    f"{{'x-api-key': '{OPAQUE}', 'anthropic-version': '2023-06-01'}}",
    f'{{"x-api-key": "{OPAQUE}"}}',
    f"[(b'x-api-key', b'{OPAQUE}'), (b'host', b'curfew')]",
    f"x_api_key={OPAQUE}",
    f"api-key: {OPAQUE}",
    f"X-Curfew-Token: {OPAQUE}",
    f'ANTHROPIC_CUSTOM_HEADERS="X-Curfew-Token: {OPAQUE}"',
    f"Proxy-Authorization: Basic {OPAQUE}",
    f"authorization: basic {OPAQUE}",
    f"authorization={OPAQUE}",
]


@pytest.mark.parametrize("text", SHAPES)
def test_each_shape_is_cut(text: str) -> None:
    cleaned = redaction.redact(text)
    for secret in (OAUTH, OAUTH[13:], JWT, JWT.split(".")[1], OPAQUE):
        assert secret not in cleaned, cleaned
    assert redaction.REDACTED in cleaned
    assert "[redacted]]" not in cleaned  # cut once, not twice over


@pytest.mark.parametrize(
    "text",
    [
        "Access-Control-Allow-Headers: x-api-key, anthropic-version",
        "send the Curfew token in X-Curfew-Token and keep your own x-api-key",
        "Authorization: Bearer [redacted]",
        "the api-key header (Azure) is dropped",
    ],
)
def test_naming_a_header_is_not_a_secret(text: str) -> None:
    assert redaction.redact(text) == text


def test_a_record_is_cleaned_as_it_is_made() -> None:
    """Through the record factory the settings install, as every logger's is."""
    redaction.install()
    record = logging.getLogRecordFactory()(
        "curfew.proxy", logging.DEBUG, __file__, 1, "headers %s", ([(b"x-api-key", OPAQUE)],), None
    )
    assert OPAQUE not in record.getMessage()
