"""Every committed write of a row a verdict reads is pushed, whoever made it.

With Redis an entry's freshness is long (``CURFEW_CACHE_FRESH_SECONDS``:
five gateway lifetimes), because changes are pushed, not polled: after the
commit the user's (or team's) cached rows are replaced and every process drops
its own copy (``store.redis_cache``'s ``PUBLISH``). The services push their own
writes (``services.after_commit``); these receivers push the writes that go
around them: a model saved or deleted through the admin, a ``manage.py shell``,
a management command, a cascade (a deleted user's or team's rows). What a
verdict reads (``selectors.bundles``): the user's ``Schedule``, ``Override``,
``AccountPreference`` and ``TeamMembership``, their ``Team``, and the token
(``services.token_receivers``); a team key names its member by username
(``selectors.teams.member_key``), so a member leaving, deleted or renamed
forgets that name too, and tells the team key's change streams the name (a
gateway keeps a team key's verdicts per name while its stream is live).

Not covered, bounded by the freshness alone: a bulk ``QuerySet.update()`` or
SQL, which send no signal (docs/subsystems/caching.md). Connected in
``CurfewCoreConfig.ready``; a service's own push and the signal's are one
(``after_commit.on_commit_once``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save, pre_delete, pre_save

from curfew_core.models import AccountPreference, Override, Schedule, Team, TeamMembership
from curfew_core.selectors.bundles import refresh_team
from curfew_core.selectors.teams import forget_member_name
from curfew_core.services import events
from curfew_core.services.after_commit import after_commit, on_commit_once

log = logging.getLogger("curfew.after_commit")

#: The attribute a user's name as loaded is kept in between ``pre_save`` and ``post_save``.
_OLD_NAME = "_curfew_name_before_save"


def _user_rows_changed(sender: type[Any], instance: Any, **kwargs: Any) -> None:
    """A row of the user's (schedule, override, preference): refresh and push."""
    after_commit(user_id=instance.user_id)


def _membership_changed(sender: type[Any], instance: TeamMembership, **kwargs: Any) -> None:
    """Joined, left or changed a team: the user's rows, and the team key's name.
    A member who left is told to the team key's change streams by name: the
    steps above tell only the user's new team (none), and a gateway keeps a
    team key's verdicts per name until ``valid_until`` while its stream is
    live (a join is told by those steps)."""
    user_id, team_id = instance.user_id, instance.team_id
    left = kwargs.get("signal") is post_delete
    after_commit(user_id=user_id)

    def steps() -> None:
        # Read after the commit (no query in the writer's transaction); a user
        # deleted with it has no name to forget: a new user given that name
        # joins through this very receiver, which forgets it then.
        try:
            name = (
                get_user_model()
                .objects.filter(pk=user_id)
                .values_list("username", flat=True)
                .first()
            )
        except Exception:  # the commit stands; the name's entry expires on its own
            log.warning("after commit: could not read the name of user %s", user_id)
            return
        if name is not None:
            forget_member_name(team_id, name)  # never raises
            if left:  # after the name is forgotten: asked again, it is refused
                events.publish_member_changed(team_id, user_id, name)  # never raises

    on_commit_once(("member", user_id, team_id, left), steps)


def _team_changed(sender: type[Any], instance: Team, **kwargs: Any) -> None:
    """The team's rows (schedule, policy, overtime): refreshed in the cache and
    dropped from every process's layer. The members' capsules are told by the
    services' own team writes (``services.teams``); after a save around them
    they re-read at their next boundary (telling them here too would make
    every service write's capsules read twice)."""
    team_id = instance.pk

    def steps() -> None:
        refresh_team(team_id)  # never raises: drops the entry if it cannot refresh

    on_commit_once(("team", team_id), steps)


def _remember_name(sender: type[Any], instance: Any, **kwargs: Any) -> None:
    """Before a user is saved: their name as committed, if the save may change it."""
    fields = kwargs.get("update_fields")
    if instance.pk is None or (fields is not None and "username" not in fields):
        return
    old = sender.objects.filter(pk=instance.pk).values_list("username", flat=True).first()
    setattr(instance, _OLD_NAME, old)


def _user_renamed(sender: type[Any], instance: Any, **kwargs: Any) -> None:
    """A renamed member: the team key must not find them by the old name, and
    its change streams drop what gateways keep under either name (a gateway
    keeps a team key's verdicts per member name until ``valid_until`` while
    its stream is live). A person alone's verdict does not depend on their
    name: nothing is told."""
    old = instance.__dict__.pop(_OLD_NAME, None)
    if old is None or old == instance.get_username():
        return
    team_id = (
        TeamMembership.objects.filter(user_id=instance.pk).values_list("team_id", flat=True).first()
    )
    if team_id is not None:
        names = [(team_id, old), (team_id, instance.get_username())]
        _forget_names_after_commit(instance.pk, names)


def _user_deleting(sender: type[Any], instance: Any, **kwargs: Any) -> None:
    """A member deleted: their membership goes with them, and after the commit
    no user is left to read the name from (``_membership_changed``), so it is
    read now: the team key must not find them, and its change streams drop
    what gateways keep under their name."""
    team_id = (
        TeamMembership.objects.filter(user_id=instance.pk).values_list("team_id", flat=True).first()
    )
    if team_id is not None:
        _forget_names_after_commit(instance.pk, [(team_id, instance.get_username())])


def _forget_names_after_commit(user_id: int, names: list[tuple[int, str]]) -> None:
    def steps() -> None:
        for team_id, name in names:
            forget_member_name(team_id, name)  # never raises
        # After the names are forgotten: a gateway that asks again at once is
        # answered for the new name, and refused for the old one.
        for team_id, name in names:
            events.publish_member_changed(team_id, user_id, name)  # never raises

    on_commit_once(("names", user_id, tuple(names)), steps)


def connect() -> None:
    for model in (Schedule, Override, AccountPreference):
        uid = f"curfew-rows-{model.__name__}"
        post_save.connect(_user_rows_changed, sender=model, dispatch_uid=f"{uid}-saved")
        post_delete.connect(_user_rows_changed, sender=model, dispatch_uid=f"{uid}-deleted")
    post_save.connect(
        _membership_changed, sender=TeamMembership, dispatch_uid="curfew-member-saved"
    )
    post_delete.connect(
        _membership_changed, sender=TeamMembership, dispatch_uid="curfew-member-deleted"
    )
    post_save.connect(_team_changed, sender=Team, dispatch_uid="curfew-team-saved")
    post_delete.connect(_team_changed, sender=Team, dispatch_uid="curfew-team-deleted")
    user = get_user_model()
    pre_save.connect(_remember_name, sender=user, dispatch_uid="curfew-user-name-before")
    post_save.connect(_user_renamed, sender=user, dispatch_uid="curfew-user-renamed")
    pre_delete.connect(_user_deleting, sender=user, dispatch_uid="curfew-user-deleting")
