"""The page's Django form is generated from the declared settings: a setting
added to the declaration gets its field, label, help, limit and choices with no
edit to the form, and the form's values go to the one validation layer."""

from __future__ import annotations

from typing import Annotated, Literal

from django.http import QueryDict
from pydantic import StringConstraints

from curfew_core.schedules import config as schedule_config
from curfew_core.schedules import values as v
from curfew_core.schedules.declaration import ScheduleSettings, Setting, labels_of
from curfew_core.web.schedule.forms import Kind, ScheduleSettingsForm, settings_form_class


class _Extended(ScheduleSettings):
    """The real declaration plus throwaway settings, one of each plain kind."""

    nap_allowed: Annotated[bool, Setting("Nap allowed", "Naps pass.", v.parse_bool)] = False
    nap_song: Annotated[
        str,
        StringConstraints(max_length=7),
        Setting("Nap song", "Hummed at naps.", v.text_parser(allow_empty=True)),
    ] = "la"
    nap_mood: Annotated[
        Literal["calm", "grumpy"] | None,
        Setting("Nap mood", "How naps feel.", lambda value: value),
    ] = None


def test_a_declared_setting_gets_its_field_with_no_edit_to_the_form() -> None:
    form = settings_form_class(_Extended)()
    assert form.kinds["nap_allowed"] == (Kind.CHECKBOX, False)
    assert str(form.fields["nap_song"].label) == "Nap song"
    assert str(form.fields["nap_song"].help_text) == "Hummed at naps."
    assert 'maxlength="7"' in str(form["nap_song"])
    html = str(form["nap_mood"])
    assert '<option value="calm">' in html
    assert '<option value="grumpy">' in html
    assert '<option value="" selected>' in html  # optional: "none" is offered


def test_every_plain_setting_has_a_field_with_the_declared_label() -> None:
    fields = ScheduleSettingsForm.base_fields
    rows = {"anchors", "peak_windows", "weekdays"}  # widgets of their own
    assert set(fields) == set(schedule_config.FIELDS) - rows
    for name, label in labels_of().items():
        if name in fields:
            assert fields[name].label == label


def test_the_form_hands_typed_values_and_the_layer_decides() -> None:
    data = QueryDict(mutable=True)
    data.update(
        {
            "enabled": "on",
            "timezone": " UTC ",
            "safety_max_tokens": "1,024",
            "extra_holidays": "2026-01-01, 2026-01-02",
            "tier_texts": "a\n\n b \n",
            "off_duty_reply": "  spaced  ",
            "winding_reasoning_effort": "",
            "holiday_calendar": "",
        }
    )
    changes = ScheduleSettingsForm(data).changes()
    assert changes["enabled"] is True
    assert changes["dry_run"] is False
    assert changes["timezone"] == "UTC"
    assert changes["safety_max_tokens"] == 1024
    assert changes["extra_holidays"] == ["2026-01-01", "2026-01-02"]
    assert changes["tier_texts"] == ["a", "b"]
    assert changes["off_duty_reply"] == "  spaced  "  # free text keeps its spaces
    assert changes["winding_reasoning_effort"] is None
    assert changes["holiday_calendar"] is None


def test_the_layers_error_lands_on_its_field() -> None:
    data = QueryDict(mutable=True)
    data.update({"curfew_start": "25:00", "curve": "zigzag"})
    form = ScheduleSettingsForm(data)
    changes = {key: form.changes()[key] for key in ("curfew_start", "curve")}
    try:
        schedule_config.apply_changes(schedule_config.DEFAULTS, changes)
    except schedule_config.ConfigError as exc:
        form.flag(exc.errors)
    else:
        raise AssertionError("25:00 and zigzag were accepted")
    assert form.errors["curfew_start"][0].startswith("'25:00' is not a time")
    assert "curve" in form.errors
    assert 'aria-invalid="true"' in str(form["curfew_start"])


def test_the_preview_keeps_every_edit_the_layer_accepts() -> None:
    from curfew_core.web.schedule.schedule_form import nearest_valid

    saved = schedule_config.default_config()
    # The bad wake-up hides the anchor's problem until it is left out.
    changes = {"wake_up": "xx", "anchors": [["23:00", 2048], ["05:00", 64]], "curve": "step"}
    config, left_out = nearest_valid(saved, changes)
    assert left_out == ["wake_up", "anchors"]
    assert config["curve"] == "step"
    assert config["wake_up"] == saved["wake_up"]
    assert config["anchors"] == saved["anchors"]
