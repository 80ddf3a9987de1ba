"""``python manage.py curfew <action> --user NAME``: the curfew from a terminal.

Thin: each action parses its words, calls one service or selector, prints.
Errors name what is wrong and change nothing (``CommandError``, exit 1).
"""

from __future__ import annotations

import json
import os
from argparse import ArgumentParser
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone, translation

from curfew_core.engine import OverrideError, parse_duration
from curfew_core.engine.clock import to_wall
from curfew_core.schedules import override_commands
from curfew_core.schedules.config import ConfigError
from curfew_core.schedules.plugin_import import source_key, translate
from curfew_core.schedules.values import text_problem
from curfew_core.selectors.bundles import bundle_for
from curfew_core.selectors.heads_up import next_change
from curfew_core.selectors.outlook import curfew_applies, outlook_of
from curfew_core.selectors.teams import (
    MAX_PER_PAGE,
    Team,
    members_page,
    team_by_name,
    team_zone,
)
from curfew_core.selectors.tokens import live_token_matches, live_token_prefixes
from curfew_core.selectors.users import user_by_name
from curfew_core.selectors.verdicts import decide_for, state_payload
from curfew_core.services.ledger import decisions_prune
from curfew_core.services.overrides import override_apply
from curfew_core.services.schedules import schedule_update
from curfew_core.services.stored_responses import (
    STORED_RESPONSE_DAYS,
    stored_response_cutoff,
    stored_responses_prune,
)
from curfew_core.services.teams import (
    TeamError,
    member_add,
    member_remove,
    member_role_change,
    team_create,
    team_overtime_set,
    team_token_create,
)
from curfew_core.services.tokens import token_create
from curfew_core.services.users import demo_user_ensure, user_create
from curfew_core.vocabulary import STATE_NAMES

DEMO_TOKEN_NAME = "demo (make run)"  # noqa: S105 - a label, not a secret


def _read_kept(token_file: Path | None) -> str:
    if token_file is None:
        return ""
    try:
        return token_file.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""  # missing or unreadable: a new token is made and kept


def _keep(token_file: Path, raw: str) -> None:
    """Write the raw token readable by its owner only, from the first byte."""
    token_file.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(raw + "\n")
    token_file.chmod(0o600)  # an older file may have had looser bits


def _named(state: str) -> str:
    """``lights-out (Asleep)``: the wire value and the plain name
    (``vocabulary``, in English: commands run untranslated)."""
    return f"{state} ({STATE_NAMES[state]})"


#: Whose rule makes a team member's next change, in words.
_SIDES = {
    "own": "by your own schedule",
    "team": "by your team's schedule",
    "both": "by your own and your team's schedule",
}


def _wall(at: datetime, zone: tzinfo) -> str:
    """``at`` as a wall clock in ``zone``: ``2026-12-02 23:00``."""
    return to_wall(at, zone).strftime("%Y-%m-%d %H:%M")


def _next_line(user: User, now: datetime) -> str:
    """``next: winding (Winding down) at 2026-12-02 23:00``: the engine's next
    change with the user's full inputs, as the page and the capsule say it
    (``selectors.heads_up.next_change``), whose rule makes it come then for a
    team member (the engine's ``Change.held_by``, as the page's tag says it);
    empty when no curfew applies (``curfew_applies``) or nothing changes
    within 30 hours."""
    bundle = bundle_for(user.pk)
    if not curfew_applies(bundle):
        return ""
    verdict, _ = decide_for(bundle, now=now)
    change = next_change(outlook_of(bundle, now=now, at=verdict.debug_at))
    if change is None:
        return ""
    when = _wall(change.at, bundle.schedule.timezone)
    line = f"next: {_named(change.state.value)} at {when}"
    if verdict.debug_at is not None:
        line += " on the pretended clock"
    if bundle.team is not None:
        line += f", {_SIDES[change.held_by]}"
    return line


def _refuse_bad_text(options: dict[str, Any], names: tuple[str, ...], *, prefix: str) -> None:
    """``CommandError`` for a text option that cannot be stored: bytes that
    are not UTF-8 reach argv as lone surrogates, and stored, they would
    break every later read of the row."""
    for option in names:
        value = options.get(option)
        problem = text_problem(value) if isinstance(value, str) else None
        if problem:
            raise CommandError(f"{prefix}{option} {problem}")


