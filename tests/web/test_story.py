"""The overview's words (curfew_core/web/schedule/story.py) at fixed instants of the
default schedule (Asia/Shanghai; winding 23:00-03:00, asleep until 09:00, peak
hours 09-12 and 14-18 on workdays, weekends valley)."""

from __future__ import annotations

import datetime as dt
import gettext
import zoneinfo
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import translation

from curfew_core.engine import decide
from curfew_core.engine.overrides import Overrides
from curfew_core.engine.schedule import Schedule
from curfew_core.schedules import config as schedule_config
from curfew_core.selectors.outlook import Outlook
from curfew_core.web.schedule import story

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
PARAGRAPHS = "a few paragraphs"
MONDAY_EVENING = dt.datetime(2026, 9, 28, 19, 0, tzinfo=SHANGHAI)
FRIDAY_EVENING = dt.datetime(2026, 9, 25, 19, 0, tzinfo=SHANGHAI)


@pytest.fixture(autouse=True)
def _english() -> Iterator[None]:
    with translation.override("en"):
        yield


def _schedule() -> Schedule:
    return schedule_config.build(schedule_config.default_config())


def _tell(
    at: dt.datetime, *, overrides: Overrides | None = None, enabled: bool = True, **config: object
) -> story.Story:
    schedule = schedule_config.build({**schedule_config.default_config(), **config})
    verdict = decide(at, schedule, overrides=overrides or Overrides())
    outlook = Outlook(at, schedule, overrides or Overrides(), None, None)
    return story.tell(verdict, outlook, enabled=enabled)


def _steps(told: story.Story) -> list[tuple[str, str, str]]:
    return [(step.starts, step.state, step.words) for step in told.steps]


def test_a_monday_evening_counts_down_to_the_night() -> None:
    told = _tell(MONDAY_EVENING)
    assert told.state == "on-duty"
    assert told.headline == "Your AI is working normally."
    assert told.countdown == "Gets sleepy in 4 h (23:00)."
    assert told.next_change == dt.datetime(2026, 9, 28, 23, 0, tzinfo=SHANGHAI)
    assert _steps(told) == [
        ("", "on-duty", "working normally"),
        ("23:00", "winding", "gets sleepy: answers shrink from a few pages to one sentence"),
        ("Tue 03:00", "lights-out", "asleep, replies “明天再说。”"),
        ("Tue 09:00", "off-duty", "off for peak hours, replies “。”"),
        ("Tue 12:00", "on-duty", "working normally"),
        ("Tue 14:00", "off-duty", "off for peak hours, replies “。”"),
    ]
    assert len(told.steps) == story.MAX_STEPS
    # The tokens are the detail: the engine's budgets at the ends of the stretch,
    # the last one the anchor at lights-out, as the Schedule table shows it.
    last_anchor = schedule_config.default_config()["anchors"][-1]
    assert last_anchor == ["03:00", 64]
    assert told.steps[1].tokens == "2048 → 64 tokens"
    lights_out = dt.datetime(2026, 9, 29, 3, 0, tzinfo=SHANGHAI)
    assert decide(lights_out - dt.timedelta(microseconds=1), _schedule()).budget == 64
    assert told.tomorrow == "Tomorrow (Tuesday): off 09:00–12:00 and 14:00–18:00 for peak hours."
    assert told.notes == ()


def test_tomorrow_a_valley_saturday() -> None:
    told = _tell(FRIDAY_EVENING)
    assert told.tomorrow == ("Tomorrow (Saturday) has no peak hours: your AI works all day.")
    # No peak hours on the Saturday: awake from 09:00 until the next night.
    assert ("Sat 09:00", "on-duty", "working normally") in _steps(told)
    assert "off-duty" not in {step.state for step in told.steps}


def test_a_night_cut_by_the_look_ahead_still_says_how_it_ends() -> None:
    # Saturday's night starts inside the 30 h look-ahead and ends past it: its
    # words must describe the whole night, down to one sentence at 03:00.
    told = _tell(FRIDAY_EVENING)
    last = told.steps[-1]
    assert (last.starts, last.state) == ("Sat 23:00", "winding")
    assert last.words == "gets sleepy: answers shrink from a few pages to one sentence"
    assert last.tokens == "2048 → 64 tokens"


def test_winding_now_says_how_long_the_answers_are() -> None:
    told = _tell(dt.datetime(2026, 9, 28, 23, 30, tzinfo=SHANGHAI))
    budget = decide(dt.datetime(2026, 9, 28, 23, 30, tzinfo=SHANGHAI), _schedule()).budget
    assert budget == 1824
    assert told.headline == "Your AI is getting sleepy: answers are kept to a few pages."
    assert told.countdown == "Asleep in 3 h 30 min (Tue 03:00)."


