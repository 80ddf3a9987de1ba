"""The Team page of a team of 5,000: how long an admin's page takes, cold and warm.

    python -m bench.teampage [--members 5000] [--rounds 5]

Django's test client asks for ``/team/`` in this process (no server), signed
in as the team's admin, on a SQLite file. Cold: the members' cached rows are
dropped before each ask, as after a deploy or for a page nobody read lately
(each of the page's fifty members is read from the database); warm: asked
again at once. Page 1 and page 100 each: the count of members in the team
must not show in either (a page is read, never the team). Prints the best and
the median of ``--rounds`` asks, and the queries each made.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.record import django_on_sqlite


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--members", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args, _ = parser.parse_known_args()

    django_on_sqlite("curfew-teampage-bench-")
    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from curfew_core.models import TeamMembership
    from curfew_core.services.teams import team_create

    admin = User.objects.create_user("bench-admin")
    team = team_create(name="bench", admin=admin)
    unusable = "!"  # no password signs in as a bench member
    people = User.objects.bulk_create(
        [User(username=f"m{n:05d}", password=unusable) for n in range(args.members)]
    )
    TeamMembership.objects.bulk_create(
        [TeamMembership(team=team, user=person, role="member") for person in people]
    )
    client = Client()
    client.force_login(admin)

    def ask(path: str, *, cold: bool) -> tuple[float, int]:
        if cold:
            cache.clear()
            client.force_login(admin)  # the session lives in the cache too
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(path)
            took = time.perf_counter() - started
        assert response.status_code == 200, response.status_code
        assert response.content.count(b'<tr data-member="') == 50
        return took * 1000, len(queries.captured_queries)

    print(f"Team page, {args.members + 1:,} members, best / median of {args.rounds} (ms), queries")
    for path in ("/team/", "/team/?page=100"):
        for cold in (True, False):
            ask(path, cold=cold)
            runs = [ask(path, cold=cold) for _ in range(args.rounds)]
            times = [ms for ms, _ in runs]
            print(
                f"  {path:<18} {'cold' if cold else 'warm'}  "
                f"{min(times):7.1f} / {statistics.median(times):7.1f}  "
                f"{runs[-1][1]:4d} queries"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
