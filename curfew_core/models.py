"""What Curfew stores per user. Reads go through ``selectors``, writes through
``services``; nothing else touches these models directly."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from curfew_core.ledger.entry import ACTIONS, STATES, origin_choices

#: The version of a schedule nobody has saved yet (defaults, with or without a
#: row): ``version`` counts saves, so readers and the writer's stale check agree.
UNSAVED_VERSION = 0


class Schedule(models.Model):
    """A user's schedule as canonical JSON (validated by ``curfew_core.schedules.config``).

    One JSON document rather than thirty columns: the shape is owned by the
    validation layer, and the API, the form and the commands all speak it.
    ``version`` counts saves, for optimistic concurrency.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="curfew_schedule"
    )
    config = models.JSONField(default=dict)
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"schedule of {self.user} (v{self.version})"


class ScheduleRevision(models.Model):
    """Every version a user ever saved: nothing a user saved is ever lost."""

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    config = models.JSONField()
    source = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["schedule", "version"], name="unique_revision_version")
        ]
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"{self.schedule} revision {self.version}"


class Override(models.Model):
    """Hand-set overrides; every one is bounded in time or cleared by ``auto``."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="curfew_override"
    )
    overtime_until = models.DateTimeField(null=True, blank=True)
    forced_off_until = models.DateTimeField(null=True, blank=True)
    #: "Pretend it is ...": gateways are told it is this moment ...
    debug_at = models.DateTimeField(null=True, blank=True)
    #: ... until this real instant; then it is as if cleared.
    debug_until = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"overrides of {self.user}"


class ApiToken(models.Model):
    """A bearer token. Only its SHA-256 digest is stored; the raw token is shown once."""

    class Kind(models.TextChoices):
        API = "api", "API"
        EMBED = "embed", "Embed (read-only)"
        #: A team's gateway key: asks on behalf of any member (``team`` set).
        TEAM = "team", "Team gateway key"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="curfew_tokens"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.API)
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    #: A team key's team (``kind`` is ``team``); its ``user`` is who issued it.
    team = models.ForeignKey(
        "Team", on_delete=models.CASCADE, null=True, blank=True, related_name="tokens"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} token {self.prefix}… of {self.user}"


class AccountPreference(models.Model):
    """A person's own preferences for the pages. Only the language lives here:
    the timezone is the schedule's ``timezone`` setting (one stored value)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="curfew_preference"
    )
    #: A code of ``settings.LANGUAGES`` (checked by the service), or empty: the browser's.
    language = models.CharField(max_length=16, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"preferences of {self.user}"


class AuditEntry(models.Model):
    """One change to a user's schedule, overrides or tokens: who, when, through
    through which channel, and what changed. Written by the services inside the change's
    own transaction (so it exists exactly when the change does); never a raw
    token, a digest or any other secret."""

    class Channel(models.TextChoices):
        """Where a change came in (not the edge's doors, nor a ledger origin)."""

        PAGE = "page", "settings page"
        API = "api", "API"
        COMMAND = "command", "command line"
        ADMIN = "admin", "admin"
        #: Code that is none of the channels (a data migration, a shell, a test).
        SYSTEM = "system", "system"

    class Subject(models.TextChoices):
        SCHEDULE = "schedule", "schedule"
        OVERRIDE = "override", "override"
        TOKEN = "token", "token"
        #: The person's own account: password, sessions, language.
        ACCOUNT = "account", "account"
        #: The person's price table for the savings view.
        PRICES = "prices", "prices"
        #: A team: its schedule, members, roles, invites, keys, overtime.
        TEAM = "team", "team"

    #: Whose data changed.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="curfew_audit"
    )
    #: Who changed it; ``None`` is the system (a terminal command, a migration).
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    #: The actor's name when it acted, kept if that account goes.
    actor_name = models.CharField(max_length=150)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    subject = models.CharField(max_length=16, choices=Subject.choices)
    #: The team a team change belongs to (``user`` is then the member it
    #: concerns, or the admin who changed the whole team).
    team = models.ForeignKey(
        "Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="audit"
    )
    #: ``saved``; an override verb; ``created`` or ``revoked``.
    action = models.CharField(max_length=32)
    changes = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="audit_user_recent"),
            models.Index(fields=["team", "-created_at"], name="audit_team_recent"),
        ]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.subject} {self.action} by {self.actor_name} ({self.channel})"


