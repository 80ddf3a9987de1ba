"""What the curfew costs a model call, side by side in one run, for every door
(chat completions, Responses, Anthropic messages, legacy completions):

- a short-circuited request through the proxy (the whole answer; no upstream),
  beside a verdict API call and a trivial Django JSON view (``/healthz``) from
  the same server process, interleaved (issue 13: a short-circuit costs no
  more than a verdict);
- a passed request's added latency to the upstream's first byte (time to the
  first body byte through the proxy minus straight from the fake upstream)
  beside the trivial view's whole latency (issue 13: no more than one);
- the proxy's added latency on a passed request, against calling the same
  fake upstream directly (JSON and SSE);
- a clamped (re-encoded) request while winding;
- the gateway client's cached ``verdict()`` against an uncached one.

    python -m bench.proxy_latency [--requests 400] [--short-circuit-only]

``--short-circuit-only``: the first comparison alone (short-circuits beside
the verdict API and the trivial view), for a quick look on a busy machine.

One uvicorn process (SQLite, in-memory cache) on loopback, sequential requests
over a kept-alive connection, so the numbers are latency, not throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from curfew_client import AsyncCurfewClient, CurfewClient

from curfew_testkit.fake_anthropic import FakeAnthropic
from curfew_testkit.fake_upstream import FakeUpstream
from curfew_testkit.server import ServedApp

ROOT = Path(__file__).resolve().parents[1]

CHAT = {"model": "deepseek-chat", "messages": [{"role": "user", "content": "hello"}]}
STREAM = {**CHAT, "stream": True}


@dataclass(frozen=True)
class Door:
    name: str
    #: The proxy's path, and the fake upstream's (under its base URL).
    path: str
    upstream_path: str
    body: dict[str, object]
    anthropic: bool = False


DOORS = (
    Door("chat", "/v1/chat/completions", "/v1/chat/completions", CHAT),
    Door(
        "responses",
        "/v1/responses",
        "/v1/responses",
        {"model": "gpt-4.1", "input": "hello"},
    ),
    Door(
        "messages",
        "/v1/messages",
        "/anthropic/v1/messages",
        {"model": "deepseek-chat", "max_tokens": 256, "messages": CHAT["messages"]},
        anthropic=True,
    ),
    Door(
        "completions",
        "/v1/completions",
        "/v1/completions",
        {"model": "gpt-3.5-turbo-instruct", "prompt": "hello"},
    ),
)


def timed(call: Callable[[], object], count: int) -> list[float]:
    """Milliseconds per call, after a short warm-up."""
    for _ in range(max(5, count // 20)):
        call()
    out = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(label: str, values: list[float], extra: str = "") -> None:
    print(
        f"  {label:<44} {statistics.median(values):>8.2f} {p(values, 0.95):>8.2f} "
        f"{statistics.fmean(values):>8.2f}  {extra}"
    )


def post(http: httpx.Client, url: str, body: dict[str, object], headers: dict[str, str]) -> None:
    response = http.post(url, json=body, headers=headers)
    if response.status_code != 200:
        raise SystemExit(f"{url} answered {response.status_code}: {response.text[:200]}")


def first_byte(
    http: httpx.Client, url: str, body: dict[str, object], headers: dict[str, str]
) -> float:
    """Milliseconds from sending ``body`` to the answer's first body byte."""
    started = time.perf_counter()
    with http.stream("POST", url, json=body, headers=headers) as response:
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}")
        chunks = response.iter_raw()
        next(chunks)
        elapsed = (time.perf_counter() - started) * 1000
        for _ in chunks:
            pass
    return elapsed


def first_byte_get(http: httpx.Client, url: str) -> float:
    started = time.perf_counter()
    with http.stream("GET", url) as response:
        response.raise_for_status()
        chunks = response.iter_raw()
        next(chunks)
        elapsed = (time.perf_counter() - started) * 1000
        for _ in chunks:
            pass
    return elapsed


