#!/usr/bin/env python3
"""Django's command-line utility for administrative tasks.

``python manage.py ...`` works in a checkout after ``make run``, as the README
writes it:

- Run by a Python without Django, it runs itself again with the project's
  ``.venv/bin/python`` (once: a virtualenv without Django is an error, not a
  loop).
- Without ``SECRET_KEY`` in the environment it takes the local development
  setup ``make run`` made: ``.local/secret_key`` and debug mode. Production
  sets ``SECRET_KEY`` (``bin/serve`` refuses to start without it), so there
  the environment wins and nothing here changes; ``.local/`` is made only by
  ``make run`` and kept out of git.

Anything else that is wrong with the configuration is one line on stderr.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV_PYTHON = HERE / ".venv" / "bin" / "python"
LOCAL_SECRET_KEY = HERE / ".local" / "secret_key"
#: Set for the re-executed process, so it never re-executes again.
REEXEC_MARK = "CURFEW_MANAGE_REEXEC"


def _django_or_reexec() -> None:
    try:
        import django  # noqa: F401 - only asking whether it is there
    except ImportError:
        pass
    else:
        os.environ.pop(REEXEC_MARK, None)  # not inherited by the processes a command starts
        return
    if os.environ.get(REEXEC_MARK) or not VENV_PYTHON.exists():
        where = f"{VENV_PYTHON} either" if os.environ.get(REEXEC_MARK) else "no .venv here"
        sys.exit(
            f"manage.py: Django is not installed for {sys.executable} ({where}); "
            "`make run` sets up .venv, or install requirements/base.txt"
        )
    os.environ[REEXEC_MARK] = "1"
    python = str(VENV_PYTHON)
    os.execv(python, [python, str(HERE / "manage.py"), *sys.argv[1:]])  # noqa: S606 - our own venv


def _local_development() -> None:
    if os.environ.get("SECRET_KEY"):
        return
    try:
        key = LOCAL_SECRET_KEY.read_text(encoding="utf-8").strip()
    except OSError:
        return  # not set up by `make run`: the settings say what is missing
    if key:
        os.environ["SECRET_KEY"] = key
        os.environ.setdefault("CURFEW_DEBUG", "1")


def main() -> None:
    _django_or_reexec()
    _local_development()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "curfew_site.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 - load the settings now, to answer in one line
    except ImproperlyConfigured as exc:
        sys.exit(f"manage.py: {exc}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
