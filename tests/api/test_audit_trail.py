"""Every change to a schedule, override or token leaves one audit entry: who,
when, which door, what changed; never a secret. Shown on the settings page
and, read-only, in the admin."""

from __future__ import annotations

import json
import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import transaction

from curfew_core.models import ApiToken, AuditEntry, Override
from curfew_core.selectors.audit import audit_recent
from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create, token_revoke
from curfew_testkit.asgi_client import Client
from tests.api.conftest import local
from tests.web.forms import as_post, form_fields


def _entries(user: User) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(user=user).order_by("id"))


def _only_new(user: User, before: int) -> AuditEntry:
    entries = _entries(user)[before:]
    assert len(entries) == 1, [(e.subject, e.action, e.channel) for e in entries]
    return entries[0]


def _no_secrets(user: User, *raws: str) -> None:
    """No audit row holds a raw token or a token digest of this user."""
    text = json.dumps([[e.changes, e.actor_name, e.action] for e in _entries(user)])
    digests = ApiToken.objects.filter(user=user).values_list("digest", flat=True)
    for secret in [*raws, *digests]:
        assert secret not in text


@pytest.fixture
def page(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


# -- the API -------------------------------------------------------------------


@pytest.mark.django_db
def test_api_schedule_save_is_audited_with_old_and_new_values(api: Any) -> None:
    before = len(_entries(api.user))
    assert (
        api.patch("/api/v1/schedule", {"curve": "step", "curfew_start": "22:00"}).status_code == 200
    )
    entry = _only_new(api.user, before)
    assert (entry.channel, entry.subject, entry.action) == ("api", "schedule", "saved")
    assert (entry.actor, entry.actor_name) == (api.user, "ada")
    assert entry.changes == {
        "version": 1,
        "fields": {
            "curve": {"old": "linear", "new": "step"},
            "curfew_start": {"old": "23:00", "new": "22:00"},
            # The curve moved with the night, and the trail says so.
            "anchors": {
                "old": [
                    ["23:00", 2048],
                    ["00:00", 1600],
                    ["01:00", 800],
                    ["02:00", 320],
                    ["03:00", 64],
                ],
                "new": [
                    ["22:00", 2048],
                    ["23:15", 1600],
                    ["00:30", 800],
                    ["01:45", 320],
                    ["03:00", 64],
                ],
            },
        },
    }
    # Nothing changed, nothing saved, nothing audited.
    assert api.patch("/api/v1/schedule", {"curve": "step"}).status_code == 200
    assert len(_entries(api.user)) == before + 1
    _no_secrets(api.user, api.token)


@pytest.mark.django_db
def test_api_override_is_audited_with_the_verb_and_resulting_times(api: Any, clock: Any) -> None:
    clock.set(local("2026-09-29 20:00"))
    before = len(_entries(api.user))
    assert api.post("/api/v1/overrides", {"overtime": "30m"}).status_code == 200
    entry = _only_new(api.user, before)
    assert (entry.channel, entry.subject, entry.action, entry.actor) == (
        "api",
        "override",
        "overtime",
        api.user,
    )
    assert entry.changes == {
        "overtime_until": local("2026-09-29 20:30").isoformat(),
        "forced_off_until": None,
        "debug_at": None,
        "debug_until": None,
    }


@pytest.mark.django_db
def test_the_trail_speaks_the_users_own_clock(api: Any, clock: Any) -> None:
    """Times on the page are the user's wall clock (Asia/Shanghai by default),
    not the server's UTC: "overtime until 20:30", not "12:30+00:00"."""
    clock.set(local("2026-09-29 20:00"))
    assert api.post("/api/v1/overrides", {"overtime": "30m"}).status_code == 200
    [row] = [r for r in audit_recent(api.user, 10, tz="Asia/Shanghai") if r.subject == "override"]
    assert row.at.utcoffset() is not None
    assert row.at.utcoffset().total_seconds() == 8 * 3600
    assert row.details == ("overtime_until: 2026-09-29 20:30",)


def test_a_refused_change_leaves_no_entry(api: Any) -> None:
    before = len(_entries(api.user))
    assert api.patch("/api/v1/schedule", {"curve": "zigzag"}).status_code == 400
    assert api.patch("/api/v1/schedule", {"curve": "step", "version": 99}).status_code == 409
    assert api.post("/api/v1/overrides", {"overtime": "99h"}).status_code == 422
    assert len(_entries(api.user)) == before


@pytest.mark.django_db
def test_a_rolled_back_change_leaves_no_entry(user: User) -> None:
    def save_then_fail() -> None:
        with transaction.atomic():
            schedule_update(user=user, changes={"curve": "step"}, source="test")
            raise RuntimeError("something later in the same transaction failed")

    with pytest.raises(RuntimeError):
        save_then_fail()
    assert _entries(user) == []


# -- the page ------------------------------------------------------------------


@pytest.mark.django_db
def test_page_changes_are_audited(page: Client, user: User) -> None:
    html = page.get("/schedule/").content.decode()
    form = as_post(form_fields(html, "schedule-form"), curve="step")
    assert page.post("/schedule/", form).status_code == 302
    entry = _only_new(user, 0)
    assert (entry.channel, entry.subject, entry.actor) == ("page", "schedule", user)
    assert entry.changes["fields"] == {"curve": {"old": "linear", "new": "step"}}

    assert page.post("/overrides/", {"verb": "off"}).status_code == 302
    entry = _only_new(user, 1)
    assert (entry.channel, entry.subject, entry.action) == ("page", "override", "off")
    assert entry.changes["forced_off_until"] is not None

    response = page.post("/tokens/", {"name": "laptop", "kind": "api"})
    assert response.status_code == 201
    token = ApiToken.objects.get(user=user, name="laptop")
    entry = _only_new(user, 2)
    assert (entry.channel, entry.subject, entry.action) == ("page", "token", "created")
    assert entry.changes == {"kind": "api", "name": "laptop", "prefix": token.prefix}

    assert page.post(f"/tokens/{token.pk}/revoke/", {"confirm": "1"}).status_code == 302
    entry = _only_new(user, 3)
    assert (entry.channel, entry.subject, entry.action) == ("page", "token", "revoked")
    _no_secrets(user)


@pytest.mark.django_db
def test_capsule_panel_token_changes_are_audited_as_the_page(page: Client, user: User) -> None:
    response = page.post("/embed/tokens/", {"name": "dashboard"})
    assert response.status_code == 200
    token = ApiToken.objects.get(user=user, kind="embed")
    entry = _only_new(user, 0)
    assert (entry.channel, entry.action, entry.changes["kind"]) == ("page", "created", "embed")
    assert page.post(f"/embed/tokens/{token.pk}/revoke").status_code == 302
    assert _only_new(user, 1).action == "revoked"
    _no_secrets(user)


@pytest.mark.django_db
def test_the_settings_page_shows_recent_changes_without_secrets(
    page: Client, user: User, api: Any
) -> None:
    api.patch("/api/v1/schedule", {"off_duty_reply": "Busy <b>now</b>."})
    html = page.get("/activity/").content.decode()
    assert 'id="audit"' in html
    assert "Reply during peak hours: " in html  # the setting by its label, not its key
    assert "Busy &lt;b&gt;now&lt;/b&gt;." in html  # escaped
    token = ApiToken.objects.get(user=user)
    assert token.prefix in html  # the token created for ``api`` is listed by prefix
    assert api.token not in html
    assert token.digest not in html
    rows = audit_recent(user, 1)
    assert len(rows) == 1
    assert rows[0].subject == "schedule"


@pytest.mark.django_db
def test_each_user_sees_only_their_own_trail(page: Client, other_api: Any) -> None:
    other_api.patch("/api/v1/schedule", {"off_duty_reply": "grace was here"})
    assert "grace was here" not in page.get("/activity/").content.decode()


# -- the command line ----------------------------------------------------------


@pytest.mark.django_db
def test_command_changes_are_audited_as_the_system(user: User, tmp_path: Any) -> None:
    out = StringIO()
    call_command("curfew", "overtime", "30m", "--user", "ada", stdout=out)
    entry = _only_new(user, 0)
    assert (entry.channel, entry.action, entry.actor, entry.actor_name) == (
        "command",
        "overtime",
        None,
        "system",
    )
    call_command("curfew", "token", "--user", "ada", "--name", "cli", stdout=out)
    entry = _only_new(user, 1)
    assert (entry.channel, entry.subject, entry.action) == ("command", "token", "created")
    plugin = tmp_path / "plugin.json"
    plugin.write_text(json.dumps({"curfewStart": "22:30"}))
    call_command("curfew", "import-config", "--user", "ada", str(plugin), stdout=out)
    entry = _only_new(user, 2)
    assert (entry.channel, entry.subject) == ("command", "schedule")
    assert entry.changes["fields"]["curfew_start"] == {"old": "23:00", "new": "22:30"}
    raw = next(line for line in out.getvalue().splitlines() if line.startswith("cfw_"))
    _no_secrets(user, raw)


# -- the admin -----------------------------------------------------------------


@pytest.fixture
def staff(db: None) -> tuple[Client, User]:
    root = User.objects.create_superuser("root", password="correct horse battery")
    client = Client()
    client.force_login(root)
    return client, root


@pytest.mark.django_db
def test_admin_actions_go_through_the_services_and_are_audited(
    staff: tuple[Client, User], api: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client, root = staff
    api.post("/api/v1/overrides", {"off": True})
    override = api.user.curfew_override
    before = len(_entries(api.user))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/admin/curfew_core/override/",
            {"action": "back_to_schedule", "_selected_action": [override.pk]},
        )
    assert response.status_code == 302
    entry = _only_new(api.user, before)
    assert (entry.channel, entry.action, entry.actor, entry.actor_name) == (
        "admin",
        "auto",
        root,
        "root",
    )
    assert api.get("/api/v1/state").json()["forced"] is False

    token = ApiToken.objects.get(user=api.user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/admin/curfew_core/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}
        )
    assert response.status_code == 302
    entry = _only_new(api.user, before + 1)
    assert (entry.channel, entry.subject, entry.action, entry.actor) == (
        "admin",
        "token",
        "revoked",
        root,
    )
    assert api.get("/api/v1/state").status_code == 401  # revoked through the service
    _no_secrets(api.user, api.token)


