"""No secret in a log, at any level, from any logger (issue 41, finding 1).

uvicorn logged every capsule socket's ``?token=…`` at INFO, even with
``--no-access-log``. Every record is now cleaned as it is made
(``curfew_site/redaction.py``, installed by the settings); the served runs
are grepped too (``tests/readme/doors.py``: ``assert_no_secret_logged`` after
``make run`` and ``bin/serve`` served every door with tokens in queries,
headers and bodies).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from uvicorn.logging import AccessFormatter

from curfew_site import redaction

TOKENS = {
    "api": "cfw_" + "A1b2C3d4" * 5 + "xyz",
    "embed": "cfe_" + "Q9w8E7r6" * 5 + "k-_",
    "team": "cft_" + "Zz09" * 10,
    "invite": "cfi_" + "abcd" * 8,
    "provider": "sk-ant-api03-" + "p" * 40,
}
LOGGERS = ("curfew.edge", "django.request", "uvicorn.error", "asyncio", "", "somebody.else")
LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """Everything the root logger's handlers would write, at every level."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    named = [logging.getLogger(name) for name in LOGGERS if name]
    # Each writes to the handler itself, whatever its parents do (uvicorn's
    # config stops "uvicorn.error" at "uvicorn", which does not propagate;
    # another test's dictConfig may have disabled one), and is put back after.
    # Other libraries' filters go too while it runs (LiteLLM puts a redaction
    # filter of its own on uvicorn.error and asyncio): the cleaning measured
    # is this project's.
    kept = [
        (logger, logger.level, logger.propagate, logger.disabled, list(logger.filters))
        for logger in named
    ]
    for logger in named:
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.disabled = False
        logger.filters = []
        logger.addHandler(handler)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        for logger, level, propagate, disabled, filters in kept:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
            logger.disabled = disabled
            logger.filters = filters


def _log_everything() -> None:
    for name in LOGGERS:
        logger = logging.getLogger(name)
        for level in LEVELS:
            for kind, token in TOKENS.items():
                logger.log(level, "as text %s %s", kind, f"/ws/capsule/?token={token}")
                logger.log(level, f"inline Authorization: Bearer {token} and {token}")
                logger.log(level, "a mapping %(where)s", {"where": f"?key={token}&a=1"})
                logger.log(level, "an object %s", {"headers": {"x-api-key": token}})
                try:
                    raise ValueError(f"bad credential {token}")
                except ValueError:
                    logger.log(level, "with a traceback", exc_info=True)


def test_no_logger_at_any_level_writes_a_token(captured: io.StringIO) -> None:
    _log_everything()
    written = captured.getvalue()
    records = len(LOGGERS) * len(LEVELS) * len(TOKENS)
    assert written.count("[redacted]") >= records * 6, "every record was written, cleaned"
    for kind, token in TOKENS.items():
        assert token not in written, kind
        assert token[4:20] not in written, kind


def test_the_control_group_without_the_cleaning_leaks(
    captured: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same records through the factory the cleaning wraps: every token
    shows. So the test above sees the cleaning, not a quiet logger."""
    factory = logging.getLogRecordFactory()
    assert isinstance(factory, redaction._Factory), "the settings installed the cleaning"
    monkeypatch.setattr(logging, "_logRecordFactory", factory.inner)
    _log_everything()
    written = captured.getvalue()
    for token in TOKENS.values():
        assert token in written


def test_uvicorns_access_log_still_formats_its_fields() -> None:
    """uvicorn's access formatter reads the record's arguments as a tuple of
    five: they are cleaned one by one, not folded into the message."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s'))
    logger = logging.getLogger("uvicorn.access.test")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    token = TOKENS["api"]
    logger.info(
        '%s - "%s %s HTTP/%s" %d',
        "127.0.0.1:5000",
        "GET",
        f"/embed/capsule/?token={token}",
        "1.1",
        200,
    )
    line = out.getvalue()
    assert '127.0.0.1:5000 - "GET /embed/capsule/?token=[redacted] HTTP/1.1" 200' in line, line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GET /x?token=abc&b=2", "GET /x?token=[redacted]&b=2"),
        ("/x?a=1&api_key=s3cret", "/x?a=1&api_key=[redacted]"),
        ("Bearer abc.def", "Bearer [redacted]"),
        ("cft_abcdefgh", "cft_[redacted]"),
        # A Gemini REST client's key, in uvicorn's access line (its path quoted).
        (
            "POST /v1beta/models/m%3AgenerateContent?alt=sse&key=cfw_abcdEFGH12 HTTP/1.1",
            "POST /v1beta/models/m%3AgenerateContent?alt=sse&key=[redacted] HTTP/1.1",
        ),
        ("/v1beta/models/m:generateContent?key=AIzaSy-b_c1&alt=sse", None),
        # The control group: nothing secret, nothing changed.
        ("GET /api/v1/state 200", "GET /api/v1/state 200"),
        ("the cfw_ prefix alone", "the cfw_ prefix alone"),
        ("?tokens=many", "?tokens=many"),
    ],
)
def test_what_counts_as_a_secret(text: str, expected: str | None) -> None:
    if expected is None:  # a provider's key in the query: cut where it stood
        expected = text.replace("AIzaSy-b_c1", "[redacted]")
    assert redaction.redact(text) == expected
