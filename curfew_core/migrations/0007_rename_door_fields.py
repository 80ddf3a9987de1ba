"""One word, one meaning (issue 21): "door" is the edge's. The audit trail's
field says through which *channel* a change came (page, API, command line,
admin); the ledger's says where a decision was made, its *origin* (a proxy
endpoint, the verdict API, a gateway's report). Renames only: no data moves."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("curfew_core", "0006_decision_lighter_indexes")]

    operations = [
        migrations.RenameField(model_name="auditentry", old_name="door", new_name="channel"),
        migrations.RenameField(model_name="decision", old_name="door", new_name="origin"),
    ]
