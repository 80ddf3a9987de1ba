"""``CurfewClient``: the blocking flavour, for threaded gateways."""

from __future__ import annotations

from types import TracebackType

import httpx

from curfew_client.base import BaseCurfewClient
from curfew_client.policy import request_body
from curfew_client.verdict import CurfewVerdict


class CurfewClient(BaseCurfewClient[httpx.BaseTransport]):
    __doc__ = BaseCurfewClient.__doc__

    def _open(self) -> None:
        self._http = httpx.Client(
            headers=self._headers, timeout=httpx.Timeout(self._timeout), transport=self._transport
        )

    def verdict(
        self,
        *,
        session_id: str | None = None,
        purpose: str | None = None,
        subagent: bool = False,
        max_tokens: int | None = None,
    ) -> CurfewVerdict:
        """The verdict for the model call about to be made (cached while fresh)."""
        key, now, ready = self._ready(session_id, purpose, subagent, max_tokens)
        if ready is not None:
            return ready
        try:
            response = self._http.post(self.url, json=request_body(key))
        except Exception as exc:  # anything at all: the hot path must not raise; policy answers
            return self.cache.failed(key, now, exc)
        return self._answered(key, now, response.status_code, response.content)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> CurfewClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
