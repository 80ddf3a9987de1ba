"""What a passed proxy call costs the server, side by side in one run.

For each checkout served (this one, and with ``--baseline REF`` the same
benchmark against git ``REF`` checked out beside it), one uvicorn process
(SQLite, local cache, debug off) in front of the recording fake upstream:

- **CPU per passed call**: the server process's own CPU time (user + system,
  from ``/proc``) over a burst of concurrent passed chat calls (JSON and SSE),
  divided by the calls; its inverse is the calls per second one core could
  serve. Counting the server's CPU, not wall time, keeps the figure honest on
  a machine the load generator and the fake upstream share;
- **added latency to the first byte**, p50 and p99: sequential calls through
  the proxy minus the same calls straight to the fake upstream.

    python -m bench.proxy_throughput [--calls 2000] [--concurrency 8] [--baseline 441777f]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from curfew_testkit.fake_upstream import FakeUpstream
from curfew_testkit.server import ROOT, ServedApp

CHAT = {"model": "deepseek-chat", "messages": [{"role": "user", "content": "hello"}]}
STREAM = {**CHAT, "stream": True}
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


@dataclass
class Row:
    label: str
    body: str
    cpu_ms: float
    per_core: float
    added_p50: float
    added_p99: float


async def _burst(url: str, token: str, body: dict[str, object], calls: int, width: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=width, max_keepalive_connections=width)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        queue = iter(range(calls))

        async def worker() -> None:
            for _ in queue:
                async with client.stream("POST", url, json=body, headers=headers) as answer:
                    assert answer.status_code == 200, await answer.aread()
                    assert answer.headers["x-curfew-action"] == "pass"
                    await answer.aread()

        await asyncio.gather(*(worker() for _ in range(width)))


def _first_bytes(url: str, body: dict[str, object], headers: dict[str, str], n: int) -> list[float]:
    out = []
    with httpx.Client(timeout=30) as client:
        for _ in range(n):
            start = time.perf_counter()
            with client.stream("POST", url, json=body, headers=headers) as answer:
                chunks = answer.iter_raw()
                next(chunks)
                out.append((time.perf_counter() - start) * 1000)
                for _ in chunks:
                    pass
    return out


def measure(
    label: str, root: Path, upstream: FakeUpstream, calls: int, width: int, sequential: int
) -> list[Row]:
    work = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    app = ServedApp(
        work,
        root=root,
        env={
            "CURFEW_UPSTREAM_BASE_URL": f"{upstream.base_url}/v1",
            "CURFEW_UPSTREAM_API_KEY": "sk-bench",
            "CURFEW_LOG_LEVEL": "WARNING",
            "CURFEW_UPSTREAM_CONCURRENCY_PER_TOKEN": str(width * 2),
        },
    )
    rows = []
    try:
        app.prepare()
        token = app.create_user("bench")
        app.start()
        assert app.process is not None
        httpx.patch(
            f"{app.base_url}/api/v1/schedule",
            json={"enabled": False, "peak_shift": False},
            headers={"Authorization": f"Bearer {token}"},
        ).raise_for_status()
        url = f"{app.base_url}/v1/chat/completions"
        for name, body in (("JSON", CHAT), ("SSE", STREAM)):
            asyncio.run(_burst(url, token, body, 100, width))  # warm
            before = cpu_seconds(app.process.pid)
            asyncio.run(_burst(url, token, body, calls, width))
            spent = cpu_seconds(app.process.pid) - before
            auth = {"Authorization": f"Bearer {token}"}
            through = _first_bytes(url, body, auth, sequential)
            direct = _first_bytes(f"{upstream.base_url}/v1/chat/completions", body, {}, sequential)
            added = sorted(a - b for a, b in zip(sorted(through), sorted(direct), strict=True))
            rows.append(
                Row(
                    label,
                    name,
                    spent / calls * 1000,
                    calls / spent if spent else float("inf"),
                    statistics.median(added),
                    added[int(len(added) * 0.99) - 1],
                )
            )
    finally:
        app.stop()
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--sequential", type=int, default=300)
    parser.add_argument("--baseline", help="a git ref to serve beside this checkout")
    args = parser.parse_args()
    upstream = FakeUpstream().start()
    checkouts: list[tuple[str, Path]] = [("this checkout", ROOT)]
    baseline_dir = None
    if args.baseline:
        baseline_dir = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(baseline_dir), args.baseline],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        checkouts.insert(0, (f"baseline {args.baseline}", baseline_dir))
    try:
        rows = [
            row
            for label, root in checkouts
            for row in measure(label, root, upstream, args.calls, args.concurrency, args.sequential)
        ]
    finally:
        upstream.stop()
        if baseline_dir is not None:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(baseline_dir)],
                cwd=ROOT,
                capture_output=True,
            )
    print(f"passed chat calls, {args.calls} per row, {args.concurrency} at a time")
    header = f"  {'server':<22} {'body':<5} {'CPU ms/call':>12} {'calls/s/core':>13}"
    print(header + f" {'added p50 ms':>13} {'added p99 ms':>13}")
    base = {row.body: row for row in rows if row.label.startswith("baseline")}
    for row in rows:
        ratio = ""
        if row.body in base and not row.label.startswith("baseline"):
            ratio = f"  ({row.per_core / base[row.body].per_core:.2f}x the baseline)"
        print(
            f"  {row.label:<22} {row.body:<5} {row.cpu_ms:>12.3f} {row.per_core:>13,.0f}"
            f" {row.added_p50:>13.2f} {row.added_p99:>13.2f}{ratio}"
        )


if __name__ == "__main__":
    main()