class Command(BaseCommand):
    help = "Curfew tokens, overrides, status and config import for one user."

    def add_arguments(self, parser: ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

        def action(name: str, help_text: str, aliases: tuple[str, ...] = ()) -> ArgumentParser:
            sub = actions.add_parser(name, help=help_text, aliases=list(aliases))
            sub.add_argument("--user", required=True, help="username")
            return sub

        token = action("token", "print a new API token on the last line")
        token.add_argument("--create-user", action="store_true", help="create the user if missing")
        token.add_argument("--name", default="", help="a label for the token")
        action("embed-token", "print a new read-only embed token on the last line")
        action("status", "print the current state")
        overtime = action("overtime", "suspend the curfew for a while (30m, 2h, 90s)")
        overtime.add_argument("duration")
        action("off", "force lights-out now, until the next wake-up")
        action("auto", "cancel every override and follow the schedule")
        # "Pretend" is the name people read everywhere; ``debug`` (the
        # override's wire name, and this action's first name) stays an alias
        # so scripts written against it keep working.
        debug = action(
            "pretend",
            "pretend it is HH:MM or YYYY-MM-DD HH:MM for gateways (for an hour, or --for), "
            "or clear (also spelled `debug`)",
            aliases=("debug",),
        )
        debug.add_argument("moment", nargs="+")
        debug.add_argument(
            "--for",
            dest="pretend_for",
            metavar="DURATION",
            help="how long to pretend: 15m, 1h, 4h, 24h (1 minute to 24 h; default 1h)",
        )
        importer = action("import-config", "import the earlier plugin's JSON config file")
        importer.add_argument("file", type=Path)
        demo = action(
            "demo",
            "make sure the demo user exists and print its API token (the one kept in "
            "--token-file if it still works, else a new one)",
        )
        demo.add_argument("--password", default="demo")
        demo.add_argument(
            "--token-file",
            type=Path,
            default=None,
            help="keep the demo's raw token here (mode 600), to print it again next time",
        )
        team = actions.add_parser("team", help="teams: create, add, role, remove, show, overtime")
        team_actions = team.add_subparsers(dest="team_action", required=True, metavar="WHAT")
        create = team_actions.add_parser("create", help="a new team with its first admin")
        create.add_argument("team")
        create.add_argument("--admin", required=True, help="username of the first admin")
        add = team_actions.add_parser("add", help="add a user to a team")
        add.add_argument("team")
        add.add_argument("username")
        add.add_argument("--role", default="member", choices=("admin", "member"))
        role = team_actions.add_parser("role", help="make a member an admin or a member")
        role.add_argument("team")
        role.add_argument("username")
        role.add_argument("role", choices=("admin", "member"))
        remove = team_actions.add_parser("remove", help="remove a member (never the last admin)")
        remove.add_argument("team")
        remove.add_argument("username")
        show = team_actions.add_parser("show", help="the team's members and their state now")
        show.add_argument("team")
        release = team_actions.add_parser(
            "overtime", help="release night: lift the team's schedule for everyone (or: clear)"
        )
        release.add_argument("team")
        release.add_argument("duration", help="30m, 2h, 1h30m (up to 24h), or clear")
        team_token = actions.add_parser(
            "team-token", help="print a new team key (asks for any member) on the last line"
        )
        team_token.add_argument("team")
        team_token.add_argument("--name", default="", help="a label for the key")
        prune = actions.add_parser(
            "prune",
            help="delete raw decisions older than the retention "
            "(CURFEW_LEDGER_RETENTION_DAYS, default 30); hourly totals are kept; also "
            "the owners of stored responses past the upstream's 30 days",
        )
        prune.add_argument(
            "--days", type=int, default=None, help="keep this many days instead (at least 1)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # What a command makes (a new user's replies) and prints is in the
        # operator's language, never in whatever a caller's thread left active
        # (a request before ``call_command`` in the same thread, as in tests).
        with translation.override(django_settings.LANGUAGE_CODE):
            self._handle(options)

    def _handle(self, options: dict[str, Any]) -> None:
        name = options["action"]
        if name == "debug":
            name = "pretend"  # the old spelling of the same action
        _refuse_bad_text(options, ("user", "name", "password"), prefix="--")
        if name == "demo":
            self._demo(options["user"], options["password"], options.get("token_file"))
            return
        if name == "prune":
            self._prune(options.get("days"))
            return
        if name in ("team", "team-token"):
            self._team_command(name, options)
            return
        user = self._user(options["user"], create=bool(options.get("create_user")))
        if name in ("token", "embed-token"):
            self._token(user, name, options.get("name") or "")
        elif name == "status":
            self._print_state(user)
        elif name == "import-config":
            self._import(user, options["file"])
        else:
            self._override(user, name, options)

    def _team_command(self, name: str, options: dict[str, Any]) -> None:
        """``team`` and ``team-token``: a refused change says nothing changed."""
        _refuse_bad_text(options, ("team", "username", "admin"), prefix="")
        try:
            self._team(name, options)
        except (TeamError, ConfigError, OverrideError) as exc:
            raise CommandError(f"{exc}; nothing changed") from None

    def _token(self, user: User, name: str, label: str) -> None:
        """``token`` (an API token) or ``embed-token``: printed once, on its own line."""
        kind = "api" if name == "token" else "embed"
        token, raw = token_create(user=user, name=label, kind=kind, channel="command")
        self.stdout.write(
            f"{token.get_kind_display()} token for {user.get_username()} (shown once):"
        )
        self.stdout.write(raw)

    def _override(self, user: User, name: str, options: dict[str, Any]) -> None:
        """``overtime``, ``off``, ``auto`` and ``pretend``: the override's own
        words (``override_commands.from_words``), applied, then the state."""
        words = {
            "overtime": ["overtime", options.get("duration", "")],
            "pretend": ["debug", " ".join(options.get("moment") or [])],
        }.get(name, [name])
        if name == "pretend" and options.get("pretend_for") is not None:
            words += ["for", options["pretend_for"]]
        try:
            command = override_commands.from_words(words)
            override_apply(user=user, command=command, now=timezone.now(), channel="command")
        except OverrideError as exc:
            raise CommandError(str(exc)) from None
        self._print_state(user)

    def _user(self, username: str, *, create: bool) -> User:
        user = user_by_name(username)
        if user is not None:
            return user
        if not create:
            raise CommandError(
                f"no user {username!r}; create one (or pass --create-user to `curfew token`)"
            )
        return user_create(username=username)

    def _print_state(self, user: User) -> None:
        now = timezone.now()
        state = state_payload(user_id=user.pk, now=now)
        # The wire name first (what scripts and the API read: ``winding — ``),
        # then the state in the page's words and the engine's reason.
        self.stdout.write(f"{state['state']} — {STATE_NAMES[state['state']]} · {state['reason']}")
        if state["schedule_state"] != state["state"]:
            self.stdout.write(f"the schedule alone says: {_named(state['schedule_state'])}")
        line = _next_line(user, now)
        if line:
            self.stdout.write(line)

    def _import(self, user: User, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        except (ValueError, RecursionError) as exc:
            # Not only JSONDecodeError: bad UTF-8, a number past CPython's
            # 4300-digit limit and deep nesting raise their own errors.
            problem = "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
            raise CommandError(f"{path} is not valid JSON: {problem}") from None
        try:
            settings, overrides, unknown = translate(data)
        except ConfigError as exc:
            raise CommandError(f"{path} was not imported; nothing changed: {exc}") from None
        # Reported whether or not the rest imports: nothing is dropped silently.
        for key in unknown:
            self.stderr.write(f"not imported: unknown key {key!r}")
        try:
            with transaction.atomic():
                schedule = schedule_update(
                    user=user, changes=settings, source="import", channel="command"
                )
                if overrides:
                    command = override_commands.from_json(overrides)
                    override_apply(
                        user=user, command=command, now=timezone.now(), channel="command"
                    )
        except ConfigError as exc:
            lines = "\n".join(
                f"  {source_key(field)}: {problem}" for field, problem in exc.errors.items()
            )
            raise CommandError(f"{path} was not imported; nothing changed:\n{lines}") from None
        except OverrideError as exc:
            raise CommandError(
                f"{path} was not imported; nothing changed: debugNow: {exc}"
            ) from None
        self.stdout.write(
            f"imported {len(settings)} setting(s) into {user.get_username()}'s schedule "
            f"(version {schedule.version})"
        )

    def _team_named(self, name: str) -> Team:
        team = team_by_name(name)
        if team is None:
            raise CommandError(f"no team {name!r}; create it with `curfew team create`")
        return team

    def _team(self, name: str, options: dict[str, Any]) -> None:
        now = timezone.now()
        if name == "team-token":
            team = self._team_named(options["team"])
            token, raw = team_token_create(
                team=team, name=options.get("name") or "", channel="command"
            )
            self.stdout.write(f"team key for {team.name} (shown once; prefix {token.prefix}):")
            self.stdout.write(raw)
            return
        what = options["team_action"]
        if what == "create":
            admin = self._user(options["admin"], create=False)
            team = team_create(name=options["team"], admin=admin, channel="command")
            self.stdout.write(f"team {team.name} created; admin: {admin.get_username()}")
            return
        team = self._team_named(options["team"])
        if what == "add":
            user = self._user(options["username"], create=False)
            member_add(team=team, user=user, role=options["role"], channel="command")
            self.stdout.write(f"{user.get_username()} is now a {options['role']} of {team.name}")
        elif what == "role":
            user = self._user(options["username"], create=False)
            member_role_change(team=team, user=user, role=options["role"], channel="command")
            self.stdout.write(f"{user.get_username()} is now a {options['role']} of {team.name}")
        elif what == "remove":
            user = self._user(options["username"], create=False)
            member_remove(team=team, user=user, channel="command")
            self.stdout.write(f"{user.get_username()} left {team.name}")
        elif what == "overtime":
            text = options["duration"].strip().lower()
            duration = None if text == "clear" else parse_duration(text)
            team = team_overtime_set(team=team, now=now, duration=duration, channel="command")
            until = team.overtime_until
            zone = team_zone(team)
            self.stdout.write(
                f"{team.name}: team overtime until {_wall(until, zone)} ({zone.key})"
                if until is not None
                else f"{team.name}: team overtime ended"
            )
        elif what == "show":
            page = members_page(team=team, now=now, per_page=MAX_PER_PAGE)
            # Wall times, as ``status`` and the Team card say them: on the
            # team's clock (each member's own may differ), named once.
            zone = team_zone(team)
            self.stdout.write(
                f"team {team.name}: {page.total} member(s), times on the team's clock ({zone.key})"
            )
            for row in page.rows:
                coming = (
                    "no change within 30 h"
                    if row.next is None
                    else f"next {row.next.state.value} at {_wall(row.next.at, zone)}"
                )
                self.stdout.write(
                    f"  {row.username} ({row.role}): {row.state.value} — {row.reason}; {coming}"
                )

    def _prune(self, days: int | None) -> None:
        keep = django_settings.CURFEW_LEDGER_RETENTION_DAYS if days is None else days
        if keep < 1:
            raise CommandError(f"--days must be at least 1, not {keep}")
        now = timezone.now()
        deleted = decisions_prune(before=now - timedelta(days=keep))
        self.stdout.write(f"pruned {deleted} decision(s) older than {keep} day(s)")
        # Past the upstream's retention, whatever --days says of the ledger.
        owners = stored_responses_prune(before=stored_response_cutoff(now))
        self.stdout.write(
            f"pruned {owners} stored response owner(s) older than {STORED_RESPONSE_DAYS} day(s)"
        )

    def _demo(self, username: str, password: str, token_file: Path | None) -> None:
        """The demo login and its API token, the same run after run.

        Every run used to revoke the last demo token and print a new one, so a
        gateway set up yesterday was refused today, without a word (issue 23).
        Tokens are stored hashed, so the raw one can only be printed again
        from where ``make run`` keeps it (``--token-file``, in ``.local/``,
        mode 600, like the secret key beside it). Nothing is revoked here: a
        demo token whose key was not kept still works, and is named.
        """
        user, password_set = demo_user_ensure(username=username, password=password)
        login = f"{username} / {password}" if password_set else f"{username} (password unchanged)"
        kept = _read_kept(token_file)
        self.stdout.write(f"demo login: {login}")
        if kept and live_token_matches(user_id=user.pk, name=DEMO_TOKEN_NAME, raw=kept):
            self.stdout.write(f"(the same demo API token as last time, kept in {token_file})")
            self.stdout.write(f"demo API token: {kept}")
            return
        earlier = live_token_prefixes(user_id=user.pk, name=DEMO_TOKEN_NAME)
        _, raw = token_create(user=user, name=DEMO_TOKEN_NAME, channel="command")
        if token_file is not None:
            _keep(token_file, raw)
        if earlier:
            shown = ", ".join(f"{prefix}…" for prefix in earlier)
            self.stdout.write(
                f"NOTE: a new demo API token was made; the earlier one(s) ({shown}) still "
                "work, but their keys were not kept"
                + (f" in {token_file}" if token_file is not None else "")
                + ". Revoke them on the Integrations page once nothing uses them."
            )
        self.stdout.write(f"demo API token: {raw}")
