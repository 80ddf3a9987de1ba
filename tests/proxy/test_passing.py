"""The pass-through policy on its own (``proxy.passing``): which request
headers go upstream, and how a query string is made safe to append. The
served tests (test_proxy_passthrough.py) prove the same on the wire; these
cover what a real client cannot send, quickly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from yarl import URL

from curfew_core.proxy import passing, upstream


def _raw(*pairs: tuple[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in pairs]


def test_every_header_passes_but_the_declared_ones() -> None:
    kept = [("idempotency-key", "k1"), ("openai-beta", "assistants=v2"), ("x-codex-a", "1")]
    dropped = [
        *(("connection", "keep-alive"), ("keep-alive", "5"), ("proxy-connection", "x")),
        *(("te", "trailers"), ("trailer", "x"), ("transfer-encoding", "chunked")),
        *(("upgrade", "h2c"), ("host", "evil.example"), ("content-length", "3")),
        *(("accept-encoding", "br"), ("expect", "100-continue")),
        *(("authorization", "Bearer cfw_x"), ("proxy-authorization", "Basic x")),
        *(("x-api-key", "cfw_x"), ("api-key", "k"), ("cookie", "a=b")),
        *(("openai-organization", "org-x"), ("openai-project", "proj_x")),
        *(("x-curfew-session", "s"), ("x-curfew-anything", "1")),
    ]
    assert passing.headers(_raw(*kept, *dropped)) == kept
    assert passing.headers(_raw(*kept)) == kept  # the control: nothing else is lost


def test_names_are_read_in_any_case_and_repeats_stay_apart() -> None:
    raw = _raw(("X-Api-Key", "k"), ("X-Trace", "a"), ("x-trace", "b"), ("X-CURFEW-PURPOSE", "t"))
    assert passing.headers(raw) == [("x-trace", "a"), ("x-trace", "b")]


@pytest.mark.parametrize(
    "name", ["x_api_key", "X_Api-Key", "x_curfew_session", "proxy_authorization"]
)
def test_an_underscore_spelling_of_a_dropped_name_is_dropped(name: str) -> None:
    assert passing.headers(_raw((name, "v"), ("x_other_thing", "kept"))) == [
        ("x_other_thing", "kept")
    ]


def test_headers_the_connection_header_names_are_hop_by_hop() -> None:
    raw = _raw(
        ("connection", "close, X-Hop"),
        ("x-hop", "1"),
        ("connection", "x-second"),
        ("x-second", "2"),
        ("x-stays", "3"),
    )
    assert passing.headers(raw) == [("x-stays", "3")]


def test_any_two_item_iterables_of_bytes_like_values_will_do() -> None:
    """ASGI lets a server give headers as lists and bytearrays (Daphne does)."""
    raw = [[bytearray(b"connection"), bytearray(b"keep-alive")], [b"x-a", bytearray(b"1")]]
    assert passing.headers(raw) == [("x-a", "1")]  # type: ignore[arg-type]


def test_a_value_that_is_not_utf8_stays_here() -> None:
    raw = [(b"x-latin", b"caf\xe9"), (b"x-utf8", "café 日本".encode())]
    assert passing.headers(raw) == [("x-utf8", "café 日本")]


@pytest.mark.parametrize(
    ("raw", "sent"),
    [
        (b"", ""),
        (b"beta=true", "beta=true"),
        (b"a=%2F..%2F&b=/../x?y", "a=%2F..%2F&b=/../x?y"),
        (b"x=1#frag/../../y", "x=1"),
        (b"q=a b\\c", "q=a%20b%5Cc"),
        (b"x=%zz%4", "x=%25zz%254"),
        (b"x=\xff\x00\r\n", "x=%FF%00%0D%0A"),
        (b'x="<\'>"', "x=%22%3C'%3E%22"),
    ],
)
def test_a_query_is_sent_as_is_when_valid_and_made_valid_when_not(raw: bytes, sent: str) -> None:
    assert passing.query(raw) == sent


TARGET = URL("https://llm.example/api/v1/chat/completions")


@given(st.binary(max_size=300))
def test_no_query_can_change_the_upstream_path_or_host(raw: bytes) -> None:
    query = passing.query(raw)
    if not query:
        return
    url = upstream._with_query(TARGET, query)
    assert (url.scheme, url.host, url.port, url.raw_path) == (
        "https",
        "llm.example",
        443,
        "/api/v1/chat/completions",
    )
    assert url.raw_query_string == query
    assert str(url) == f"{TARGET}?{query}"
