"""Run the real app as a separate ASGI server process for end-to-end tests."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What ``_once`` made in this process, by name.
_made: dict[str, Path] = {}
_making = threading.Lock()

#: A folder the processes of one test run share (its pytest-xdist workers; set
#: by tests/conftest.py): collectstatic and the migration of a new database
#: then run once per run, not per process.
shared_dir: Path | None = None
#: ``manage.py migrate`` as a served app's setup runs it.
MIGRATE = ("migrate", "--no-input", "-v0")
#: And collectstatic, over a copy of the run's collected folder (``seed_static``).
COLLECTSTATIC = ("collectstatic", "--no-input", "-v0")


def _manage(
    root: Path, env: dict[str, str], *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``manage.py`` of the checkout at ``root`` with ``env``; raises when it
    fails, unless not ``check``."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=check,
        timeout=300,
    )


def _once(name: str, make: Callable[[Path], object]) -> Path:
    """A file or folder ``name`` that ``make`` makes: once per test process,
    or once per run with ``shared_dir``."""
    with _making:
        made = _made.get(name)
        if made is None:
            if shared_dir is not None:
                made = _made_once(shared_dir, name, make)
            else:
                folder = Path(tempfile.mkdtemp(prefix="curfew-made-"))
                atexit.register(shutil.rmtree, folder, ignore_errors=True)
                made = folder / name
                make(made)
            _made[name] = made
        return made


def _made_once(shared: Path, name: str, make: Callable[[Path], object]) -> Path:
    """``shared / name``, made by ``make`` in the first process that asks,
    under a lock the others wait on (they would otherwise each spend the
    same time)."""
    shared.mkdir(parents=True, exist_ok=True)
    made = shared / name
    done = shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            # A process that died half-way.
            if made.is_dir():
                shutil.rmtree(made)
            else:
                made.unlink(missing_ok=True)
            make(made)
            done.touch()
    return made


def collected_static(env: dict[str, str]) -> Path:
    """A folder collectstatic filled (hashed, compressed), made once per test
    process, or once per run with ``shared_dir``. A server's static
    folder starts as a copy of it: its own collectstatic (the test's, or
    ``bin/serve``'s) still runs, over files it finds current, and keeps their
    compressed copies (``web.storage``), so it takes two seconds instead of
    fifteen of brotli."""
    return _once(
        "collected",
        lambda folder: _manage(
            ROOT,
            {**env, "CURFEW_STATIC_ROOT": str(folder), "CURFEW_MANIFEST_STATIC": "1"},
            *COLLECTSTATIC,
        ),
    )


def migrated_database(env: dict[str, str]) -> Path:
    """A new SQLite database that ``manage.py migrate`` brought up to date,
    made once per test process, or once per run with ``shared_dir``. A
    served app's ``migrate`` over its new database file is a copy of it (its
    schema does not depend on the settings): a migration from nothing is two
    to three seconds of a Django start and 40 migrations, and most served
    tests begin with one."""
    return _once(
        "migrated.sqlite3",
        lambda file: _manage(ROOT, {**env, "DATABASE_URL": f"sqlite:///{file}"}, *MIGRATE),
    )


def wait_for_http(
    url: str,
    process: subprocess.Popen[bytes] | None,
    log_path: Path,
    *,
    timeout: float,
    label: str,
    interval: float = 0.1,
) -> None:
    """Return once ``url`` answers; fail with the log tail if the process dies or time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{label} exited: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(interval)
    raise RuntimeError(f"{label} not ready in {timeout}s: {log_path.read_text()[-2000:]}")


