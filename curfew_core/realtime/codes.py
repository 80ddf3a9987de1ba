"""Application close codes of the capsule socket (documented in the README).

A refused socket is accepted and then closed with one of these, because a
browser sees nothing but 1006 when the handshake itself is refused, and the
capsule must know to stop retrying and say why.
"""

#: No credential, or an unknown, revoked or wrong-kind embed token. Also sent to
#: an open socket whose embed token is revoked. The capsule stops retrying.
CLOSE_UNAUTHORIZED = 4401
#: A session-authenticated socket from an origin not in ``ALLOWED_HOSTS``
#: (cross-site WebSocket hijacking). The capsule stops retrying.
CLOSE_FORBIDDEN_ORIGIN = 4403
#: The state could not be read (database down); the capsule retries with backoff.
CLOSE_UNAVAILABLE = 1011
#: Too many failed token checks from this address, or the token is over its
#: rate (curfew_core/throttle.py). The capsule retries with its usual backoff.
CLOSE_RATE_LIMITED = 4429
