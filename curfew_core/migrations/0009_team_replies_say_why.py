"""Teams speak the member's language (issue 39): a team whose replies are the
seed's terse ones because nobody ever chose them gets the replies that say
why, as a new team does; each member's gateway then says them in the
member's language (``selectors.spoken``).

A data migration rather than a rule at read time: a stored "。" cannot tell
"never touched" from "an admin chose the terse ones", but the team's audit
can, once. A reply an admin saved (an audited "schedule saved" naming it) is
kept as it is, terse or not. Each changed team moves to its next version and
its audit says so.
"""

from typing import Any

from django.db import migrations

#: Frozen here: the seed's replies and the ones that say why, as written in
#: the source (the English ones; members read them in their own language).
TERSE = {"off_duty_reply": "。", "lights_out_reply": "明天再说。"}
WHY = {
    "off_duty_reply": "Curfew: peak hours until {until}.",
    "lights_out_reply": "Curfew: lights out until {until}.",
}


def _chosen(audit: Any, team: Any) -> set[str]:
    """The reply fields an admin (or a command) ever saved on ``team``."""
    chosen: set[str] = set()
    for changes in audit.objects.filter(team=team, action="schedule saved").values_list(
        "changes", flat=True
    ):
        fields = (changes or {}).get("fields") or {}
        chosen.update(field for field in TERSE if field in fields)
    return chosen


def say_why(apps: Any, schema_editor: Any) -> None:
    Team = apps.get_model("curfew_core", "Team")
    Membership = apps.get_model("curfew_core", "TeamMembership")
    AuditEntry = apps.get_model("curfew_core", "AuditEntry")
    for team in Team.objects.all().iterator():
        config = dict(team.config or {})
        chosen = _chosen(AuditEntry, team)
        changed = {
            field: {"old": config.get(field, TERSE[field]), "new": WHY[field]}
            for field in TERSE
            if field not in chosen and config.get(field, TERSE[field]) == TERSE[field]
        }
        if not changed:
            continue
        for field, change in changed.items():
            config[field] = change["new"]
        team.config = config
        team.version += 1
        team.save(update_fields=["config", "version"])
        admin = (
            Membership.objects.filter(team=team, role="admin").order_by("id").first()
            or Membership.objects.filter(team=team).order_by("id").first()
        )
        if admin is None:
            continue
        AuditEntry.objects.create(
            user_id=admin.user_id,
            team=team,
            actor=None,
            actor_name="system",
            channel="system",
            subject="team",
            action="schedule saved",
            changes={"team": team.name, "version": team.version, "fields": changed},
        )


def back(apps: Any, schema_editor: Any) -> None:
    """Going back keeps the replies: they are valid settings either way."""


class Migration(migrations.Migration):
    dependencies = [("curfew_core", "0008_teams")]

    operations = [migrations.RunPython(say_why, back)]
