"""A dropped ``team-member:`` entry forgets that name only (issue 40): a cold
lookup's own write drops its key in every process, and forgetting every name
then sent each member of a team key back to be read again. A drop that names
no keys (the layer's channel was lost) still forgets them all."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from curfew_core.edge import team_caller
from curfew_core.selectors.teams import member_key
from curfew_core.services.teams import member_add
from curfew_core.store import local_layer
from tests.api.conftest import clock
from tests.teams.test_team_key_doors import post, team

__all__ = ["clock", "team"]


def _seen(team: dict[str, Any]) -> set[str]:
    return {name for (team_id, name) in team_caller._ids if team_id == team["team"].pk}


def test_a_dropped_name_is_forgotten_alone(team: dict[str, Any]) -> None:
    member_add(team=team["team"], user=User.objects.create_user("carol"))
    team_caller.forget()
    for name in ("alice", "carol"):
        answer = post(team["key"], "/api/v1/verdict", {"max_tokens": 64, "user": name})
        assert answer.status_code == 200, answer.content
    assert _seen(team) == {"alice", "carol"}  # the control: both names kept
    local_layer.drop([member_key(team["team"].pk, "carol")])
    assert _seen(team) == {"alice"}
    team_caller.forget_names(None)  # the channel was lost: every name goes
    assert _seen(team) == set()
