"""``make bench``: run every benchmark script in bench/ in turn, and write the docs.

Each script prints its own small table. A script that records its runs itself
(it takes ``--write FILE``: edge_floor, proxy_throughput, capsule_fanout) is
given ``docs/benchmarks/<name>.md``; for every other script, what it printed
is written there, under the date, the machine and the commit. So the
benchmark tables in docs/ come from runs, never from hand. Scripts starting
with ``_`` are helpers. ``python -m bench.run_all edge_floor engine_speed``
runs only those.
"""

from __future__ import annotations

import datetime as dt
import platform
import subprocess
import sys
import time
from pathlib import Path

from bench.record import loadavg, machine, revision

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOCS = ROOT / "docs" / "benchmarks"


def writes_its_own(script: Path) -> bool:
    return '"--write"' in script.read_text(encoding="utf-8")


def printed_page(name: str, output: str, seconds: float, code: int) -> str:
    return (
        f"# `bench/{name}.py`\n\n"
        f"Written by `make bench` (`bench/run_all.py`) from the script's own output, "
        f"not by hand; each run replaces it.\n\n"
        f"- date: {dt.datetime.now(dt.UTC).date().isoformat()}\n"
        f"- machine: {machine()}; Python {platform.python_version()}\n"
        f"- commit: {revision()}\n"
        f"- load average at the end: {loadavg()}\n"
        f"- took {seconds:.0f} s, exit {code}\n\n"
        "The machine may be shared: compare the rows of one run, side by side.\n\n"
        f"```\n{output.rstrip()}\n```\n"
    )


def main(argv: list[str]) -> int:
    wanted = set(argv)
    failed = []
    DOCS.mkdir(parents=True, exist_ok=True)
    for script in sorted(HERE.glob("*.py")):
        if script.name.startswith("_") or script.name == Path(__file__).name:
            continue
        if wanted and script.stem not in wanted:
            continue
        print(f"\n=== {script.name}", flush=True)
        started = time.monotonic()
        command = [sys.executable, "-m", f"bench.{script.stem}"]
        page = DOCS / f"{script.stem}.md"
        if writes_its_own(script):
            result = subprocess.run([*command, "--write", str(page)], cwd=ROOT)
            code = result.returncode
        else:
            run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
            code = run.returncode
            sys.stdout.write(run.stdout)
            sys.stderr.write(run.stderr)
            if code == 0:
                page.write_text(
                    printed_page(script.stem, run.stdout, time.monotonic() - started, code)
                )
        print(f"--- {script.name}: exit {code} in {time.monotonic() - started:.0f}s")
        if code:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