#: The site's ASGI application, as ``make run`` and ``bin/serve`` serve it.
SITE_APP = "curfew_site.asgi:application"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServedApp:
    """One server process over one database file; start, stop and restart it.

    ``workers=N`` runs the production command instead (``bin/serve``: deploy
    check, collectstatic, migrate, N uvicorn workers on one port). Its settings
    are production's, behind a TLS-terminating proxy: clients send
    ``client_headers`` (``X-Forwarded-Proto: https``) as that proxy would.
    ``graceful_seconds`` bounds how long a stop waits for in-flight requests
    (uvicorn's ``--timeout-graceful-shutdown``, as ``bin/serve`` sets it).
    ``app``: another ASGI app to serve with the same flags (a benchmark's
    floor, ``curfew_testkit.hello:app``).
    """

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        env: dict[str, str] | None = None,
        workers: int | None = None,
        graceful_seconds: float | None = None,
        root: Path = ROOT,
        app: str = SITE_APP,
    ):
        #: The checkout served (another one's, for a benchmark's baseline).
        self.root = root
        self.workdir = workdir
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / f"server-{self.port}.log"
        self.workers = workers
        self.graceful_seconds = graceful_seconds
        #: The ASGI app uvicorn serves (not with ``workers``: ``bin/serve``'s own).
        self.app = app
        #: Headers every client of this server sends (the proxy's, in ``workers`` mode).
        self.client_headers: dict[str, str] = {}
        production: dict[str, str] = {}
        if workers is not None:
            self.client_headers = {"X-Forwarded-Proto": "https"}
            production = {
                "CURFEW_HTTPS": "1",
                "CURFEW_BEHIND_PROXY": "1",
                # The tests' own connections stand for the balancer's.
                "CURFEW_TRUSTED_PROXIES": "127.0.0.1",
                "CURFEW_WORKERS": str(workers),
                "HOST": "127.0.0.1",
                "PORT": str(self.port),
                "PYTHON": sys.executable,
            }
            if graceful_seconds is not None:
                production["CURFEW_GRACEFUL_SECONDS"] = str(int(graceful_seconds))
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "curfew_site.settings",
            "SECRET_KEY": "served-app-test-key-0123456789-abcdefghijklmnopqrstuvwxyz",
            "CURFEW_DEBUG": "0",
            # Production settings, but plain HTTP on loopback (no TLS here).
            "CURFEW_HTTPS": "0",
            "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
            "CURFEW_STATIC_ROOT": str(workdir / "static"),
            "CURFEW_MANIFEST_STATIC": "1",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            # Its own Redis namespace when REDIS_URL is set: its user ids are its own.
            # Unique per instance: Redis outlives test runs, and a reused temp
            # folder name would otherwise read the last run's cached users.
            "CURFEW_REDIS_PREFIX": f"curfew-test-{workdir.name}-{secrets.token_hex(4)}",
            **production,
            **(env or {}),
        }

    def seed_static(self) -> None:
        """Start this server's static folder from the process's collected one
        (compressed files are made where the manifest is used: always by ``bin/serve``)."""
        static = Path(self.env["CURFEW_STATIC_ROOT"])
        manifest = self.workers is not None or self.env.get("CURFEW_MANIFEST_STATIC") == "1"
        if manifest and not static.exists():
            shutil.copytree(collected_static(self.env), static)

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        if args[:1] == COLLECTSTATIC[:1]:
            self.seed_static()
        if args == MIGRATE and self._new_own_database():
            # What migrate would make of it: a copy of the run's migrated database.
            with (
                contextlib.closing(sqlite3.connect(migrated_database(self.env))) as made,
                contextlib.closing(sqlite3.connect(self.workdir / "db.sqlite3")) as own,
            ):
                made.backup(own)
            return subprocess.CompletedProcess([sys.executable, "manage.py", *args], 0, "", "")
        return _manage(self.root, self.env, *args, check=check)

    def _new_own_database(self) -> bool:
        """Whether this app's database is its own SQLite file, not made yet,
        of this checkout's migrations (not a baseline's)."""
        own = self.workdir / "db.sqlite3"
        return (
            self.root == ROOT
            and self.env.get("DATABASE_URL") == f"sqlite:///{own}"
            and not own.exists()
        )

    def prepare(self) -> None:
        """Migrate the database and collect static files (hashed, compressed)."""
        self.manage(*MIGRATE)
        self.manage(*COLLECTSTATIC)

    def create_user(self, username: str, password: str = "correct horse battery") -> str:
        """Make a user with a password; returns a fresh API token for them."""
        return self.create_users(username, password=password)[username]

    def create_users(
        self,
        *usernames: str,
        password: str = "correct horse battery",
        then: Sequence[tuple[str, ...]] = (),
    ) -> dict[str, str]:
        """Make users with one password, then run the ``manage.py`` commands
        ``then`` in order (each parsed and run as its command line would be:
        Django's ``call_command``); a fresh API token for each user, by name.

        One process for all of it (a Django start is most of a served test's
        setup), and the password hashed once for all (each hash is a quarter
        of a second of PBKDF2; signing in still checks it in full): each token
        is made as ``manage.py curfew token`` makes it. The benches also serve
        an older commit beside this one (``--baseline``), whose audit keyword
        was still ``door``: the script asks the code it runs against."""
        answer = self.manage(
            "shell",
            "-c",
            "import contextlib, inspect, io, json\n"
            "from django.contrib.auth.hashers import make_password\n"
            "from django.contrib.auth.models import User\n"
            "from django.core.management import call_command\n"
            "from curfew_core.services.tokens import token_create\n"
            "names = inspect.signature(token_create).parameters\n"
            "kw = 'channel' if 'channel' in names else 'door'\n"
            f"encoded = make_password({password!r})\n"
            "made = []\n"
            f"for name in {list(usernames)!r}:\n"
            "    u, _ = User.objects.get_or_create(username=name)\n"
            "    u.password = encoded; u.save()\n"
            "    made.append(token_create(user=u, name='', kind='api', **{kw: 'command'})[1])\n"
            # What the commands print is not kept (a failure fails the call).
            f"for args in {[list(command) for command in then]!r}:\n"
            "    with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "        call_command(*args, stdout=out)\n"
            "print(json.dumps(made))\n",
        )
        made = json.loads(answer.stdout.strip().splitlines()[-1])
        return dict(zip(usernames, made, strict=True))

    def command(self) -> list[str]:
        if self.workers is not None:
            return [str(self.root / "bin" / "serve")]
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            self.app,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            # As bin/serve: the site's stop writes its last batches
            # (edge.lifespan); another app (the benches' floor) has none.
            "--lifespan",
            "on" if self.app == SITE_APP else "off",
            "--no-access-log",
            # As make run and bin/serve: the app alone decides whose
            # X-Forwarded-For to believe (curfew_core/throttle.py).
            "--no-proxy-headers",
        ]
        if self.graceful_seconds is not None:
            command += ["--timeout-graceful-shutdown", str(int(self.graceful_seconds))]
        return command

    def start(self, timeout: float = 30.0) -> None:
        if self.workers is not None:
            self.seed_static()  # bin/serve runs collectstatic first
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child for its lifetime
        self.process = subprocess.Popen(
            self.command(),
            cwd=self.root,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            # bin/serve's workers are its children: its own group, so a stop
            # that has to force can end all of them (and nothing else).
            start_new_session=self.workers is not None,
        )
        # bin/serve collects static files (brotli on plotly.js) before it listens.
        self.wait_ready(timeout if self.workers is None else max(timeout, 180.0))

    def wait_ready(self, timeout: float = 30.0) -> None:
        # Health checks are exempt from the HTTPS redirect of production mode.
        path = "/api/v1/openapi.json" if self.workers is None else "/healthz"
        wait_for_http(
            f"{self.base_url}{path}", self.process, self.log_path, timeout=timeout, label="server"
        )

    def terminate(self) -> None:
        """SIGTERM, as a process manager stops a server; returns at once."""
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self, timeout: float = 10.0) -> int:
        """Wait for the server to exit (force it after ``timeout``); its exit code."""
        if self.process is None:
            return 0
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            if self.workers is not None:
                os.killpg(self.process.pid, signal.SIGKILL)
            else:
                self.process.kill()
            code = self.process.wait()
        self.process = None
        return code

    def stop(self) -> None:
        if self.process is None:
            return
        self.terminate()
        timeout = 10.0
        if self.graceful_seconds is not None:
            timeout = max(timeout, self.graceful_seconds + 5)
        self.wait_stopped(timeout)

    def restart(self) -> None:
        self.stop()
        self.start()
