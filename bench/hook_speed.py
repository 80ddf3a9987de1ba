"""How long the ``curfew`` command takes as a whole process, beside ``true``
and ``curl`` to the verdict API (issue 42: a warm hook at most 50 ms p99, its
own start included; the status line at most 30 ms).

    python -m bench.hook_speed [--runs 200] [--cold-runs 40] [--write docs/benchmarks/hook_speed.md]

``--write`` puts the run's table in that page, between its ``hook_speed.py``
markers (the page's other figures, by hand, stay).

Serves Curfew (uvicorn over SQLite in a temporary folder, as the served
tests do), makes a user and a token, stores them with ``curfew login``, and
then starts each command ``--runs`` times, in turn (one run of each, then
the next round: a drift of the machine's speed reaches all of them alike),
and prints each command's wall time (min, median, p99, max, in ms) and
median CPU time (user + sys of the process, from ``wait4``):

- ``true``: starting any process at all;
- ``python -c pass``: starting this Python (the floor of any Python command);
- ``curl`` ``POST /api/v1/verdict``: asking the server from outside (the
  floor of any hook that asks);
- ``curfew status``: warm (its cached state is fresh);
- ``curfew hook claude-code``, a ``PreToolUse`` event on stdin, warm (its
  cached verdict is fresh: the answer is read from a file, the decision
  spooled and a sender forked, see ``curfew_cli.reports``);
- the same hook cold (``--cold-runs`` times: its cached verdict removed
  before each run, so it asks the server: urllib, no httpx or pydantic).

"Warm" is kept honest: every ``REWARM`` seconds the caches are emptied and
refilled by one run that is not counted (a verdict is cached at most
``max_age``, 60 s). The decisions the warm hooks spooled must all reach the
ledger by the end (checked, and said).

Measured from this process with ``os.posix_spawn`` and ``os.wait4`` (wall:
``time.perf_counter`` around both), so any machine with Python and curl runs
it; ``/usr/bin/time -v`` gives the same figures one run at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.record import loadavg, machine, revision
from curfew_testkit.server import ServedApp

EVENT = {
    "session_id": "bench-session",
    "transcript_path": "/home/bench/.claude/projects/app/bench.jsonl",
    "cwd": "/home/bench/app",
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_use_id": "toolu_bench",
}
#: ``curfew status``'s cache (``curfew_cli.status.CACHE_FILE``).
STATUS_CACHE = "status.lines"
#: Seconds between refills of the caches (a verdict is kept at most 60 s).
REWARM = 40.0


def spawn(argv: list[str], env: dict[str, str], stdin: str | None) -> tuple[float, float, int]:
    """One run: (wall ms, cpu ms, exit status)."""
    actions: list[tuple[Any, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, stdin or os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    started = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter() - started) * 1000
    return wall, (usage.ru_utime + usage.ru_stime) * 1000, os.waitstatus_to_exitcode(status)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--cold-runs", type=int, default=40)
    parser.add_argument(
        "--write", type=Path, help="the page whose hook_speed.py section to replace"
    )
    args, _ = parser.parse_known_args(argv)  # make bench passes its own flags
    curfew = shutil.which("curfew", path=str(Path(sys.executable).parent))
    curl = shutil.which("curl")
    if curfew is None or curl is None:
        print("needs the curfew command (pip install ./client) and curl")
        return 1
    work = Path(tempfile.mkdtemp(prefix="hook-speed-"))
    app = ServedApp(work, env={"CURFEW_MANIFEST_STATIC": "0"})
    try:
        app.manage("migrate", "--no-input", "-v0")
        made = app.manage("curfew", "token", "--user", "bench", "--create-user")
        token = made.stdout.strip().splitlines()[-1]
        app.start()
        said: list[str] = []
        code = measure(app.base_url, token, work, curfew, curl, args.runs, args.cold_runs, said)
    finally:
        app.stop()
        shutil.rmtree(work, ignore_errors=True)
    if args.write is not None:
        write(args.write, said, args)
    return code


BEGIN = "<!-- hook_speed.py: begin -->"
END = "<!-- hook_speed.py: end -->"


def write(page: Path, said: list[str], args: argparse.Namespace) -> None:
    """The run's table into ``page`` between ``BEGIN`` and ``END``."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section = [
        BEGIN,
        f"`python -m bench.hook_speed --runs {args.runs} --cold-runs {args.cold_runs}`, "
        f"run of {when}, commit `{revision()}`:",
        "",
        "```",
        *said,
        "```",
        END,
    ]
    text = page.read_text(encoding="utf-8")
    head, found, rest = text.partition(BEGIN)
    if not found:
        raise SystemExit(f"{page} has no {BEGIN} marker")
    tail = rest.partition(END)[2]
    page.write_text(head + "\n".join(section) + tail, encoding="utf-8")


