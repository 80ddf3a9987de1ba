"""Replies that say "curfew" (issue 24 item 4), through the API and the command.

A reply may hold ``{until}``; a typo of a placeholder is refused, naming it;
accounts made through Curfew get informative replies in their language, and
an imported seed config keeps the seed's terse pair."""

from __future__ import annotations

import datetime as dt
import json
from io import StringIO
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from curfew_core.models import AccountPreference, Schedule

SHANGHAI = ZoneInfo("Asia/Shanghai")
SCHEDULE = "/api/v1/schedule"
EN = ("Curfew: peak hours until {until}.", "Curfew: lights out until {until}.")
ZH = ("Curfew：高峰时段，{until} 后再来。", "Curfew：已熄灯，{until} 再说。")


def replies(user: User) -> tuple[str, str]:
    config = Schedule.objects.get(user=user).config
    return config["off_duty_reply"], config["lights_out_reply"]


def run(*args: str) -> None:
    call_command("curfew", *args, stdout=StringIO(), stderr=StringIO())


@pytest.mark.django_db
def test_a_typo_of_a_placeholder_is_refused_naming_it(api: Any) -> None:
    before = api.get(SCHEDULE).json()
    response = api.patch(SCHEDULE, {"off_duty_reply": "Back at {untill}."})
    assert response.status_code == 422
    assert response.json()["fields"] == {
        "off_duty_reply": "'{untill}' is not a placeholder; a reply may use {until}"
    }
    assert api.get(SCHEDULE).json() == before


@pytest.mark.django_db
def test_the_placeholder_and_other_braces_are_kept_and_filled(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reply = "Off until {until}. {} { until } {1}"
    assert api.patch(SCHEDULE, {"off_duty_reply": reply}).status_code == 200
    assert api.get(SCHEDULE).json()["off_duty_reply"] == reply
    monkeypatch.setattr(timezone, "now", lambda: dt.datetime(2026, 9, 29, 10, 0, tzinfo=SHANGHAI))
    verdict = api.post("/api/v1/verdict", {}).json()
    assert verdict["reply"] == "Off until 12:00. {} { until } {1}"


@pytest.mark.django_db
def test_a_user_made_by_the_command_gets_informative_replies(db: None) -> None:
    run("token", "--user", "newcomer", "--create-user")
    assert replies(User.objects.get(username="newcomer")) == EN


@pytest.mark.django_db
def test_the_demo_user_gets_informative_replies(db: None, tmp_path: Path) -> None:
    run("demo", "--user", "demo", "--token-file", str(tmp_path / "token"))
    assert replies(User.objects.get(username="demo")) == EN


@pytest.mark.django_db
def test_the_account_language_picks_the_words(db: None) -> None:
    from curfew_core.services.schedules import schedule_create_for_new_account

    chinese = User.objects.create_user("mei")
    AccountPreference.objects.create(user=chinese, language="zh-hans")
    schedule_create_for_new_account(user=chinese)
    assert replies(chinese) == ZH


@pytest.mark.django_db
def test_users_made_before_keep_the_terse_defaults(api: Any) -> None:
    # Made directly, as every account before this change was: no row, defaults.
    body = api.get(SCHEDULE).json()
    assert (body["off_duty_reply"], body["lights_out_reply"]) == ("。", "明天再说。")


@pytest.mark.django_db
def test_an_import_without_replies_gives_the_seed_terse_pair(db: None, tmp_path: Path) -> None:
    from curfew_core.services.schedules import schedule_update

    user = User.objects.create_user("newcomer")
    # Replies as a new account gets them.
    changes = {"off_duty_reply": EN[0], "lights_out_reply": EN[1]}
    schedule_update(user=user, changes=changes, source="test")
    path = tmp_path / "curfew.json"
    path.write_text(json.dumps({"curve": "step"}), encoding="utf-8")
    run("import-config", "--user", "newcomer", str(path))
    assert replies(user) == ("。", "明天再说。")
    path.write_text(json.dumps({"offDutyReply": "busy till {until}"}), encoding="utf-8")
    run("import-config", "--user", "newcomer", str(path))
    assert replies(user) == ("busy till {until}", "明天再说。")
