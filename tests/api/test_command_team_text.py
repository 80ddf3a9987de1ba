"""``manage.py curfew team``: names that are not text are refused before any
change, with the argument's own name (the team's check of stored text, as
``--user`` and ``--name`` have theirs in test_command_bad_input.py)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["team", "create", "night\udcffowls", "--admin", "ada"], "team"),
        (["team", "create", "owls", "--admin", "a\x00da"], "admin"),
        (["team", "add", "owls", "x\udcff"], "username"),
        (["team-token", "own\udcffls"], "team"),
    ],
)
def test_team_names_that_are_not_text_are_refused(user: User, args: list[str], option: str) -> None:
    from curfew_core.models import Team

    with pytest.raises(CommandError, match=f"^{option} contains"):
        call_command("curfew", *args, stdout=StringIO())
    assert not Team.objects.exists()
