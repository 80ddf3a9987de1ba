"""Writes. Keyword-only, typed, atomic; each change leaves an audit entry in its
own transaction, and after the commit one function (``after_commit``) refreshes
the cache, then publishes the event."""
