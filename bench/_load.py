"""A small bounded HTTP load generator for the benchmarks (loopback only)."""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass

import httpx


@dataclass
class LoadResult:
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else float("nan")


async def _run(
    method: str,
    url: str,
    *,
    concurrency: int,
    seconds: float,
    headers: dict[str, str] | None,
    body: bytes | None,
) -> LoadResult:
    if not url.startswith(("http://127.", "http://localhost", "http://[::1]")):
        raise ValueError("benchmarks only ever load the loopback interface")
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=10, headers=headers) as client:
        deadline = time.monotonic() + seconds

        async def worker() -> None:
            nonlocal errors
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    response = await client.request(method, url, content=body)
                    ok = response.status_code < 400
                except httpx.HTTPError:
                    ok = False
                if ok:
                    latencies.append((time.perf_counter() - started) * 1000)
                else:
                    errors += 1

        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.monotonic() - started
    return LoadResult(len(latencies) + errors, errors, elapsed, latencies)


def load(
    method: str,
    url: str,
    *,
    concurrency: int = 32,
    seconds: float = 8.0,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> LoadResult:
    return asyncio.run(
        _run(method, url, concurrency=concurrency, seconds=seconds, headers=headers, body=body)
    )