@pytest.mark.django_db
def test_the_audit_trail_is_read_only_in_the_admin(staff: tuple[Client, User], api: Any) -> None:
    client, _ = staff
    api.patch("/api/v1/schedule", {"curve": "step"})
    entry = AuditEntry.objects.get(user=api.user, subject="schedule")
    listing = client.get("/admin/curfew_core/auditentry/")
    assert listing.status_code == 200
    assert b"schedule" in listing.content
    assert client.get(f"/admin/curfew_core/auditentry/{entry.pk}/change/").status_code == 200
    assert client.get("/admin/curfew_core/auditentry/add/").status_code == 403
    assert (
        client.post(
            f"/admin/curfew_core/auditentry/{entry.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


@pytest.mark.django_db
def test_the_recent_changes_section_speaks_chinese_too(page: Client) -> None:
    html = page.get("/activity/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "最近的更改" in html


# -- every door names itself ---------------------------------------------------

WRITES = {"schedule_update", "override_apply", "token_create", "token_revoke"}


def test_every_door_names_its_channel_when_it_writes() -> None:
    """A call from a door that forgot ``channel=`` would be recorded as "system"."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "curfew_core"
    calls = []
    for path in root.rglob("*.py"):
        if "services" in path.parts or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name in WRITES:
                    calls.append((path.relative_to(root), node.lineno, node))
    assert len(calls) >= 14  # the control: the walk finds the doors' writes
    for path, line, node in calls:
        keywords = {keyword.arg for keyword in node.keywords}
        assert "channel" in keywords, f"{path}:{line} writes without naming its channel"


@pytest.mark.django_db
def test_each_admin_action_leaves_one_entry_per_user_and_a_revoke_none_for_no_change(
    staff: tuple[Client, User], django_capture_on_commit_callbacks: Any
) -> None:
    # Issue 23, "not yet tried": the admin's two actions over several users at
    # once, and over rows that need no change.
    client, root = staff
    ada = User.objects.create_user("ada", password="x")
    bob = User.objects.create_user("bob", password="x")
    cy = User.objects.create_user("cy", password="x")
    for person in (ada, bob):
        Override.objects.create(user=person, forced_off_until=local("2099-01-01 09:00"))
    Override.objects.create(user=cy)  # nothing active
    before = {person: len(_entries(person)) for person in (ada, bob, cy)}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/admin/curfew_core/override/",
            {
                "action": "back_to_schedule",
                "_selected_action": [o.pk for o in Override.objects.all()],
            },
        )
    assert response.status_code == 302
    # One entry per selected person, theirs alone. cy had nothing to cancel:
    # the command is recorded all the same, as every door records each
    # override command (services.overrides.override_apply).
    for person in (ada, bob, cy):
        entry = _only_new(person, before[person])
        assert (entry.channel, entry.action, entry.actor_name) == ("admin", "auto", "root")
        assert Override.objects.get(user=person).forced_off_until is None

    ada_token, ada_raw = token_create(user=ada, name="a")
    bob_token, _ = token_create(user=bob, name="b")
    gone, _ = token_create(user=cy, name="c")
    token_revoke(user=cy, token_id=gone.pk)
    before = {person: len(_entries(person)) for person in (ada, bob, cy)}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/admin/curfew_core/apitoken/",
            {"action": "revoke", "_selected_action": [ada_token.pk, bob_token.pk, gone.pk]},
            follow=True,
        )
    assert "2 token(s) revoked." in response.content.decode()
    for person, token in ((ada, ada_token), (bob, bob_token)):
        entry = _only_new(person, before[person])
        assert (entry.channel, entry.subject, entry.action, entry.actor) == (
            "admin",
            "token",
            "revoked",
            root,
        )
        assert entry.changes.get("name") == token.name
    assert len(_entries(cy)) == before[cy], "already revoked: nothing recorded"
    _no_secrets(ada, ada_raw)

    # Each person sees what the admin did to their account on their own page.
    page = Client()
    page.force_login(ada)
    html = page.get("/activity/").content.decode()
    rows = re.findall(r'<tr data-subject="(\w+)">(.*?)</tr>', html, re.S)
    by_root = [
        subject for subject, row in rows if "<td>root</td>" in row and "<td>admin</td>" in row
    ]
    assert sorted(by_root) == ["override", "token"], rows
