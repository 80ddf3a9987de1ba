"""A member renamed (or removed) while a gateway with a team key keeps their verdict.

The gateway keeps a team key's verdicts per member name, and with its change
stream live it keeps them until ``valid_until`` (up to a day), dropping one
member's when the stream names them. An operator renames a member (the admin,
a shell): the old name is no member any more, so the gateway must drop what it
keeps under it within about a second, and ask, and be refused. The control
client (no push) still serves its cached verdict, so the pushed client's
refusal was the stream's doing, not an expiry.

Redis only: the rename is committed in another process (as ``manage.py
shell`` does), which the in-memory layer does not carry.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from curfew_client import CurfewClient, CurfewRefused

from curfew_testkit.server import ServedApp
from tests.client.test_push_served import DEADLINE, eventually

TEAM = (
    "from django.contrib.auth.models import User\n"
    "from curfew_core.services.teams import member_add, team_create, team_token_create\n"
    "boss, alice = (User.objects.create_user(n) for n in ('boss', 'alice'))\n"
    "team = team_create(name='acme', admin=boss)\n"
    "member_add(team=team, user=alice)\n"
    "import datetime as dt\n"
    "from django.utils import timezone\n"
    "from curfew_core.schedules.override_commands import OverrideCommand\n"
    "from curfew_core.services.overrides import override_apply\n"
    "when = OverrideCommand('debug', dt.timedelta(hours=1), '2026-09-29 23:30')\n"
    "override_apply(user=alice, command=when, now=timezone.now())\n"
    "print(team_token_create(team=team)[1])\n"
)
RENAME = (
    "from django.contrib.auth.models import User\n"
    "alice = User.objects.get(username='alice')\n"
    "alice.username = 'alicia'\n"
    "alice.save()\n"
)


@pytest.fixture
def served(tmp_path: Path, redis_url: str) -> Iterator[ServedApp]:
    app = ServedApp(tmp_path, env={"CURFEW_MANIFEST_STATIC": "0", "REDIS_URL": redis_url})
    app.manage("migrate", "--no-input", "-v0")
    app.start()
    yield app
    app.terminate()
    app.wait_stopped(3)  # open streams would hold a graceful stop for its whole timeout


def test_a_renamed_members_old_name_is_dropped_by_a_pushed_gateway(served: ServedApp) -> None:
    key = served.manage("shell", "-c", TEAM).stdout.strip().splitlines()[-1]
    # No decision reports: the control's cached verdict for the old name would
    # be reported and refused (not a member any more), which is not this test's.
    pushed = CurfewClient(served.base_url, key, push=True, timeout=5.0, report_decisions=False)
    control = CurfewClient(served.base_url, key, timeout=5.0, report_decisions=False)
    try:
        eventually(lambda: pushed.cache.pushed, "the change stream is live")
        for client in (pushed, control):
            kept = client.verdict(session_id="s", user="alice")
            assert kept.origin == "server", kept.reason
            assert kept.max_age is not None
            assert kept.max_age > DEADLINE
        stale = control.verdict(session_id="s", user="alice")

        served.manage("shell", "-c", RENAME)

        def dropped() -> bool:
            return not [entry for entry in pushed.cache.entries if entry[3] == "alice"]

        eventually(dropped, "the pushed gateway drops the old name's verdict")
        with pytest.raises(CurfewRefused) as refused:
            pushed.verdict(session_id="s", user="alice")
        assert refused.value.status == 404
        assert pushed.verdict(session_id="s", user="alicia").origin == "server"
        # The control group: no push, so its cached verdict stands until max_age.
        assert control.verdict(session_id="s", user="alice") is stale
    finally:
        pushed.close()
        control.close()


LEAVE = (
    "from django.contrib.auth.models import User\n"
    "from curfew_core.models import Team\n"
    "from curfew_core.services.teams import member_remove\n"
    "alice, boss = User.objects.get(username='alice'), User.objects.get(username='boss')\n"
    "member_remove(team=Team.objects.get(name='acme'), user=alice, actor=boss)\n"
)


def test_a_member_who_left_is_dropped_by_a_pushed_gateway(served: ServedApp) -> None:
    """The same for a member removed from the team: the team key no longer
    answers for them, and the gateway no longer serves them its verdict."""
    key = served.manage("shell", "-c", TEAM).stdout.strip().splitlines()[-1]
    pushed = CurfewClient(served.base_url, key, push=True, timeout=5.0, report_decisions=False)
    try:
        eventually(lambda: pushed.cache.pushed, "the change stream is live")
        kept = pushed.verdict(session_id="s", user="alice")
        assert kept.origin == "server", kept.reason
        assert pushed.verdict(session_id="s", user="alice") is kept  # cached

        served.manage("shell", "-c", LEAVE)

        def dropped() -> bool:
            return not [entry for entry in pushed.cache.entries if entry[3] == "alice"]

        eventually(dropped, "the pushed gateway drops the verdict of who left")
        with pytest.raises(CurfewRefused) as refused:
            pushed.verdict(session_id="s", user="alice")
        assert refused.value.status == 404
    finally:
        pushed.close()
