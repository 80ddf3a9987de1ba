"""``python manage.py ...`` works as the README writes it, after ``make run``.

The commands run in a subprocess under a Python *without* Django (the
interpreter the project's virtualenv was made from), in a temporary copy of
the checkout whose ``.local/secret_key`` is what ``make run`` would have made.
Production is unchanged: a SECRET_KEY in the environment wins and debug stays
off, and without either the answer is one clear line, never a traceback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from curfew_testkit.server import ROOT
from tests.conftest import require

#: The interpreter the virtualenv was made from: Python without the project's packages.
BARE_PYTHON = getattr(sys, "_base_executable", "") or shutil.which("python3") or "python3"
SETTINGS_PROBE = (
    "from django.conf import settings; "
    "print('debug', settings.DEBUG); print('key', settings.SECRET_KEY)"
)


def _has_django(python: str) -> bool:
    found = subprocess.run([python, "-c", "import django"], capture_output=True, timeout=30)
    return found.returncode == 0


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout as ``make run`` leaves it: code, ``.venv`` and ``.local/secret_key``."""
    require(Path(BARE_PYTHON).exists(), f"no bare Python at {BARE_PYTHON}")
    require(not _has_django(BARE_PYTHON), f"{BARE_PYTHON} has Django; cannot test the re-exec")
    root = tmp_path / "curfew"
    root.mkdir()
    shutil.copy2(ROOT / "manage.py", root / "manage.py")
    for name in ("curfew_core", "curfew_site", "templates", "locale", "static"):
        (root / name).symlink_to(ROOT / name)
    (root / ".venv").symlink_to((ROOT / ".venv").resolve())
    (root / ".local").mkdir()
    (root / ".local" / "secret_key").write_text("local-key-" + "x" * 50 + "\n")
    return root


def _env(checkout: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"SECRET_KEY", "CURFEW_DEBUG", "DJANGO_SETTINGS_MODULE", "REDIS_URL"}
        and not key.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST", "CURFEW_MANAGE"))
    }
    # The symlinked code resolves to the real checkout: keep its database out of it.
    env["DATABASE_URL"] = f"sqlite:///{checkout.parent / 'db.sqlite3'}"
    env.update(extra)
    return env


def manage(
    checkout: Path, *args: str, python: str = BARE_PYTHON, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "manage.py", *args],
        cwd=checkout,
        env=_env(checkout) if env is None else env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_status_works_with_a_python_without_django_after_make_run(checkout: Path) -> None:
    assert manage(checkout, "migrate", "--no-input", "-v0").returncode == 0
    made = manage(checkout, "curfew", "token", "--user", "demo", "--create-user")
    assert made.returncode == 0, made.stderr
    done = manage(checkout, "curfew", "status", "--user", "demo")
    assert done.returncode == 0, done.stderr
    state = done.stdout.split(" — ", 1)[0].strip()
    assert state in {"on-duty", "winding", "off-duty", "lights-out"}, done.stdout
    assert "Traceback" not in done.stderr


def test_the_local_key_and_debug_mode_are_picked_up(checkout: Path) -> None:
    done = manage(checkout, "shell", "-v", "0", "-c", SETTINGS_PROBE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["debug True", "key local-key-" + "x" * 50]


def test_a_secret_key_in_the_environment_wins_and_debug_stays_off(checkout: Path) -> None:
    env = _env(checkout, SECRET_KEY="production-key-" + "y" * 50)
    done = manage(checkout, "shell", "-v", "0", "-c", SETTINGS_PROBE, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["debug False", "key production-key-" + "y" * 50]


def test_without_a_key_the_error_is_one_clear_line(checkout: Path) -> None:
    shutil.rmtree(checkout / ".local")
    done = manage(checkout, "curfew", "status", "--user", "demo")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "SECRET_KEY" in lines[0]
    assert "make run" in lines[0]


def test_without_django_or_a_virtualenv_the_error_is_one_clear_line(checkout: Path) -> None:
    (checkout / ".venv").unlink()
    done = manage(checkout, "curfew", "status", "--user", "demo")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Django" in lines[0]
    assert "make run" in lines[0]


def test_a_virtualenv_without_django_is_not_a_loop(checkout: Path) -> None:
    # .venv/bin/python exists but cannot import Django either: one re-exec, then the error.
    (checkout / ".venv").unlink()
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "python").symlink_to(BARE_PYTHON)
    done = manage(checkout, "curfew", "status", "--user", "demo")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert ".venv" in done.stderr


def test_the_virtualenvs_python_still_runs_it_directly(checkout: Path) -> None:
    python = str(checkout / ".venv" / "bin" / "python")
    done = manage(checkout, "shell", "-v", "0", "-c", SETTINGS_PROBE, python=python)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "debug True"