class Decision(models.Model):
    """One decision that was acted on (issue 14's ledger): when, whose, what the
    curfew did and why, and where (its ``origin``). Never the prompt or the reply.

    Written in batches by ``curfew_core.ledger`` (never on the caller's thread);
    kept for ``CURFEW_LEDGER_RETENTION_DAYS`` (pruned hourly by the servers,
    ``services.ledger_prune``, or ``manage.py curfew prune``), while
    :class:`DecisionHour` keeps the counts indefinitely."""

    #: No index of its own: ``decision_user_at_id`` starts with the user (one
    #: index fewer to write per decision).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="curfew_decisions",
        db_index=False,
    )
    at = models.DateTimeField()
    session = models.CharField(max_length=200, blank=True, default="")
    purpose = models.CharField(max_length=200, blank=True, default="")
    state = models.CharField(max_length=16, choices=[(s, s) for s in STATES])
    action = models.CharField(max_length=16, choices=[(a, a) for a in ACTIONS])
    reason = models.CharField(max_length=500, blank=True, default="")
    budget_before = models.PositiveIntegerField(null=True, blank=True)
    budget_after = models.PositiveIntegerField(null=True, blank=True)
    #: Its choices are a callable: a new wire protocol's origins need no migration.
    origin = models.CharField(max_length=16, choices=origin_choices)
    exempt = models.BooleanField(default=False)
    dry_run = models.BooleanField(default=False)
    #: What the upstream said it used, when the proxy saw its ``usage``.
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    #: A gateway's own id for a reported decision: a retried batch is no double.
    #: Null when none: the unique constraint covers only the rows that have one
    #: (a partial index: nothing to write for the other decisions).
    client_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            # Every read of a user's decisions, newest first, and the export's
            # keyset ``(at, id) < (%s, %s)``: an index range, never a filter
            # over the newer rows (issue 40). Also what prune deletes by.
            models.Index(fields=["user", "-at", "-id"], name="decision_user_at_id"),
            # A session filter reads only that session's rows. Partial: a
            # decision without a session has nothing more to write.
            models.Index(
                fields=["user", "session", "-at", "-id"],
                condition=~models.Q(session=""),
                name="decision_user_session",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "client_id"],
                condition=models.Q(client_id__isnull=False),
                name="decision_unique_client_id",
            )
        ]

    def __str__(self) -> str:
        return f"{self.action} ({self.state}) for {self.user_id} at {self.at:%Y-%m-%d %H:%M}"


class DecisionHour(models.Model):
    """The decisions of one user in one of their LOCAL hours, per state and
    action, kept indefinitely. ``hour_start`` is the UTC instant the local hour
    began, so the two 01:00 hours of a DST fall-back are two rows (same
    ``local_date`` and ``local_hour``) and a skipped hour has none.

    Each flush adds to the rows of every user it names (at 10,000 users, a
    row a verdict): so no index of ``user`` alone (the unique constraint's,
    which starts with it, serves every read by user), and on PostgreSQL room
    left in each page (``FILLFACTOR``, migration ``0014``) for the update to
    stay on its page without touching an index (a heap-only update)."""

    #: The unique constraint's index leads with ``user``: no index of its own.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="curfew_decision_hours",
        db_index=False,
    )
    hour_start = models.DateTimeField()
    local_date = models.DateField()
    local_hour = models.PositiveSmallIntegerField()
    state = models.CharField(max_length=16)
    action = models.CharField(max_length=16)
    count = models.PositiveIntegerField(default=0)
    exempt = models.PositiveIntegerField(default=0)
    dry_run = models.PositiveIntegerField(default=0)
    #: Short-circuits that acted (not dry runs): requests that were never sent.
    requests_not_sent = models.PositiveIntegerField(default=0)
    #: On clamps: the budget asked minus the budget allowed (an upper bound).
    output_tokens_not_generated = models.BigIntegerField(default=0)
    #: Decisions whose upstream usage is known, and that usage.
    usage_known = models.PositiveIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-hour_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "hour_start", "state", "action"], name="decision_hour_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.local_date} {self.local_hour:02d}h {self.state}/{self.action}"


