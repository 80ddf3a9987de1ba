from typing import Any

from django.contrib import admin

from curfew_core.models import ApiToken, Override, Schedule, ScheduleRevision
from curfew_core.web.signin import ThrottledAdminSignIn

# The admin's sign-in counts failures and locks out like the settings page's.
admin.site.login_form = ThrottledAdminSignIn


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin[Any]):
    list_display = ("user", "version", "updated_at")
    # The config is edited through the product (one validation layer, versioned
    # saves, revisions); an unchecked admin edit could break every verdict.
    readonly_fields = ("user", "config", "version", "updated_at")


@admin.register(ScheduleRevision)
class ScheduleRevisionAdmin(admin.ModelAdmin[Any]):
    list_display = ("schedule", "version", "source", "created_at")
    readonly_fields = ("schedule", "version", "config", "source", "created_at")


@admin.register(Override)
class OverrideAdmin(admin.ModelAdmin[Any]):
    list_display = ("user", "overtime_until", "forced_off_until", "debug_at", "updated_at")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[Any]):
    list_display = ("user", "kind", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "digest", "created_at", "last_used_at")
