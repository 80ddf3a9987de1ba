"""The admin: a read-only window onto what users stored, plus two actions.

Every write goes through the services (one validation layer, versioned saves,
revisions, the audit trail, the cache refresh and the capsule event after
commit). The admin's own forms would skip all of that: an override moment out
of range once broke every verdict of its user. So schedules, revisions,
overrides, tokens and audit entries can be viewed, not added, changed or
deleted here; the two actions that do write call the services.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from curfew_core.models import ApiToken, AuditEntry, Override, Schedule, ScheduleRevision
from curfew_core.schedules.override_commands import OverrideCommand
from curfew_core.services.overrides import override_apply
from curfew_core.services.tokens import token_revoke
from curfew_core.signin_forms import ThrottledAdminSignIn

# The admin's sign-in counts failures and locks out like the settings page's.
admin.site.login_form = ThrottledAdminSignIn


class ReadOnlyAdmin(admin.ModelAdmin[Any]):
    """View only: no add, no change, no delete (actions may still call services)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Schedule)
class ScheduleAdmin(ReadOnlyAdmin):
    list_display = ("user", "version", "updated_at")


@admin.register(ScheduleRevision)
class ScheduleRevisionAdmin(ReadOnlyAdmin):
    list_display = ("schedule", "version", "source", "created_at")


@admin.register(Override)
class OverrideAdmin(ReadOnlyAdmin):
    list_display = (
        "user",
        "overtime_until",
        "forced_off_until",
        "debug_at",
        "debug_until",
        "updated_at",
    )
    actions = ("back_to_schedule",)

    @admin.action(description="Back to schedule (cancel every override)", permissions=["view"])
    def back_to_schedule(self, request: HttpRequest, queryset: QuerySet[Override]) -> None:
        for override in queryset.select_related("user"):
            override_apply(
                user=override.user,
                command=OverrideCommand("auto"),
                now=timezone.now(),
                actor=request.user,  # type: ignore[arg-type]
                channel=AuditEntry.Channel.ADMIN,
            )
        self.message_user(request, f"{queryset.count()} user(s) back on schedule.")


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    list_display = ("user", "kind", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    # The digest is how a token is checked: not shown, even to staff.
    exclude = ("digest",)
    actions = ("revoke",)

    @admin.action(description="Revoke selected tokens", permissions=["view"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        revoked = sum(
            token_revoke(
                user=token.user,
                token_id=token.pk,
                actor=request.user,  # type: ignore[arg-type]
                channel=AuditEntry.Channel.ADMIN,
            )
            for token in queryset.select_related("user")
        )
        self.message_user(request, f"{revoked} token(s) revoked.", messages.SUCCESS)


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "user", "subject", "action", "actor_name", "channel")
    list_filter = ("channel", "subject")
    search_fields = ("user__username", "actor_name")
