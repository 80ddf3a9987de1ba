"""A lean, bounded HTTP/1.1 load generator for loopback servers.

Each client holds one keep-alive connection and sends the same request again
as soon as the answer is in: ``clients`` requests are always in flight. On a
2-core machine the generator shares the CPU with the servers it measures, so
it is raw asyncio (uvloop when present) with pre-built request bytes rather
than a full HTTP client: every cycle it saves goes to the servers.

Every answer is checked, not only counted: an error is a failed connection, a
timeout, a status other than 200, or a body the caller's ``check`` refuses.
No Django here, so benchmarks import it without settings.
"""

from __future__ import annotations

import asyncio
import json
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

LOOPBACK = ("127.", "localhost", "[::1]", "::1")


@dataclass
class LoadReport:
    clients: int
    seconds: float
    latencies_ms: list[float] = field(repr=False)
    errors: int
    error_samples: list[str]
    connections: int
    #: Answers the least served client got: a starved client shows here.
    fewest_per_client: int
    #: CPU seconds the generator itself used (it competes with the servers).
    client_cpu_seconds: float

    @property
    def ok(self) -> int:
        return len(self.latencies_ms)

    @property
    def requests(self) -> int:
        return self.ok + self.errors

    @property
    def rate(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    def as_dict(self) -> dict[str, Any]:
        return {
            "clients": self.clients,
            "seconds": round(self.seconds, 2),
            "requests": self.requests,
            "ok": self.ok,
            "errors": self.errors,
            "error_samples": self.error_samples,
            "requests_per_second": round(self.rate, 1),
            "p50_ms": round(self.percentile(0.50), 2),
            "p90_ms": round(self.percentile(0.90), 2),
            "p99_ms": round(self.percentile(0.99), 2),
            "max_ms": round(max(self.latencies_ms, default=float("nan")), 2),
            "connections_opened": self.connections,
            "fewest_answers_per_client": self.fewest_per_client,
            "client_cpu_seconds": round(self.client_cpu_seconds, 1),
        }


def is_verdict(body: bytes) -> bool:
    """A complete verdict: JSON with the fields a gateway acts on."""
    try:
        verdict = json.loads(body)
    except ValueError:
        return False
    return isinstance(verdict, dict) and {"state", "action", "valid_until"} <= verdict.keys()


def build_request(
    method: str, url: str, *, headers: dict[str, str] | None = None, body: bytes = b""
) -> tuple[str, int, bytes]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme != "http" or not host.startswith(LOOPBACK):
        raise ValueError(f"load is only ever sent to loopback http://, not {url}")
    port = parts.port or 80
    lines = [
        f"{method} {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1",
        f"Host: {parts.netloc}",
        f"Content-Length: {len(body)}",
        *(f"{name}: {value}" for name, value in (headers or {}).items()),
    ]
    return host, port, ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bool, bytes]:
    """``(status, keep_alive, body)`` of one HTTP/1.1 response."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    headers = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip().lower()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding") == "chunked":
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                break
            chunks.append(chunk[:-2])
        body = b"".join(chunks)
    else:
        raise ValueError("a response with neither Content-Length nor chunked encoding")
    return status, headers.get("connection") != "close", body


async def run_load(
    request: tuple[str, int, bytes],
    *,
    clients: int,
    seconds: float,
    check: Callable[[bytes], bool] = lambda body: True,
    timeout: float = 10.0,
) -> LoadReport:
    host, port, payload = request
    latencies: list[float] = []
    samples: list[str] = []
    errors = 0
    connections = 0
    deadline = time.monotonic() + seconds

    def fail(reason: str) -> None:
        nonlocal errors
        errors += 1
        if len(samples) < 10:
            samples.append(reason)

    async def client() -> int:
        nonlocal connections
        answered = 0
        reader: asyncio.StreamReader | None = None
        writer: asyncio.StreamWriter | None = None
        while time.monotonic() < deadline:
            try:
                if writer is None:
                    reader, writer = await asyncio.wait_for(
                        asyncio.open_connection(host, port), timeout
                    )
                    connections += 1
                assert reader is not None
                started = time.perf_counter()
                writer.write(payload)
                status, keep_alive, body = await asyncio.wait_for(read_response(reader), timeout)
                elapsed = (time.perf_counter() - started) * 1000
                if status != 200:
                    fail(f"HTTP {status}: {body[:200]!r}")
                elif not check(body):
                    fail(f"unexpected body: {body[:200]!r}")
                else:
                    latencies.append(elapsed)
                    answered += 1
                if not keep_alive:
                    writer.close()
                    writer = None
            except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                fail(f"{type(exc).__name__}: {exc}")
                if writer is not None:
                    writer.close()
                writer = None
                await asyncio.sleep(0.05)
        if writer is not None:
            writer.close()
        return answered

    cpu_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()
    answers = await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.monotonic() - started
    cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return LoadReport(
        clients, elapsed, latencies, errors, samples, connections, min(answers, default=0), cpu
    )


def load(
    request: tuple[str, int, bytes],
    *,
    clients: int,
    seconds: float,
    check: Callable[[bytes], bool] = lambda body: True,
    timeout: float = 10.0,
) -> LoadReport:
    """Run one bounded load in a fresh event loop (uvloop when installed)."""
    coro = run_load(request, clients=clients, seconds=seconds, check=check, timeout=timeout)
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