@pytest.mark.parametrize(
    ("language", "kept", "shrink"),
    [
        (
            "en",
            "Your AI is getting sleepy: answers are kept to a few pages.",
            "gets sleepy: answers shrink from a few pages to one sentence",
        ),
        ("zh-hans", "你的 AI 开始犯困了：回答限制在几页。", "开始犯困：回答从几页缩短到一句话"),
    ],
)
def test_a_long_budget_is_said_as_a_length(language: str, kept: str, shrink: str) -> None:
    """The longest answers are a length the sentences can hold: it said "answers
    are kept to long answers" (长篇回答: "回答限制在长篇回答")."""
    with translation.override(language):
        now = _tell(dt.datetime(2026, 9, 28, 23, 30, tzinfo=SHANGHAI))
        evening = _tell(MONDAY_EVENING)
    assert now.headline == kept
    assert evening.steps[1].words == shrink
    for _least, words in story.LENGTHS:
        with translation.override(language):
            assert "answers" not in str(words)
            assert "回答" not in str(words)


def test_overtime_says_when_the_schedule_takes_over() -> None:
    at = dt.datetime(2026, 9, 28, 23, 30, tzinfo=SHANGHAI)
    told = _tell(at, overrides=Overrides(overtime_until=at + dt.timedelta(hours=1)))
    assert told.headline == "Overtime: your AI works normally, whatever the schedule says."
    assert told.countdown == "Back to the schedule in 1 h (Tue 00:30)."
    assert told.next_change == at + dt.timedelta(hours=1)
    assert _steps(told)[:2] == [
        ("", "on-duty", "working normally (overtime)"),
        (
            "Tue 00:30",
            "winding",
            "gets sleepy: answers shrink from a few paragraphs to one sentence",
        ),
    ]


def test_forced_off_until_morning() -> None:
    morning = dt.datetime(2026, 9, 29, 9, 0, tzinfo=SHANGHAI)
    told = _tell(MONDAY_EVENING, overrides=Overrides(forced_off_until=morning))
    assert told.state == "lights-out"
    assert told.headline == (
        "Switched off by hand: gateways answer “明天再说。” without calling the model."
    )
    assert told.countdown == "Back to the schedule in 14 h (Tue 09:00)."
    assert _steps(told)[:2] == [
        ("", "lights-out", "switched off by hand"),
        ("Tue 09:00", "off-duty", "off for peak hours, replies “。”"),
    ]


def test_switched_off_curfew_says_so_and_nothing_else() -> None:
    told = _tell(MONDAY_EVENING, enabled=False)
    assert told.headline == "The curfew is switched off: every request passes."
    assert (told.countdown, told.steps, told.tomorrow, told.next_change) == ("", (), "", None)


def test_dry_run_is_noted() -> None:
    told = _tell(MONDAY_EVENING, dry_run=True)
    assert told.notes == ("Only watching: Curfew reports what it would do and holds nothing back.",)


@pytest.mark.parametrize(
    ("tokens", "words"),
    [
        (2048, "a few pages"),
        (1500, "a few pages"),
        (1499, "a few paragraphs"),
        (600, "a few paragraphs"),
        (200, "a paragraph"),
        (80, "a few sentences"),
        (79, "one sentence"),
        (1, "one sentence"),
    ],
)
def test_answer_length_in_words(tokens: int, words: str) -> None:
    assert story.answer_length(tokens) == words


@pytest.mark.parametrize(
    ("minutes", "words"),
    [
        (0, "less than a minute"),
        (45, "45 min"),
        (120, "2 h"),
        (135, "2 h 15 min"),
        (3000, "2 days"),
    ],
)
def test_durations_in_words(minutes: int, words: str) -> None:
    assert story.duration(dt.timedelta(minutes=minutes)) == words


def _translated(msgid: str) -> bool:
    mo = Path(settings.LOCALE_PATHS[0]) / "zh_Hans" / "LC_MESSAGES" / "django.mo"
    with mo.open("rb") as handle:
        return gettext.GNUTranslations(handle).gettext(msgid) != msgid


def test_the_story_in_chinese() -> None:
    needed = (
        "Your AI is working normally.",
        "Gets sleepy in %(left)s (%(at)s).",
        "%(h)s h",
        "working normally",
        "Tomorrow (%(day)s): off %(spans)s for peak hours.",
        " and ",
    )
    if not all(_translated(msgid) for msgid in needed):
        pytest.skip("the Chinese of the overview's words is not in the catalogue yet")
    with translation.override("zh-hans"):
        told = _tell(MONDAY_EVENING)
    for text in (told.headline, told.countdown, told.steps[0].words, told.tomorrow):
        # "AI" and "token" stay as they are in Chinese too; no other English.
        bare = text.replace("AI", "").replace("token", "")
        assert not any("a" <= char.lower() <= "z" for char in bare), text
    assert "23:00" in told.countdown
    assert "星期二" in told.tomorrow
