"""Teams (issue 26): a team with its own schedule and policy, its members and
roles (a user in at most one team), one-time invites, team keys (a token kind
with its team) and the team's audit entries."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("curfew_core", "0007_rename_door_fields"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
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
            options={"ordering": ["name"]},
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
            options={"ordering": ["-created_at"]},
        ),
        migrations.AddField(
            model_name="apitoken",
            name="team",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="tokens",
                to="curfew_core.team",
            ),
        ),
        migrations.AlterField(
            model_name="apitoken",
            name="kind",
            field=models.CharField(
                choices=[
                    ("api", "API"),
                    ("embed", "Embed (read-only)"),
                    ("team", "Team gateway key"),
                ],
                default="api",
                max_length=8,
            ),
        ),
        migrations.AddField(
            model_name="auditentry",
            name="team",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="audit",
                to="curfew_core.team",
            ),
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="subject",
            field=models.CharField(
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
        migrations.AddIndex(
            model_name="auditentry",
            index=models.Index(fields=["team", "-created_at"], name="audit_team_recent"),
        ),
    ]
