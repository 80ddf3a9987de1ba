"""README: with sign-up off, an operator gives a person an account with a
password in two commands (issue 41, finding 8), as the README writes them."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from curfew_testkit.asgi_client import Client

README = Path(__file__).resolve().parents[2] / "README.md"
PASSWORD = "a long enough passphrase 42"

pytestmark = pytest.mark.django_db


def readme_commands() -> list[list[str]]:
    """The two commands the README names, ``NAME`` as written."""
    text = README.read_text(encoding="utf-8")
    found = re.findall(r"`python3 manage\.py ((?:curfew token|changepassword)[^`]*)`", text)
    return [shlex.split(command) for command in found]


def test_two_commands_give_a_person_a_password(monkeypatch: pytest.MonkeyPatch) -> None:
    commands = readme_commands()
    assert [command[0] for command in commands] == ["curfew", "changepassword"], commands
    # changepassword asks twice on the terminal; the operator types the same.
    monkeypatch.setattr("getpass.getpass", lambda prompt="": PASSWORD)
    for command in commands:
        call_command(*[part.replace("NAME", "grace") for part in command])
    assert User.objects.get(username="grace").check_password(PASSWORD)
    client = Client()
    response = client.post("/login/", {"username": "grace", "password": PASSWORD})
    assert response.status_code == 302
    assert "_auth_user_id" in client.session
