"""``manage.py curfew`` on bad input: a CommandError that says what, never a
traceback (issue 9, item 4, at the terminal door)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.api.conftest import stored


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"[" * 100_000, "not valid JSON"),
        (b'{"safetyMaxTokens": ' + b"9" * 5000 + b"}", "not valid JSON"),
        (b'{"offDutyReply": "\xff"}', "not valid JSON"),
        (b'{"offDutyReply": "\\ud800"}', "invalid Unicode"),
    ],
)
def test_a_bad_config_file_is_refused_plainly(
    tmp_path: Path, user: User, content: bytes, problem: str
) -> None:
    path = tmp_path / "plugin.json"
    path.write_bytes(content)
    before = stored(user)
    with pytest.raises(CommandError, match=problem):
        call_command(
            "curfew",
            "import-config",
            "--user",
            user.username,
            str(path),
            stdout=StringIO(),
            stderr=StringIO(),
        )
    assert stored(user) == before


@pytest.mark.parametrize(
    "words",
    [["overtime", "9" * 5000 + "m"], ["overtime", "9" * 5000], ["debug", "9" * 5000]],
)
def test_huge_override_arguments_are_refused_plainly(user: User, words: list[str]) -> None:
    with pytest.raises(CommandError, match="at most 64"):
        call_command("curfew", *words, "--user", user.username, stdout=StringIO())


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["token", "--user", "ada", "--name", "lap\udcfftop"], "name"),
        (["token", "--user", "x\udcff", "--create-user"], "user"),
        (["demo", "--user", "demo", "--password", "\udcff"], "password"),
        (["token", "--user", "ada", "--name", "a\x00b"], "name"),
    ],
)
def test_arguments_that_are_not_text_are_refused(user: User, args: list[str], option: str) -> None:
    # Non-UTF-8 bytes in argv arrive as lone surrogates (surrogateescape).
    from curfew_core.models import ApiToken

    with pytest.raises(CommandError, match=f"--{option} contains"):
        call_command("curfew", *args, stdout=StringIO())
    assert not ApiToken.objects.exists()
    assert User.objects.count() == 1
