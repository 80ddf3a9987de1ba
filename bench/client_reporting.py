"""What reporting decisions costs the gateway client's cached ``verdict()``:
side by side, with ``report_decisions`` on and off, sync and async.

    python -m bench.client_reporting [--calls 200000]

No server: a MockTransport answers the one verdict request and takes the
reports (so the sender's work, JSON and all, runs in this process and
competes for the GIL, as it would in a gateway). Rounds alternate on/off and
the best of each is shown (least disturbed by the machine's other work).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import httpx
from curfew_client import AsyncCurfewClient, CurfewClient

NOW = 1_790_000_000.0
VERDICT: dict[str, Any] = {
    "state": "winding",
    "schedule_state": "winding",
    "action": "clamp",
    "reply": None,
    "stream": None,
    "max_tokens": 1000,
    "persona": "You are tired.",
    "tools": "allow",
    "reasoning_effort": "low",
    "progress": 0.125,
    "peak": False,
    "reason": "2026-09-29 23:30 · winding",
    "exempt": False,
    "dry_run": False,
    "valid_until": "2099-01-01T00:00:00+00:00",
    "max_age": None,
    "at": "2026-09-29T15:30:00+00:00",
    "budget": 1824,
    "override": None,
    "override_until": None,
    "debug_at": None,
    "would": None,
}


def handler(request: httpx.Request) -> httpx.Response:
    if request.url.path.endswith("/decisions"):
        return httpx.Response(200, json={"received": 0, "stored": 0})
    return httpx.Response(200, json=VERDICT)


def sync_round(client: CurfewClient, calls: int) -> float:
    verdict = client.verdict
    started = time.perf_counter()
    for _ in range(calls):
        verdict(session_id="bench", max_tokens=4096)
    return (time.perf_counter() - started) / calls * 1e6


async def async_round(client: AsyncCurfewClient, calls: int) -> float:
    verdict = client.verdict
    started = time.perf_counter()
    for _ in range(calls):
        await verdict(session_id="bench", max_tokens=4096)
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args, _ = parser.parse_known_args()  # make bench passes its own flags to every script
    transport = httpx.MockTransport(handler)
    best: dict[str, float] = {}
    totals: dict[str, tuple[int, int]] = {}

    clients = {
        on: CurfewClient(
            "http://curfew", "t", transport=transport, clock=lambda: NOW, report_decisions=on
        )
        for on in (True, False)
    }
    for client in clients.values():
        client.verdict(session_id="bench", max_tokens=4096)
    for _ in range(args.rounds):
        for on, client in clients.items():
            name = f"CurfewClient, cached, reporting {'on' if on else 'off'}"
            best[name] = min(best.get(name, float("inf")), sync_round(client, args.calls))
    for client in clients.values():
        client.close()
    reports = clients[True].reports
    assert reports is not None
    totals["sync"] = (reports.delivered, reports.dropped)

    async def run_async() -> None:
        aclients = {
            on: AsyncCurfewClient(
                "http://curfew", "t", transport=transport, clock=lambda: NOW, report_decisions=on
            )
            for on in (True, False)
        }
        for client in aclients.values():
            await client.verdict(session_id="bench", max_tokens=4096)
        for _ in range(args.rounds):
            for on, client in aclients.items():
                name = f"AsyncCurfewClient, cached, reporting {'on' if on else 'off'}"
                cost = await async_round(client, args.calls)
                best[name] = min(best.get(name, float("inf")), cost)
                await asyncio.sleep(0)  # let the sender task run between rounds
        for client in aclients.values():
            await client.aclose()
        areports = aclients[True].reports
        assert areports is not None
        totals["async"] = (areports.delivered, areports.dropped)

    asyncio.run(run_async())

    print(f"gateway client verdict(), {args.calls} calls a round, best of {args.rounds}:")
    print(f"  {'call':<48} {'cost':>10}")
    for name, cost in best.items():
        print(f"  {name:<48} {cost:>7.3f} µs")
    for flavour, (delivered, dropped) in totals.items():
        print(
            f"  {flavour}: {delivered} decisions reported, {dropped} dropped "
            f"(queue full: {args.calls * args.rounds} calls as fast as a loop can go)"
        )


if __name__ == "__main__":
    main()
