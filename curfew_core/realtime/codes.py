"""Application close codes of the capsule socket (documented in docs/manual.md).

A refused socket is accepted and then closed with one of these, because a
browser sees nothing but 1006 when the handshake itself is refused, and the
capsule must know to stop retrying and say why.
"""

#: No credential, or an unknown, revoked or wrong-kind embed token. Also sent to
#: an open socket whose credential ends: its embed token is revoked, its session
#: signs out or its password changes, or the user is deactivated. The capsule
#: stops retrying.
CLOSE_UNAUTHORIZED = 4401
#: A session-authenticated socket whose ``Origin`` is not the app's own (scheme,
#: host and port) nor in ``CSRF_TRUSTED_ORIGINS`` (cross-site WebSocket
#: hijacking). The capsule stops retrying.
CLOSE_FORBIDDEN_ORIGIN = 4403
#: Something the socket needs is down (the database, Redis, the channel layer);
#: the capsule retries with backoff.
CLOSE_UNAVAILABLE = 1011
#: Too many failed token checks from this address, or the token is over its
#: rate (curfew_core/throttle.py). The capsule retries with its usual backoff.
CLOSE_RATE_LIMITED = 4429
