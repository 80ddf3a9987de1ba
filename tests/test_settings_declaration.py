"""Adding a setting is one declaration (plus its engine rule).

A throwaway setting declared on an extended ``ScheduleSettings`` is picked up
by every derivation: the defaults, the validator (with its error message),
the OpenAPI schema (which refuses what the validator refuses), the page's
labels and the plugin import's camelCase aliases. Each check has its control:
the same input against the declaration without the setting.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import jsonschema_rs
import pytest
from django.forms import BooleanField

from curfew_core.api import openapi
from curfew_core.schedules import config as schedule_config
from curfew_core.schedules import plugin_import, values
from curfew_core.schedules.declaration import (
    ScheduleSettings,
    Setting,
    aliases_of,
    defaults_of,
    labels_of,
    settings_of,
)
from curfew_core.web.schedule.forms import settings_form_class


class WithBedtimeStory(ScheduleSettings):
    bedtime_story: Annotated[
        bool,
        Setting(
            "Bedtime story",
            "Tell one at lights-out.",
            values.parse_bool,
            alias="bedtimeStory",
        ),
    ] = False


def test_defaults_pick_it_up() -> None:
    assert defaults_of(WithBedtimeStory)["bedtime_story"] is False
    assert "bedtime_story" not in defaults_of(ScheduleSettings)
    assert "bedtime_story" not in schedule_config.DEFAULTS


def test_the_validator_picks_it_up() -> None:
    saved = schedule_config.apply_changes({}, {"bedtime_story": True}, WithBedtimeStory)
    assert saved["bedtime_story"] is True
    with pytest.raises(schedule_config.ConfigError) as caught:
        schedule_config.apply_changes({}, {"bedtime_story": "yes"}, WithBedtimeStory)
    assert caught.value.errors == {"bedtime_story": "must be true or false, not 'yes'"}
    with pytest.raises(schedule_config.ConfigError) as caught:
        schedule_config.apply_changes({}, {"bedtime_story": True})
    assert caught.value.errors == {"bedtime_story": "is not a setting"}


def test_the_openapi_schema_picks_it_up_and_agrees_with_the_validator() -> None:
    schema = openapi.settings_schema(WithBedtimeStory)["bedtime_story"]
    assert schema["type"] == "boolean"
    assert schema["description"] == "Tell one at lights-out."
    validator = jsonschema_rs.Draft202012Validator(schema)
    assert validator.is_valid(True)
    assert not validator.is_valid("yes")
    assert "bedtime_story" not in openapi.settings_schema(ScheduleSettings)


def test_labels_widgets_and_import_aliases_pick_it_up() -> None:
    assert labels_of(WithBedtimeStory)["bedtime_story"] == "Bedtime story"
    # The page's form derives its field from the declared type alone.
    assert isinstance(settings_form_class(WithBedtimeStory)().fields["bedtime_story"], BooleanField)
    assert "bedtime_story" not in settings_form_class(ScheduleSettings)().fields
    assert aliases_of(WithBedtimeStory)["bedtimeStory"] == "bedtime_story"
    settings, _overrides, unknown = plugin_import.translate(
        {"bedtimeStory": True}, WithBedtimeStory
    )
    # (The replies come along: an import without them gets the seed's terse pair.)
    assert settings == {"bedtime_story": True, **schedule_config.TERSE_REPLIES}
    assert not unknown
    settings, _overrides, unknown = plugin_import.translate({"bedtimeStory": True})
    assert unknown == ["bedtimeStory"]


def test_every_setting_is_declared_with_its_metadata() -> None:
    """The declaration covers exactly the settings the API serves."""
    assert tuple(settings_of()) == schedule_config.FIELDS
    assert set(openapi.settings_schema()) == set(schedule_config.FIELDS)
    assert all(setting.label and setting.help for setting in settings_of().values())


def test_a_field_without_a_setting_is_refused() -> None:
    class Bare(ScheduleSettings):
        forgotten: bool = False

    with pytest.raises(TypeError, match=r"forgotten needs exactly one Setting"):
        settings_of(Bare)


def test_the_engine_schedule_is_built_from_the_declaration() -> None:
    saved = schedule_config.apply_changes(
        {}, {"weekdays": {"fri": {"curfew_start": "00:30"}}, "winding_reasoning_effort": ""}
    )
    schedule = ScheduleSettings.model_validate(schedule_config.shown(saved)).schedule()
    built = schedule_config.build(saved)
    # (each build looks the holiday calendar up afresh: compare the rest)
    assert replace(schedule, holidays=built.holidays) == built
    assert schedule.weekdays[4].curfew_start == 30
    assert schedule.weekdays[4].lights_out == schedule.night.lights_out
    assert schedule.winding_reasoning_effort is None


def test_every_label_and_help_text_has_its_chinese() -> None:
    """The declaration's English is the msgid; the zh_Hans catalogue (the
    committed .mo the app loads) holds each one."""
    import gettext
    from pathlib import Path

    mo = Path(__file__).resolve().parents[1] / "locale/zh_Hans/LC_MESSAGES/django.mo"
    with mo.open("rb") as handle:
        catalogue = gettext.GNUTranslations(handle)
    english = [text for s in settings_of().values() for text in (s.label, s.help)]
    missing = [text for text in english if catalogue.gettext(text) == text]
    assert not missing, missing
