"""Recent changes shows every day a per-day edit changed, before → after
(issue 39): the issue's page cut ``weekdays`` to "wed: 22:30/…" on both
sides, so a Saturday change was invisible."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.contrib.auth.models import User

from curfew_core.selectors.audit import audit_recent
from curfew_core.services.schedules import schedule_update
from curfew_core.web import words
from tests.web.conftest import PageClient

pytestmark = pytest.mark.django_db

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}

WEEK = {
    "mon": {"curfew_start": "23:30"},
    "tue": {"curfew_start": "23:30"},
    "wed": {"curfew_start": "22:30", "lights_out": "02:00", "wake_up": "08:30"},
    "thu": {"curfew_start": "23:30"},
    "fri": {"curfew_start": "00:30", "lights_out": "04:00"},
}


def _audit_lines(html: str) -> list[str]:
    """The lines of the newest change in Recent changes."""
    table = re.search(r'<section class="card" id="audit".*?</section>', html, re.S)
    assert table is not None
    row = re.search(r"<tbody>\s*<tr.*?</tr>", table.group(0), re.S)
    assert row is not None
    return [
        unescape(line).strip()
        for line in re.findall(r'<span class="muted small">(.*?)</span>', row.group(0))
    ]


def test_a_saturday_edit_is_shown_before_and_after(page: PageClient, user: User) -> None:
    schedule_update(user=user, changes={"weekdays": WEEK}, source="test", actor=user)
    # The edit: Saturday gets its own night; Wednesday's sleepy time moves.
    changed = {
        **WEEK,
        "wed": {**WEEK["wed"], "curfew_start": "22:00"},
        "sat": {"curfew_start": "01:00"},
    }
    schedule_update(user=user, changes={"weekdays": changed}, source="test", actor=user)
    lines = _audit_lines(page.get("/activity/").content.decode())
    # Only the days and times that changed, each before → after.
    assert lines == [
        "Wednesday: Gets sleepy at: 22:30 → 22:00",
        "Saturday: Gets sleepy at: — → 01:00",
    ]
    # Control: the whole dict as one value, as it was said before, is cut
    # before Saturday: the edit would be invisible.
    said = words._audit_value("weekdays", changed)
    assert said.endswith("…")
    assert "sat" not in said
    zh = _audit_lines(page.get("/activity/", **ZH).content.decode())
    assert any(line.startswith("星期六") and "— → 01:00" in line for line in zh)


def test_a_day_taken_back_to_every_night_says_so(user: User) -> None:
    schedule_update(
        user=user,
        changes={"weekdays": {"sat": {"curfew_start": "01:00", "lights_out": "04:00"}}},
        source="test",
        actor=user,
    )
    schedule_update(user=user, changes={"weekdays": {}}, source="test", actor=user)
    [latest, first, *_] = audit_recent(user, 10)
    assert [(i.day, i.key, i.old, i.new) for i in latest.items] == [
        ("sat", "curfew_start", "01:00", None),
        ("sat", "lights_out", "04:00", None),
    ]
    assert [(i.day, i.key, i.old, i.new) for i in first.items] == [
        ("sat", "curfew_start", None, "01:00"),
        ("sat", "lights_out", None, "04:00"),
    ]
    # The admin's English lines name the day too.
    assert latest.details == (
        "weekdays sat curfew_start: 01:00 → null",
        "weekdays sat lights_out: 04:00 → null",
    )