def rounds(calls: dict[str, Callable[[], object]], count: int) -> dict[str, list[float]]:
    """Milliseconds per call for each of ``calls``, in interleaved rounds of 20
    (so drift on a shared machine hits every row alike), after a warm-up."""
    for call in calls.values():
        for _ in range(10):
            call()
    out: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(max(1, count // 20)):
        for label, call in calls.items():
            for _ in range(20):
                started = time.perf_counter()
                call()
                out[label].append((time.perf_counter() - started) * 1000)
    return out


def measured_rounds(calls: dict[str, Callable[[], float]], count: int) -> dict[str, list[float]]:
    """As :func:`rounds`, for calls that return their own measure (ms)."""
    for call in calls.values():
        for _ in range(10):
            call()
    out: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(max(1, count // 20)):
        for label, call in calls.items():
            out[label] += [call() for _ in range(20)]
    return out


def verdict(p50: float, limit: float) -> str:
    return f"{p50 / limit:>5.2f}x  {'ok' if p50 <= limit else 'OVER'}"


def cached_cost(count: int, call: Callable[[], object]) -> float:
    """Microseconds per cached call (tight loop, best of three)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(count):
            call()
        best = min(best, (time.perf_counter() - started) / count * 1e6)
    return best


def short_circuits(cost: dict[str, list[float]]) -> None:
    """The short-circuit target's table: each door beside the verdict API."""
    trivial = statistics.median(cost["trivial"])
    verdict_p50 = statistics.median(cost["verdict"])
    print("\nissue 13, proxy targets (p50 ms, same server, same run):")
    print(
        f"  short-circuits interleaved with the verdict API ({verdict_p50:.2f} ms) and the "
        f"trivial Django JSON view ({trivial:.2f} ms);"
    )
    print(f"  {'short-circuit':<24} {'p50':>7} {'verdict':>8}  short/verdict, target <= 1")
    for door in DOORS:
        for label in ("JSON", "SSE"):
            short = statistics.median(cost[f"{door.name} {label}"])
            print(
                f"  {door.name + ' ' + label:<24} {short:>7.2f} {verdict_p50:>8.2f}  "
                f"{verdict(short, verdict_p50)}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--short-circuit-only", action="store_true")
    args, _ = parser.parse_known_args()
    n = args.requests

    upstream = FakeUpstream().start()
    anthropic = FakeAnthropic().start()
    app = ServedApp(
        Path(tempfile.mkdtemp(prefix="curfew-bench-proxy-")),
        env={
            "CURFEW_UPSTREAM_BASE_URL": f"{upstream.base_url}/v1",
            "CURFEW_UPSTREAM_API_KEY": "sk-bench",
            "CURFEW_ANTHROPIC_UPSTREAM_BASE_URL": f"{anthropic.base_url}/anthropic",
            "CURFEW_ANTHROPIC_UPSTREAM_API_KEY": "sk-ant-bench",
            "CURFEW_MANIFEST_STATIC": "0",
            "CURFEW_LOG_LEVEL": "WARNING",
            # One token makes every request here: a rate it never reaches (so
            # the throttle's hit is still paid on every request, as in production).
            "CURFEW_TOKEN_RATE": "1000000/minute",
        },
    )
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    try:
        token = app.create_user("bench-proxy")
        auth = {"Authorization": f"Bearer {token}"}
        proxy = f"{app.base_url}/v1/chat/completions"
        direct = f"{upstream.base_url}/v1/chat/completions"

        with httpx.Client(timeout=10) as http:

            def travel(moment: str) -> None:
                response = http.post(
                    f"{app.base_url}/api/v1/overrides", json={"debug": moment}, headers=auth
                )
                response.raise_for_status()

            print(f"proxy latency, {n} sequential requests each (ms):")
            print(f"  {'request':<44} {'p50':>8} {'p95':>8} {'mean':>8}")

            def upstream_calls() -> int:
                return len(upstream.requests) + len(anthropic.requests)

            travel("2026-09-29 10:00")  # peak hours: off duty
            before = upstream_calls()
            verdict_url = f"{app.base_url}/api/v1/verdict"
            side_by_side: dict[str, Callable[[], object]] = {
                "trivial": lambda: http.get(f"{app.base_url}/healthz").raise_for_status(),
                "verdict": lambda: post(http, verdict_url, {"max_tokens": 4096}, auth),
            }
            for door in DOORS:
                url = f"{app.base_url}{door.path}"
                stream = {**door.body, "stream": True}
                side_by_side[f"{door.name} JSON"] = lambda url=url, body=door.body: post(
                    http, url, body, auth
                )
                side_by_side[f"{door.name} SSE"] = lambda url=url, body=stream: post(
                    http, url, body, auth
                )
            cost = rounds(side_by_side, n)
            row("GET /healthz (trivial Django JSON view)", cost["trivial"])
            row("POST /api/v1/verdict (the verdict API)", cost["verdict"])
            for door in DOORS:
                row(f"{door.name}: short-circuit (JSON)", cost[f"{door.name} JSON"])
                row(f"{door.name}: short-circuit (SSE)", cost[f"{door.name} SSE"])
            if upstream_calls() != before:
                raise SystemExit("a short-circuited request reached the upstream")
            print("  (interleaved in rounds of 20; upstream calls while short-circuiting: 0)")
            if args.short_circuit_only:
                short_circuits(cost)
                return

            travel("2026-09-29 20:00")  # on duty: passed untouched
            pairs = []
            for door in DOORS:
                base = anthropic.base_url if door.anthropic else upstream.base_url
                direct, proxy = f"{base}{door.upstream_path}", f"{app.base_url}{door.path}"
                for label, body in (("JSON", door.body), ("SSE", {**door.body, "stream": True})):
                    # Interleaved, so drift on a busy machine hits both sides alike.
                    to_upstream: list[float] = []
                    via_proxy: list[float] = []
                    for _ in range(max(1, n // 50)):
                        to_upstream += timed(
                            lambda body=body, url=direct: post(http, url, body, {}), 50
                        )
                        via_proxy += timed(
                            lambda body=body, url=proxy: post(http, url, body, auth), 50
                        )
                    row(f"{door.name}: fake upstream directly ({label})", to_upstream)
                    row(f"{door.name}: passed through the proxy ({label})", via_proxy)
                    pairs.append((f"{door.name} {label}", to_upstream, via_proxy))

            # Time to the first body byte: straight from the fake, through the
            # proxy, and the trivial view's whole answer, interleaved.
            ttfb_calls: dict[str, Callable[[], float]] = {
                "trivial": lambda: first_byte_get(http, f"{app.base_url}/healthz"),
            }
            for door in DOORS:
                base = anthropic.base_url if door.anthropic else upstream.base_url
                direct, proxy = f"{base}{door.upstream_path}", f"{app.base_url}{door.path}"
                for label, body in (("JSON", door.body), ("SSE", {**door.body, "stream": True})):
                    ttfb_calls[f"{door.name} {label} direct"] = lambda url=direct, body=body: (
                        first_byte(http, url, body, {})
                    )
                    ttfb_calls[f"{door.name} {label} proxy"] = lambda url=proxy, body=body: (
                        first_byte(http, url, body, auth)
                    )
            ttfb = measured_rounds(ttfb_calls, n)

            travel("2026-09-29 23:30")  # winding: clamped and re-encoded
            for door in DOORS:
                url = f"{app.base_url}{door.path}"
                clamped = timed(lambda url=url, body=door.body: post(http, url, body, auth), n)
                row(f"{door.name}: clamped through the proxy (JSON)", clamped)

            print("\n  proxy's added latency on a passed request (p50 via proxy - p50 direct):")
            for label, to_upstream, via_proxy in pairs:
                added = statistics.median(via_proxy) - statistics.median(to_upstream)
                print(f"    {label:<18} {added:>7.2f} ms")

        first_trivial = statistics.median(ttfb["trivial"])
        short_circuits(cost)
        print(
            "  passed calls' first byte interleaved with the trivial view's answer measured "
            f"the same way ({first_trivial:.2f} ms), the target's baseline"
        )
        print(
            f"  {'passed, first byte':<24} {'direct':>7} {'proxy':>8} {'added':>7} "
            f"{'trivial':>8}  {'added/trivial, target <= 1':<18}"
        )
        for door in DOORS:
            for label in ("JSON", "SSE"):
                direct_p50 = statistics.median(ttfb[f"{door.name} {label} direct"])
                proxy_p50 = statistics.median(ttfb[f"{door.name} {label} proxy"])
                added = proxy_p50 - direct_p50
                print(
                    f"  {door.name + ' ' + label:<24} {direct_p50:>7.2f} {proxy_p50:>8.2f} "
                    f"{added:>7.2f} {first_trivial:>8.2f}  {verdict(added, first_trivial)}"
                )

        sync_client = CurfewClient(app.base_url, token, timeout=2)
        sync_client.verdict(session_id="bench", max_tokens=4096)
        sync_us = cached_cost(
            200_000, lambda: sync_client.verdict(session_id="bench", max_tokens=4096)
        )
        counter = iter(range(10**9))
        uncached = timed(lambda: sync_client.verdict(session_id=f"cold-{next(counter)}"), n // 2)

        async def async_cost() -> float:
            async with AsyncCurfewClient(app.base_url, token, timeout=2) as client:
                await client.verdict(session_id="bench")
                best = float("inf")
                for _ in range(3):
                    started = time.perf_counter()
                    for _ in range(100_000):
                        await client.verdict(session_id="bench")
                    best = min(best, (time.perf_counter() - started) / 100_000 * 1e6)
                return best

        async_us = asyncio.run(async_cost())
        sync_client.close()
        print("\ngateway client verdict():")
        print(f"  {'call':<44} {'cost':>12}")
        print(f"  {'CurfewClient, cached':<44} {sync_us:>9.2f} µs")
        print(f"  {'AsyncCurfewClient, cached (awaited)':<44} {async_us:>9.2f} µs")
        print(
            f"  {'CurfewClient, uncached (HTTP round trip)':<44} "
            f"{statistics.median(uncached) * 1000:>9.0f} µs  (p50)"
        )
    finally:
        app.stop()
        upstream.stop()
        anthropic.stop()


if __name__ == "__main__":
    main()
