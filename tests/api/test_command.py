"""``manage.py curfew``: tokens, overrides, status, the plugin config import
and the demo user, each checked through what it stored or what the API says."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError

from curfew_core.engine.schedule import DEFAULT_PERSONA_EN, DEFAULT_TIER_TEXTS_EN
from curfew_core.models import ApiToken, Override
from curfew_core.schedules.config import DEFAULTS, FIELDS
from curfew_core.selectors.bundles import bundle_for
from curfew_core.services.schedules import schedule_update
from curfew_testkit.asgi_client import Client
from curfew_testkit.server import ROOT
from tests.api.conftest import FrozenClock, local, stored


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("curfew", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def bearer(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1].strip()


# -- tokens -------------------------------------------------------------------


@pytest.mark.django_db
def test_token_create_user_prints_a_working_token_last(db: None) -> None:
    out, _ = run("token", "--user", "newcomer", "--create-user")
    token = last_line(out)
    user = User.objects.get(username="newcomer")
    assert not user.has_usable_password()  # an API user, not a login
    response = bearer(token).get("/api/v1/schedule")
    assert response.status_code == 200
    # The defaults, but for replies that say what happened (issue 24 item 4),
    # and the tired persona in the account's language (English here; issue 25).
    informative = {
        "off_duty_reply": "Curfew: peak hours until {until}.",
        "lights_out_reply": "Curfew: lights out until {until}.",
        "tired_persona": DEFAULT_PERSONA_EN,
        "tier_texts": list(DEFAULT_TIER_TEXTS_EN),
    }
    assert {k: response.json()[k] for k in FIELDS} == {**DEFAULTS, **informative}
    # And it is that user's: a PATCH lands on their schedule.
    bearer(token).patch("/api/v1/schedule", {"curve": "step"}, content_type="application/json")
    assert stored(user)["config"]["curve"] == "step"


@pytest.mark.django_db
def test_a_request_in_chinese_before_the_command_leaves_its_words_english() -> None:
    """A request leaves its language active in the thread; the command must not
    take it up (CI caught this when a Chinese page test ran just before)."""
    Client(HTTP_ACCEPT_LANGUAGE="zh-Hans").get("/account/login/")
    out, _ = run("token", "--user", "newcomer", "--create-user")
    response = bearer(last_line(out)).get("/api/v1/schedule")
    assert response.json()["tired_persona"] == DEFAULT_PERSONA_EN
    assert response.json()["off_duty_reply"] == "Curfew: peak hours until {until}."


@pytest.mark.django_db
def test_token_for_an_existing_user_is_a_new_token_each_time(user: User) -> None:
    first = last_line(run("token", "--user", user.username)[0])
    second = last_line(run("token", "--user", user.username)[0])
    assert first != second
    for token in (first, second):
        assert bearer(token).get("/api/v1/state").status_code == 200
    assert user.check_password("correct horse battery")  # untouched


@pytest.mark.django_db
def test_embed_token_is_printed_last_and_is_not_an_api_token(user: User) -> None:
    token = last_line(run("embed-token", "--user", user.username)[0])
    row = ApiToken.objects.get(user=user, kind=ApiToken.Kind.EMBED)
    assert token.startswith(row.prefix)
    assert bearer(token).get("/api/v1/state").status_code == 401


@pytest.mark.django_db
@pytest.mark.parametrize(
    "args",
    [
        ("token", "--user", "nobody"),
        ("status", "--user", "nobody"),
        ("overtime", "30m", "--user", "nobody"),
        ("import-config", "--user", "nobody", "/dev/null"),
    ],
)
def test_unknown_user_is_a_clear_error(args: tuple[str, ...]) -> None:
    with pytest.raises(CommandError, match="no user 'nobody'"):
        run(*args)
    assert not User.objects.filter(username="nobody").exists()


# -- overrides and status -----------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_overrides_from_the_terminal_match_the_api(user: User, clock: FrozenClock) -> None:
    clock.set(local("2026-09-30 03:10"))
    out, _ = run("status", "--user", user.username)
    assert "lights-out" in out

    out, _ = run("overtime", "30m", "--user", user.username)
    assert Override.objects.get(user=user).overtime_until == clock.now + timedelta(minutes=30)
    assert out.startswith("on-duty — Working · ")
    assert "lights-out" in out  # what the schedule alone says

    run("off", "--user", user.username)
    row = Override.objects.get(user=user)
    assert row.overtime_until is None
    assert row.forced_off_until == local("2026-09-30 09:00")

    run("debug", "01:30", "--user", user.username)
    assert Override.objects.get(user=user).debug_at == local("2026-10-01 01:30")
    run("debug", "2026-09-29", "23:30", "--user", user.username)  # date and time as two words
    assert Override.objects.get(user=user).debug_at == local("2026-09-29 23:30")
    run("debug", "clear", "--user", user.username)
    assert Override.objects.get(user=user).debug_at is None
    assert Override.objects.get(user=user).forced_off_until is not None  # untouched by clear

    run("auto", "--user", user.username)
    row = Override.objects.get(user=user)
    assert (row.overtime_until, row.forced_off_until, row.debug_at) == (None, None, None)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("overtime", "0m"), "positive"),
        (("overtime", "abc"), "not a duration"),
        (("overtime", "25h"), "24h"),
        (("debug", "25:00"), "not a moment"),
        (("debug", "9999-12-31", "23:00"), "out of range"),
    ],
)
def test_bad_override_words_change_nothing(
    user: User, clock: FrozenClock, args: tuple[str, ...], problem: str
) -> None:
    clock.set(local("2026-09-30 03:10"))
    run("overtime", "10m", "--user", user.username)
    before = stored(user)
    with pytest.raises(CommandError, match=problem):
        run(*args, "--user", user.username)
    assert stored(user) == before


# -- import-config ------------------------------------------------------------

PLUGIN = {
    "enabled": True,
    "timezone": "Asia/Tokyo",
    "wakeUp": "08:30",
    "curfewStart": "22:30",
    "lightsOut": "02:30",
    "curve": "easeIn",
    "anchors": [["22:30", 3000], ["00:30", 900], ["02:30", 100]],
    "offDutyReply": "下班了。",
    "lightsOutReply": "睡了。",
    "peakShift": True,
    "peakWindows": [[9, 12], [14, 18]],
    "weekendValley": False,
    "holidays": {"2026-10-09": True, "2026-10-10": False},
    "tiredPersona": "You are a little tired.",
    "tierTexts": ["keep it short", "shorter", "one line"],
    "denyToolsWhenOffDuty": False,
    "applyToSubagents": False,
    "windingReasoningEffort": "low",
    "dryRun": False,
    "debugNow": "2026-09-30 01:00",
    "exemptSessions": ["long-job"],
    "safetyMaxTokens": 1024,
    "theme": "dark",
    "statusBar": {"position": "left"},
}


def write(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "curfew.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.mark.django_db
def test_import_translates_every_plugin_key(user: User, clock: FrozenClock, tmp_path: Path) -> None:
    schedule_update(user=user, changes={"holiday_calendar": "HK"}, source="test")
    version = stored(user)["version"]
    out, err = run("import-config", "--user", user.username, write(tmp_path, PLUGIN))

    config = stored(user)["config"]
    assert config == {
        **DEFAULTS,
        "holiday_calendar": "HK",  # not in the file: left alone
        "enabled": True,
        "timezone": "Asia/Tokyo",
        "wake_up": "08:30",
        "curfew_start": "22:30",
        "lights_out": "02:30",
        "curve": "ease_in",
        "anchors": [["22:30", 3000], ["00:30", 900], ["02:30", 100]],
        # The curve's places through the wind-down, kept beside the settings.
        "anchor_positions": ["0", "1/2", "1"],
        "off_duty_reply": "下班了。",
        "lights_out_reply": "睡了。",
        "peak_shift": True,
        "peak_windows": [["09:00", "12:00"], ["14:00", "18:00"]],
        "weekend_valley": False,
        "extra_holidays": ["2026-10-09"],
        "extra_workdays": ["2026-10-10"],  # false in the plugin's map: a day worked
        "tired_persona": "You are a little tired.",
        "tier_texts": ["keep it short", "shorter", "one line"],
        "deny_tools_when_off_duty": False,
        "apply_to_subagents": False,
        "winding_reasoning_effort": "low",
        "dry_run": False,
        "exempt_sessions": ["long-job"],
        "safety_max_tokens": 1024,
    }
    assert stored(user)["version"] == version + 1  # one save, one revision
    assert stored(user)["revisions"][0] == (version + 1, "import")
    # debugNow is the time machine, read in the imported timezone.
    from zoneinfo import ZoneInfo

    debug_at = Override.objects.get(user=user).debug_at
    assert debug_at is not None
    assert debug_at.astimezone(ZoneInfo("Asia/Tokyo")).strftime("%Y-%m-%d %H:%M") == (
        "2026-09-30 01:00"
    )
    # Unknown keys are reported, not silently dropped.
    assert "'theme'" in err
    assert "'statusBar'" in err
    assert "version" in out


@pytest.mark.django_db
def test_import_changes_only_the_keys_present(user: User, tmp_path: Path) -> None:
    schedule_update(user=user, changes={"curve": "step", "wake_up": "07:00"}, source="test")
    before = stored(user)
    _, err = run(
        "import-config",
        "--user",
        user.username,
        write(tmp_path, {"lightsOut": "02:00", "anchors": [[23, 2048], [2, 64]]}),
    )
    after = stored(user)
    assert err == ""
    changed = {k for k in FIELDS if after["config"][k] != before["config"][k]}
    assert changed == {"lights_out", "anchors"}
    assert after["config"]["anchors"] == [["23:00", 2048], ["02:00", 64]]
    assert after["config"]["curve"] == "step"
    assert after["override"] is None  # no debugNow in the file: no override


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"wakeUp": "25:00", "curve": "easeIn"}, "wakeUp"),
        ({"curve": "cubic", "dryRun": True}, "curve"),
        ({"timezone": "Mars/Base", "dryRun": True}, "timezone"),
        ({"peakWindows": [[9, 25]], "dryRun": True}, "peakWindows"),
        ({"anchors": [], "dryRun": True}, "anchors"),
        ({"safetyMaxTokens": 10, "dryRun": True}, "safetyMaxTokens"),
        ({"holidays": {"2026-02-30": True}, "dryRun": True}, "holidays"),
        ({"debugNow": "not a time", "dryRun": True}, "debugNow"),
        ({"debugNow": 1790000000, "dryRun": True}, "debugNow"),
        ([1, 2, 3], "object"),
    ],
)
def test_import_with_a_bad_value_changes_nothing(
    user: User, tmp_path: Path, data: Any, named: str
) -> None:
    schedule_update(user=user, changes={"curve": "step"}, source="test")
    before = stored(user)
    cache.clear()  # cold, so a read inside the failed import could fill it
    with pytest.raises(CommandError, match="nothing changed") as excinfo:
        run("import-config", "--user", user.username, write(tmp_path, data))
    assert named in str(excinfo.value)
    assert stored(user) == before
    # Nor does the cache hold anything the failed import saw.
    assert bundle_for(user.pk).version == before["version"]
    assert bundle_for(user.pk).config == before["config"]


@pytest.mark.django_db
def test_import_of_a_missing_or_broken_file_is_a_clear_error(user: User, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="cannot read"):
        run("import-config", "--user", user.username, str(tmp_path / "absent.json"))
    broken = tmp_path / "broken.json"
    broken.write_text("{wakeUp: 8}", encoding="utf-8")
    with pytest.raises(CommandError, match="not valid JSON"):
        run("import-config", "--user", user.username, str(broken))
    assert stored(user)["version"] is None  # never even created a schedule


@pytest.mark.django_db(transaction=True)
def test_import_reaches_the_next_verdict(user: User, tmp_path: Path) -> None:
    client = bearer(last_line(run("token", "--user", user.username)[0]))
    peak = {"at": "2026-09-29T10:00:00+08:00"}

    def reply() -> Any:
        response = client.post("/api/v1/verdict", peak, content_type="application/json")
        return response.json()["reply"]

    assert reply() == "。"  # and now cached
    run("import-config", "--user", user.username, write(tmp_path, {"offDutyReply": "busy"}))
    assert reply() == "busy"


# -- demo ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_demo_prints_the_same_token_run_after_run(tmp_path: Path) -> None:
    # Issue 23, finding 8: every run revoked the last demo token, silently,
    # so a gateway set up with yesterday's was refused today.
    kept = tmp_path / ".local" / "demo_token"
    out, _ = run("demo", "--user", "demo", "--token-file", str(kept))
    assert "demo / demo" in out
    first = last_line(out).split()[-1]
    assert bearer(first).get("/api/v1/state").status_code == 200
    assert User.objects.get(username="demo").check_password("demo")
    assert kept.read_text().strip() == first
    assert kept.stat().st_mode & 0o777 == 0o600, "the raw key, readable by its owner only"

    out, _ = run("demo", "--user", "demo", "--token-file", str(kept))
    assert last_line(out) == f"demo API token: {first}"
    assert "same demo API token as last time" in out
    assert bearer(first).get("/api/v1/state").status_code == 200
    assert ApiToken.objects.filter(user__username="demo", revoked_at__isnull=True).count() == 1


@pytest.mark.django_db(transaction=True)
def test_demo_without_its_kept_key_makes_one_and_names_the_earlier_still_live(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "demo_token"
    out, _ = run("demo", "--user", "demo", "--token-file", str(kept))
    first = last_line(out).split()[-1]
    kept.unlink()  # .local/ deleted, or another checkout
    out, _ = run("demo", "--user", "demo", "--token-file", str(kept))
    second = last_line(out).split()[-1]
    assert second != first
    assert kept.read_text().strip() == second
    assert f"earlier one(s) ({first[:12]}…) still work" in out
    # Nothing was revoked: a gateway using the first keeps working.
    assert bearer(first).get("/api/v1/state").status_code == 200
    assert bearer(second).get("/api/v1/state").status_code == 200
    # A kept file with someone else's (or a revoked) token is not printed as the demo's.
    kept.write_text("cfw_not-a-live-token\n")
    out, _ = run("demo", "--user", "demo", "--token-file", str(kept))
    third = last_line(out).split()[-1]
    assert third not in (first, second, "cfw_not-a-live-token")
    assert bearer(third).get("/api/v1/state").status_code == 200


def test_make_run_keeps_the_demo_token_in_local() -> None:
    # make run's own command line (tests/readme/test_make_run.py runs it whole).
    done = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "manage.py curfew demo --user demo --token-file .local/demo_token" in done.stdout


@pytest.mark.django_db
def test_demo_keeps_a_password_someone_set(db: None) -> None:
    User.objects.create_user("demo", password="chosen-by-hand")
    out, _ = run("demo", "--user", "demo")
    assert "password unchanged" in out
    assert User.objects.get(username="demo").check_password("chosen-by-hand")
