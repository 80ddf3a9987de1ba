"""ASGI servers to compare, each started as production would start it.

- ``uvicorn``: ``bin/serve run`` (the production command: uvicorn's own
  supervisor, ``--workers N``);
- ``gunicorn``: gunicorn's arbiter with ``uvicorn_worker.UvicornWorker`` (the
  ``gunicorn`` and ``uvicorn-worker`` packages; not in the requirements);
- ``daphne``: Channels' own server, one process (it has no workers option).

All share one environment (PostgreSQL, Redis, production settings behind a
TLS-terminating proxy) and one port per run. Imported by ``load_verdict.py``;
run on its own it lists which servers this machine can start.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from curfew_testkit.server import wait_for_http

ROOT = Path(__file__).resolve().parents[1]
GRACE_SECONDS = 30


@dataclass(frozen=True)
class ServerSpec:
    kind: str
    workers: int

    @property
    def label(self) -> str:
        if self.kind == "gunicorn":
            return f"gunicorn -k UvicornWorker -w {self.workers}"
        if self.kind == "daphne":
            return "daphne (one process)"
        return f"uvicorn --workers {self.workers}"

    def missing(self) -> str | None:
        """Why this server cannot run here, or None."""
        needs = {"gunicorn": ["gunicorn", "uvicorn_worker"], "daphne": ["daphne"]}
        absent = [m for m in needs.get(self.kind, ["uvicorn"]) if not importlib.util.find_spec(m)]
        if absent:
            return f"not installed: {', '.join(absent)}"
        if self.kind == "daphne" and self.workers != 1:
            return "daphne runs one process"
        return None

    def command(self, port: int, app: str | None = None) -> list[str]:
        """The command serving the site, or ``app`` (another ASGI app, a
        benchmark's floor) the same way: for uvicorn, ``bin/serve``'s HTTP flags."""
        py = sys.executable
        if self.kind == "uvicorn":
            if app is None:
                return [str(ROOT / "bin" / "serve"), "run"]
            return [
                py,
                "-m",
                "uvicorn",
                app,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(self.workers),
                "--lifespan",
                "off",
                "--no-access-log",
                "--no-proxy-headers",  # as bin/serve
                "--timeout-graceful-shutdown",
                str(GRACE_SECONDS),
            ]
        app = app or "curfew_site.asgi:application"
        if self.kind == "gunicorn":
            return [
                py,
                "-m",
                "gunicorn",
                app,
                "--worker-class",
                "uvicorn_worker.UvicornWorker",
                "--workers",
                str(self.workers),
                "--bind",
                f"127.0.0.1:{port}",
                "--graceful-timeout",
                str(GRACE_SECONDS),
            ]
        if self.kind == "daphne":
            return [py, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "--proxy-headers", app]
        raise ValueError(f"unknown server {self.kind!r}")


def parse_specs(text: str) -> list[ServerSpec]:
    """``uvicorn:2,gunicorn:2,daphne`` → specs (workers default to 1)."""
    specs = []
    for item in text.split(","):
        kind, _, workers = item.strip().partition(":")
        specs.append(ServerSpec(kind, int(workers or 1)))
    return specs


class RunningServer:
    """One server in its own process group, so a stop ends its workers too."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        port: int,
        env: dict[str, str],
        log_path: Path,
        app: str | None = None,
    ) -> None:
        self.spec = spec
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        full_env = {
            **env,
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "CURFEW_WORKERS": str(spec.workers),
            "CURFEW_GRACEFUL_SECONDS": str(GRACE_SECONDS),
            "PYTHON": sys.executable,
        }
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                spec.command(port, app),
                cwd=ROOT,
                env=full_env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, timeout: float = 60.0) -> None:
        wait_for_http(
            f"{self.base_url}/healthz",
            self.process,
            self.log_path,
            timeout=timeout,
            label=self.spec.label,
            interval=0.2,
        )

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=GRACE_SECONDS + 5)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


if __name__ == "__main__":
    for spec in parse_specs("uvicorn:2,gunicorn:2,daphne:1"):
        print(f"{spec.label:<32} {spec.missing() or 'available'}")