def measure(
    url: str,
    token: str,
    work: Path,
    curfew: str,
    curl: str,
    runs: int,
    cold_runs: int,
    said: list[str] | None = None,
) -> int:
    cache = work / "cache"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        "XDG_CONFIG_HOME": str(work / "config"),
        "XDG_CACHE_HOME": str(cache),
        "LANG": "C.UTF-8",
    }
    login = work / "token.txt"
    login.write_text(token + "\n")
    spawn([curfew, "login", url], env, str(login))
    event = work / "event.json"
    event.write_text(json.dumps(EVENT))
    body = json.dumps({"session_id": "bench-curl"})
    commands: dict[str, tuple[list[str], str | None]] = {
        "true": ([shutil.which("true") or "/bin/true"], None),
        "python -c pass": ([sys.executable, "-c", "pass"], None),
        "curl POST /api/v1/verdict": (
            [
                *(curl, "-s", "-o", "/dev/null", "-X", "POST", f"{url}/api/v1/verdict"),
                *("-H", f"Authorization: Bearer {token}", "-H", "Content-Type: application/json"),
                *("-d", body),
            ],
            None,
        ),
        "curfew status (warm)": ([curfew, "status"], None),
        "curfew hook claude-code (warm)": ([curfew, "hook", "claude-code"], str(event)),
    }
    cold = ([curfew, "hook", "claude-code"], str(event))
    verdicts = cache / "curfew" / "verdicts"

    def rewarm() -> None:
        shutil.rmtree(verdicts, ignore_errors=True)
        (cache / "curfew" / STATUS_CACHE).unlink(missing_ok=True)
        for name in ("curfew status (warm)", "curfew hook claude-code (warm)"):
            command, stdin = commands[name]
            spawn(command, env, stdin)

    load_before = loadavg()
    walls: dict[str, list[float]] = {name: [] for name in [*commands, "curfew hook (cold)"]}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    failures: dict[str, int] = dict.fromkeys(walls, 0)
    rewarm()
    warmed = time.monotonic()
    for index in range(runs):
        if time.monotonic() - warmed > REWARM:
            rewarm()
            warmed = time.monotonic()
        for name, (command, stdin) in commands.items():
            wall, cpu, code = spawn(command, env, stdin)
            walls[name].append(wall)
            cpus[name].append(cpu)
            failures[name] += code != 0
        if index < cold_runs:
            shutil.rmtree(verdicts, ignore_errors=True)
            wall, cpu, code = spawn(cold[0], env, cold[1])
            walls["curfew hook (cold)"].append(wall)
            cpus["curfew hook (cold)"].append(cpu)
            failures["curfew hook (cold)"] += code != 0
            rewarm()
            warmed = time.monotonic()
    spool = cache / "curfew" / "reports"
    deadline = time.monotonic() + 20  # the last sender gathers a second, then sends
    while time.monotonic() < deadline and spool.exists() and any(spool.rglob("*.json")):
        time.sleep(0.25)
    ledger = httpx.get(
        f"{url}/api/v1/decisions",
        params={"per_page": 1},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    left = sum(1 for _ in spool.rglob("*.json")) if spool.exists() else 0
    lines = [
        f"machine: {machine()}; Python {sys.version.split()[0]}",
        f"load average before: {load_before}; after: {loadavg()}",
        f"runs: {runs} of each ({cold_runs} cold), interleaved; times in ms",
        "",
        f"{'command':34} {'min':>7} {'median':>7} {'p99':>7} {'max':>7} {'cpu med':>8}  fails",
    ]
    for name, values in walls.items():
        if not values:
            continue
        lines.append(
            f"{name:34} {min(values):7.1f} {statistics.median(values):7.1f} "
            f"{p99(values):7.1f} {max(values):7.1f} {statistics.median(cpus[name]):8.1f}  "
            f"{failures[name]}"
        )
    lines += [
        "",
        f"reports still spooled at the end: {left} (ledger answered HTTP {ledger.status_code})",
    ]
    print("\n".join(lines))
    if said is not None:
        said += lines
    return 1 if left or any(failures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
