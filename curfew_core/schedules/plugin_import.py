"""Translating the earlier single-user plugin's camelCase config file into
the schedule's own settings (validated by ``curfew_core.schedules.config`` as usual)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from curfew_core.schedules.config import TERSE_REPLIES, ConfigError
from curfew_core.schedules.declaration import Declaration, ScheduleSettings, aliases_of

#: The plugin's camelCase key -> the setting, from the declaration's aliases.
_RENAMES = aliases_of()
#: Keys that are not schedule settings but overrides.
OVERRIDE_KEYS = {"debugNow"}
_SOURCES = {setting: key for key, setting in _RENAMES.items()}
#: The plugin's holiday map also held the workdays (a date set to ``false``).
_SOURCES["extra_workdays"] = "holidays"


def source_key(setting: str) -> str:
    """The plugin's own name for a setting, so an error points into the file."""
    return _SOURCES.get(setting, setting)


def _hour(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 24:
        return f"{value % 24:02d}:00"
    if isinstance(value, float) and 0 <= value <= 24 and (value * 60).is_integer():
        minutes = int(value * 60) % (24 * 60)
        return f"{minutes // 60:02d}:{minutes % 60:02d}"
    return value  # left for the validation layer to name as wrong


def _anchor_row(row: Any) -> Any:
    """``["23:00", 2048]``, ``[23, 2048]`` or ``{"time": "23:00", "maxTokens": 2048}``."""
    if isinstance(row, Mapping):
        time = row.get("time", row.get("at"))
        tokens = row.get("maxTokens", row.get("tokens", row.get("max_tokens")))
        return [_hour(time), tokens]
    if isinstance(row, list) and len(row) == 2:
        return [_hour(row[0]), row[1]]
    return row


def _hour_pair(pair: Any) -> Any:
    """A peak window ``[9, 12]`` as ``["09:00", "12:00"]``; other shapes pass."""
    if isinstance(pair, list) and len(pair) == 2:
        return [_hour(pair[0]), _hour(pair[1])]
    return pair


def _converted(key: str, value: Any) -> Any:
    """One plugin value in the setting's own shape: ``easeIn`` → ``ease_in``,
    hour pairs → ``HH:MM`` pairs, anchor rows → ``[HH:MM, tokens]``; anything
    else passes through for the validation layer."""
    if key == "curve" and value == "easeIn":
        return "ease_in"
    if key == "peakWindows" and isinstance(value, list):
        return [_hour_pair(pair) for pair in value]
    if key == "anchors" and isinstance(value, list):
        return [_anchor_row(row) for row in value]
    return value


def _settings_of(key: str, target: str, value: Any) -> dict[str, Any]:
    """The settings one plugin key gives: its own, converted; the holiday map
    gives two, the days off (``true``) and the days worked (``false``, a
    make-up workday)."""
    if key == "holidays" and isinstance(value, Mapping):
        return {
            "extra_workdays": sorted(day for day, on in value.items() if not on),
            target: sorted(day for day, on in value.items() if on),
        }
    return {target: _converted(key, value)}


def translate(
    data: Mapping[str, Any], declaration: Declaration = ScheduleSettings
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """``(settings, overrides, unknown_keys)`` from a plugin config object.

    Only keys present are translated, but for the replies: a file without them
    gets the terse pair the plugin answered with. Shapes that differ are converted
    (``easeIn`` → ``ease_in``, hour pairs → ``HH:MM`` pairs, the holiday map →
    date lists: ``true`` a day off, ``false`` a day worked, which is what a
    make-up workday is); anything else passes through for the validation layer.
    """
    if not isinstance(data, Mapping):
        raise ConfigError({"file": "must hold a JSON object"})
    renames = aliases_of(declaration)
    settings: dict[str, Any] = {}
    overrides: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in data.items():
        if key in OVERRIDE_KEYS:
            overrides["debug"] = value if value else "clear"
            continue
        target = renames.get(key)
        if target is None:
            unknown.append(key)
            continue
        settings.update(_settings_of(key, target, value))
    # The plugin answered with its terse replies unless told otherwise, so an
    # import gives them too, whatever replies the account was created with.
    for field, reply in TERSE_REPLIES.items():
        if field in declaration.model_fields:
            settings.setdefault(field, reply)
    return settings, overrides, unknown
