"""Reading a request's headers the quick way answers what the thorough way does.

``ScopeHeaders.get`` finds one header by comparing raw names before it has
decoded them all, and ``headers_named`` finds several in one pass: both must
agree with the plain readings (every header decoded first; one scan per name)
for any header list: repeated names, any case, ``_`` in a name, latin-1 text.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from curfew_core.edge.scope import ScopeHeaders, header, headers_named

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
def test_several_headers_in_one_pass_are_each_ones_first_value(
    raw: list[tuple[bytes, bytes]],
) -> None:
    scope = {"headers": raw}
    names = (b"host", b"authorization", b"x-api-key")
    assert headers_named(scope, names) == [header(scope, name) for name in names]
