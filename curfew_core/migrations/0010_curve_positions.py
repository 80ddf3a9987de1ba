"""The curve belongs to the night (issue 39): every stored config keeps its
curve's places through the wind-down (``anchor_positions``, exact rationals:
0 at curfew start, 1 at lights-out) beside its anchors' clock times.

Until now the places were read from the clock times each time, and moving
the night rewrote the clock times rounded to the minute, so the shape wore
away. Here each config's places are read once from its anchors on its own
default night, exactly as the engine read them (with no wind-down, the
anchors' own span), and kept; from then on ``apply_changes`` moves clock
times and never places. Schedules, their revisions and teams' schedules are
converted; a row that does not read (no anchors, a time that is not
``HH:MM``, anchors out of order) is left as it was and the rest go on: it is
read from its clock times as before, as every row without places is.

Backwards: the places are dropped (the clock times were kept throughout).
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

from django.db import migrations

KEY = "anchor_positions"
#: Frozen here: the declared defaults a stored config without them stood on.
DEFAULT_START, DEFAULT_LIGHTS = "23:00", "03:00"
DAY = 24 * 60
BATCH = 500


def _minutes(text: Any) -> int:
    if not isinstance(text, str) or len(text) != 5 or text[2] != ":":
        raise ValueError(text)
    hours, minutes = int(text[:2]), int(text[3:])
    if not (0 <= hours < 24 and 0 <= minutes < 60):
        raise ValueError(text)
    return hours * 60 + minutes


def positions(config: Any) -> list[str] | None:
    """``config``'s curve places as stored strings, or None when it has none
    to keep (no anchors) or does not read (then it is left alone)."""
    if not isinstance(config, dict) or "anchors" not in config:
        return None
    try:
        anchors = config["anchors"]
        if not isinstance(anchors, list) or not anchors:
            return None
        times = [_minutes(row[0]) for row in anchors]
        start = _minutes(config.get("curfew_start", DEFAULT_START))
        span = (_minutes(config.get("lights_out", DEFAULT_LIGHTS)) - start) % DAY
        if span == 0:  # no wind-down: the anchors' own span stands in
            start = times[0]
            span = (times[-1] - start) % DAY
        if span == 0:
            return None if len(times) > 1 else ["0"]
        places = [Fraction((at - start) % DAY, span) for at in times]
    except (IndexError, KeyError, TypeError, ValueError):
        return None
    if any(not 0 <= p <= 1 for p in places) or any(b <= a for a, b in itertools.pairwise(places)):
        return None
    return [str(place) for place in places]


def convert(config: Any) -> Any:
    """``config`` with its places kept; as it was when it has none to keep."""
    found = positions(config)
    if found is None:
        return config
    return {**config, KEY: found}


def _each(apps: Any, model: str, change: Any) -> None:
    Model = apps.get_model("curfew_core", model)
    batch: list[Any] = []
    for row in Model.objects.only("pk", "config").iterator(chunk_size=BATCH):
        try:
            new = change(row.config)
        except Exception:  # noqa: S112 - one bad row never stops the rest
            continue
        if new is row.config or new == row.config:
            continue
        row.config = new
        batch.append(row)
        if len(batch) >= BATCH:
            Model.objects.bulk_update(batch, ["config"])
            batch = []
    if batch:
        Model.objects.bulk_update(batch, ["config"])


def _dropped(config: Any) -> Any:
    if not isinstance(config, dict) or KEY not in config:
        return config
    return {key: value for key, value in config.items() if key != KEY}


def keep_places(apps: Any, schema_editor: Any) -> None:
    for model in ("Schedule", "ScheduleRevision", "Team"):
        _each(apps, model, convert)


def drop_places(apps: Any, schema_editor: Any) -> None:
    for model in ("Schedule", "ScheduleRevision", "Team"):
        _each(apps, model, _dropped)


class Migration(migrations.Migration):
    dependencies = [("curfew_core", "0009_team_replies_say_why")]

    operations = [migrations.RunPython(keep_places, drop_places)]