class PriceTable(models.Model):
    """A user's prices for the savings view (``curfew_core.ledger.savings``
    reads it; ``services.prices`` validates and audits every change). Empty
    means the defaults."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="curfew_prices"
    )
    config = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"prices of {self.user}"


class Team(models.Model):
    """A team: one schedule its members cannot loosen (issue 26).

    ``config`` is a schedule in the same declared settings as a person's
    (validated by ``curfew_core.schedules.config``); a member's verdict is the
    harsher of the team's and their own (``curfew_core.engine.team``). The
    policy columns are the team's alone: whether a member's exemptions count,
    and whether (and how long) a member's overtime lifts the team's night.
    ``overtime_until`` is a whole-team overtime an admin granted ("release night").
    """

    name = models.CharField(max_length=100, unique=True)
    config = models.JSONField(default=dict)
    version = models.PositiveIntegerField(default=UNSAVED_VERSION)
    #: Whether a member's own exempt sessions and purposes count (both must allow).
    members_may_exempt = models.BooleanField(default=False)
    #: How long a member's own overtime may lift the team's night, in minutes;
    #: 0: it never does.
    member_overtime_minutes = models.PositiveIntegerField(default=0)
    #: The whole team's overtime ("release night"), a real instant.
    overtime_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"team {self.name} (v{self.version})"


class TeamMembership(models.Model):
    """A user's place in a team. One-to-one: a user is in at most one team."""

    class Role(models.TextChoices):
        ADMIN = "admin", "admin"
        MEMBER = "member", "member"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="curfew_team_membership"
    )
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.MEMBER)
    joined_at = models.DateTimeField(auto_now_add=True)
    #: When the member last took overtime: a team that lets members' overtime
    #: lift its night does so for at most its allowance from this instant.
    overtime_from = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["team", "id"]
        indexes = [models.Index(fields=["team", "role"], name="team_member_role")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team.name} ({self.role})"


class TeamInvite(models.Model):
    """A one-time invite link: only its SHA-256 digest is stored, the link is shown once."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invites")
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)
    role = models.CharField(
        max_length=8, choices=TeamMembership.Role.choices, default=TeamMembership.Role.MEMBER
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"invite {self.prefix}… to {self.team.name}"


class StoredResponse(models.Model):
    """Whose a response the upstream stores is (OpenAI's Responses API keeps
    each one it makes, ``store`` defaulting to true, for 30 days): the person a
    passed ``POST /v1/responses`` was served as, recorded once the upstream
    answered with its id (``proxy.stored_owner``). Only that person may read,
    delete or continue it through the proxy; an id without a row is, to
    everyone, an id the upstream does not know (``docs/security.md``).

    Written by ``services.stored_responses`` (never before the upstream is
    asked), pruned with the ledger once the upstream no longer keeps it."""

    #: The upstream's id: one plain segment of at most 256 characters
    #: (``proxy.upstream.response_path``), so the key is the id itself.
    response_id = models.CharField(max_length=256, primary_key=True)
    #: The person a team key asked for, or a personal token's owner.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="curfew_stored_responses"
    )
    #: When the upstream answered: what the prune goes by.
    created_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"response {self.response_id} of {self.user_id}"
