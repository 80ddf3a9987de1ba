from django.db import migrations, models

import curfew_core.ledger.entry


class Migration(migrations.Migration):
    """The ledger's ``origin`` choices become a callable (issue 43): each wire
    protocol declares its origins (``curfew_core.protocols``), and a new
    protocol's origins then need no migration (the migration names the
    function, not the list). The last migration a new protocol needs: choices
    are not a database constraint, so no SQL runs and no row is touched."""

    dependencies = [
        ("curfew_core", "0001_release_2026_12_04"),
    ]

    operations = [
        migrations.AlterField(
            model_name="decision",
            name="origin",
            field=models.CharField(choices=curfew_core.ledger.entry.origin_choices, max_length=16),
        ),
    ]
