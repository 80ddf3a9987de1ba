"""Reading a request's headers the quick way answers what the thorough way does.

``ScopeHeaders`` walks the raw list once, lowering names as bytes, and
answers ``get`` and ``raw`` from that: both must agree with the plain reading
(every header decoded first, as Django's ``request.headers``) for any header
list: repeated names, any case, ``_`` in a name, latin-1 text.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from curfew_core.edge.scope import ScopeHeaders

NAMES = st.sampled_from(
    [
        b"authorization",
        b"Authorization",
        b"AUTHORIZATION",
        b"x-api-key",
        b"X-Api-Key",
        b"x_api_key",
        b"content-length",
        b"host",
        b"\xc0uthorization",
        b"\xe0uthorization",
    ]
)
VALUES = st.binary(max_size=8)
RAW = st.lists(st.tuples(NAMES, VALUES), max_size=8)
ASKED = st.sampled_from(
    ["Authorization", "authorization", "x-api-key", "X_API_KEY", "HOST", "Àuthorization", "€"]
)


@given(raw=RAW, asked=ASKED)
def test_one_header_read_first_is_what_the_decoded_headers_say(
    raw: list[tuple[bytes, bytes]], asked: str
) -> None:
    thorough = ScopeHeaders(raw)
    expected = dict(thorough).get(asked.replace("_", "-").lower(), "absent")
    assert thorough.get(asked, "absent") == expected
    assert ScopeHeaders(raw).get(asked, "absent") == expected
    assert ScopeHeaders(iter(raw)).get(asked, "absent") == expected


@given(raw=RAW)
def test_a_raw_value_is_the_decoded_headers_value_in_bytes(
    raw: list[tuple[bytes, bytes]],
) -> None:
    decoded = dict(ScopeHeaders(raw))
    for name in (b"host", b"authorization", b"x-api-key", b"content-length"):
        value = ScopeHeaders(raw).raw(name)
        expected = decoded.get(name.decode())
        assert (None if value is None else value.decode("latin-1")) == expected
