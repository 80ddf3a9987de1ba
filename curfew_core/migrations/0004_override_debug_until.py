"""The time machine ("pretend it is ...") gets an end.

A time machine already set when this runs ends an hour from now (the
default a new one gets), not never: none is silently permanent.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import migrations, models
from django.utils import timezone

#: The default length of a pretend (``override_commands.DEFAULT_PRETEND``),
#: frozen here as migrations must not import app code that may change.
DEFAULT_PRETEND = timedelta(hours=1)


def end_running_time_machines(apps: Any, schema_editor: Any) -> None:
    override = apps.get_model("curfew_core", "Override")
    override.objects.filter(debug_at__isnull=False, debug_until__isnull=True).update(
        debug_until=timezone.now() + DEFAULT_PRETEND
    )


class Migration(migrations.Migration):
    dependencies = [("curfew_core", "0003_account_preference")]

    operations = [
        migrations.AddField(
            model_name="override",
            name="debug_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(end_running_time_machines, migrations.RunPython.noop),
    ]
