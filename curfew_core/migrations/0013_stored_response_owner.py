import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """Who made each response the upstream stores (``StoredResponse``): the
    proxy now lets only that person read, delete or continue it. Nothing is
    filled in: a response made before this migration has no owner, and is
    refused to everyone as an id the upstream does not know
    (``docs/security.md``)."""

    dependencies = [
        ("curfew_core", "0012_origin_choices_from_protocols"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="StoredResponse",
            fields=[
                (
                    "response_id",
                    models.CharField(max_length=256, primary_key=True, serialize=False),
                ),
                ("created_at", models.DateTimeField(db_index=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_stored_responses",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
    ]
