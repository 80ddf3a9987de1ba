"""What the benches record with their figures, and a bench's page in docs/benchmarks.

- ``machine``, ``versions``, ``revision``, ``loadavg``: what a run was measured
  on, by which code, under what load (every page says it, ``make bench`` too);
- ``run_facts``: those facts as a recorded run's fields (with its date and name);
- ``published``: a run's table printed, and appended to its page (``--write``);
- ``django_on_sqlite``: Django set up in the bench's own process on a new SQLite
  file, migrated (the in-process benches: no server, no Redis);
- ``Page``: a page that keeps every run (edge_floor, proxy_throughput,
  capsule_fanout). Each run is stored in the page itself, as JSON in an HTML
  comment after its section, so the next run reads them all back and writes
  the summary table over every run.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
Run = dict[str, Any]


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = os.cpu_count() or 0
    return f"{cores}-core {model or platform.machine()}".strip()


def versions() -> str:
    import uvicorn

    def has(module: str) -> bool:
        import importlib.util

        return importlib.util.find_spec(module) is not None

    loop = "uvloop" if has("uvloop") else "asyncio"
    http = "httptools" if has("httptools") else "h11"
    return f"Python {platform.python_version()}, uvicorn {uvicorn.__version__} ({loop}, {http})"


def run_facts(*, label: str, rev: str, load: str) -> Run:
    """A recorded run's own fields, the same in every bench's page: its date,
    name (``label``, else the code's revision ``rev``), machine, versions and
    the load average at its start."""
    return {
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "label": label or rev,
        "revision": rev,
        "machine": machine(),
        "versions": versions(),
        "loadavg": load,
    }


def revision() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}+changes" if dirty else head


def published(text: str, page: Path | None) -> None:
    """``text`` (a run's table) printed, and appended to ``page`` if one is named."""
    print(text)
    if page is not None:
        with page.open("a") as out:
            out.write("\n" + text + "\n")


def django_on_sqlite(prefix: str) -> None:
    """Django with the test settings in this process, on a new SQLite file in a
    folder named ``prefix…``, no Redis, logging warnings only, migrated."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ["DJANGO_SETTINGS_MODULE"] = "curfew_site.settings_test"
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'db.sqlite3'}"
    os.environ["CURFEW_LOG_LEVEL"] = "WARNING"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--no-input", verbosity=0)


def loadavg() -> str:
    """The load averages over 1, 5 and 15 minutes: ``0.92 1.83 3.48``."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@dataclass(frozen=True)
class Page:
    """A page that keeps every run: how a run is marked, the page's header,
    and how its summary and each run's section are written."""

    mark: str
    header: str
    summary_table: Callable[[list[Run]], str]
    run_section: Callable[[Run], str]

    def record(self, path: Path, run: Run) -> None:
        """Add ``run`` to the page at ``path`` (made if missing)."""
        runs: list[Run] = []
        if path.exists():
            for line in path.read_text().splitlines():
                if line.startswith(self.mark) and line.endswith(" -->"):
                    runs.append(json.loads(line[len(self.mark) : -len(" -->")]))
        runs.append(run)
        parts = [self.header, "## Summary\n", self.summary_table(runs), "\n## Runs\n"]
        for one in runs:
            parts += [
                self.run_section(one),
                f"\n{self.mark}{json.dumps(one, sort_keys=True)} -->\n",
            ]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(parts))


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system, every thread) process ``pid`` has used
    so far, from ``/proc``: read before and after a load, a served app's own
    cost a request, whatever else the machine is doing meanwhile."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # After the command's name: state is field 3, utime 14 and stime 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
