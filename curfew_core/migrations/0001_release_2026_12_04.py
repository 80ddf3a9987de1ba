import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """The schema of release 2026-12-04, in one step: migrations 0001 to 0011
    squashed (issue 43), with their data steps (0004, 0009, 0010) left out,
    since a new database has no rows for them to convert.

    ``replaces`` names the eleven it stands for, so a database that applied
    them all (any install of release 2026-12-04 or later) takes this one as
    applied and goes on to 0012. A database that stopped part way (an install
    of an earlier release) cannot go on from here: the system check
    ``curfew_core.E001`` (``curfew_core/checks.py``) says so before
    ``migrate`` touches it: upgrade to release 2026-12-04 first
    (CHANGELOG.md).
    """

    replaces = [
        ("curfew_core", "0001_initial"),
        ("curfew_core", "0002_audit_trail"),
        ("curfew_core", "0003_account_preference"),
        ("curfew_core", "0004_override_debug_until"),
        ("curfew_core", "0005_decision_ledger"),
        ("curfew_core", "0006_decision_lighter_indexes"),
        ("curfew_core", "0007_rename_door_fields"),
        ("curfew_core", "0008_teams"),
        ("curfew_core", "0009_team_replies_say_why"),
        ("curfew_core", "0010_curve_positions"),
        ("curfew_core", "0011_decision_keyset_indexes"),
    ]

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Schedule",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("config", models.JSONField(default=dict)),
                ("version", models.PositiveIntegerField(default=1)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_schedule",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="Override",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("overtime_until", models.DateTimeField(blank=True, null=True)),
                ("forced_off_until", models.DateTimeField(blank=True, null=True)),
                ("debug_at", models.DateTimeField(blank=True, null=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_override",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                ("debug_until", models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.CreateModel(
            name="PriceTable",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("config", models.JSONField(default=dict)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_prices",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="DecisionHour",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("hour_start", models.DateTimeField()),
                ("local_date", models.DateField()),
                ("local_hour", models.PositiveSmallIntegerField()),
                ("state", models.CharField(max_length=16)),
                ("action", models.CharField(max_length=16)),
                ("count", models.PositiveIntegerField(default=0)),
                ("exempt", models.PositiveIntegerField(default=0)),
                ("dry_run", models.PositiveIntegerField(default=0)),
                ("requests_not_sent", models.PositiveIntegerField(default=0)),
                ("output_tokens_not_generated", models.BigIntegerField(default=0)),
                ("usage_known", models.PositiveIntegerField(default=0)),
                ("input_tokens", models.BigIntegerField(default=0)),
                ("output_tokens", models.BigIntegerField(default=0)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_decision_hours",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-hour_start"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("user", "hour_start", "state", "action"),
                        name="decision_hour_unique",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Team",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100, unique=True)),
                ("config", models.JSONField(default=dict)),
                ("version", models.PositiveIntegerField(default=0)),
                ("members_may_exempt", models.BooleanField(default=False)),
                ("member_overtime_minutes", models.PositiveIntegerField(default=0)),
                ("overtime_until", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="TeamMembership",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "role",
                    models.CharField(
                        choices=[("admin", "admin"), ("member", "member")],
                        default="member",
                        max_length=8,
                    ),
                ),
                ("joined_at", models.DateTimeField(auto_now_add=True)),
                ("overtime_from", models.DateTimeField(blank=True, null=True)),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to="curfew_core.team",
                    ),
                ),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_team_membership",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["team", "id"],
                "indexes": [models.Index(fields=["team", "role"], name="team_member_role")],
            },
        ),
        migrations.CreateModel(
            name="TeamInvite",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("prefix", models.CharField(max_length=16)),
                (
                    "role",
                    models.CharField(
                        choices=[("admin", "admin"), ("member", "member")],
                        default="member",
                        max_length=8,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("expires_at", models.DateTimeField()),
                ("used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "created_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="invites",
                        to="curfew_core.team",
                    ),
                ),
                (
                    "used_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
            },
        ),
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("api", "API"),
                            ("embed", "Embed (read-only)"),
                            ("team", "Team gateway key"),
                        ],
                        default="api",
                        max_length=8,
                    ),
                ),
                ("name", models.CharField(blank=True, max_length=100)),
                ("prefix", models.CharField(max_length=16)),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tokens",
                        to="curfew_core.team",
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at"],
            },
        ),
        migrations.CreateModel(
            name="AuditEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("actor_name", models.CharField(max_length=150)),
                (
                    "channel",
                    models.CharField(
                        choices=[
                            ("page", "settings page"),
                            ("api", "API"),
                            ("command", "command line"),
                            ("admin", "admin"),
                            ("system", "system"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "subject",
                    models.CharField(
                        choices=[
                            ("schedule", "schedule"),
                            ("override", "override"),
                            ("token", "token"),
                            ("account", "account"),
                            ("prices", "prices"),
                            ("team", "team"),
                        ],
                        max_length=16,
                    ),
                ),
                ("action", models.CharField(max_length=32)),
                ("changes", models.JSONField(default=dict)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "actor",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_audit",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="audit",
                        to="curfew_core.team",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "audit entries",
                "ordering": ["-created_at", "-id"],
                "indexes": [
                    models.Index(fields=["user", "-created_at"], name="audit_user_recent"),
                    models.Index(fields=["team", "-created_at"], name="audit_team_recent"),
                ],
            },
        ),
        migrations.CreateModel(
            name="ScheduleRevision",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("version", models.PositiveIntegerField()),
                ("config", models.JSONField()),
                ("source", models.CharField(max_length=32)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "schedule",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="revisions",
                        to="curfew_core.schedule",
                    ),
                ),
            ],
            options={
                "ordering": ["-version"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("schedule", "version"), name="unique_revision_version"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="AccountPreference",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("language", models.CharField(blank=True, default="", max_length=16)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_preference",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="Decision",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("at", models.DateTimeField()),
                ("session", models.CharField(blank=True, default="", max_length=200)),
                ("purpose", models.CharField(blank=True, default="", max_length=200)),
                (
                    "state",
                    models.CharField(
                        choices=[
                            ("on-duty", "on-duty"),
                            ("winding", "winding"),
                            ("off-duty", "off-duty"),
                            ("lights-out", "lights-out"),
                        ],
                        max_length=16,
                    ),
                ),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("pass", "pass"),
                            ("clamp", "clamp"),
                            ("short-circuit", "short-circuit"),
                        ],
                        max_length=16,
                    ),
                ),
                ("reason", models.CharField(blank=True, default="", max_length=500)),
                ("budget_before", models.PositiveIntegerField(blank=True, null=True)),
                ("budget_after", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "origin",
                    models.CharField(
                        choices=[
                            ("chat", "chat"),
                            ("completions", "completions"),
                            ("responses", "responses"),
                            ("messages", "messages"),
                            ("embeddings", "embeddings"),
                            ("verdict", "verdict"),
                            ("gateway", "gateway"),
                        ],
                        max_length=16,
                    ),
                ),
                ("exempt", models.BooleanField(default=False)),
                ("dry_run", models.BooleanField(default=False)),
                ("input_tokens", models.PositiveIntegerField(blank=True, null=True)),
                ("output_tokens", models.PositiveIntegerField(blank=True, null=True)),
                ("client_id", models.CharField(blank=True, max_length=64, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="curfew_decisions",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["-at", "-id"],
                "indexes": [
                    models.Index(fields=["user", "-at", "-id"], name="decision_user_at_id"),
                    models.Index(
                        condition=models.Q(("session", ""), _negated=True),
                        fields=["user", "session", "-at", "-id"],
                        name="decision_user_session",
                    ),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("client_id__isnull", False)),
                        fields=("user", "client_id"),
                        name="decision_unique_client_id",
                    )
                ],
            },
        ),
    ]
