"""The settings pages' render time with each form renderer, side by side in one run.

    python -m bench.page_render [--rounds 7] [--asks 5] [--write FILE]

Django's test client asks for each section of the site (``web.sections``;
the Team page too: signed in as a team's admin) in this process (no server), on a SQLite file, the
clock running. Each round asks every page ``--asks`` times with Django's
template renderer for form widgets (``django.forms.renderers.DjangoTemplates``,
Django's default, the baseline) and as many times with the one the settings
name (``FORM_RENDERER``: Jinja2's), in turn, so a busy machine slows both
alike. Printed: each page's median milliseconds over every ask, both
renderers, and the ratio. ``--write FILE`` appends the run (markdown) to FILE.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.record import django_on_sqlite, loadavg, machine, published, revision, versions

BASELINE = "django.forms.renderers.DjangoTemplates"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--asks", type=int, default=5)
    parser.add_argument("--write", type=Path, metavar="FILE")
    args, _ = parser.parse_known_args()

    django_on_sqlite("curfew-page-render-bench-")
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client, override_settings
    from django.urls import reverse

    from curfew_core.services.teams import team_create
    from curfew_core.web.sections import SECTIONS

    admin = User.objects.create_user("bench-admin")
    team_create(name="bench", admin=admin)
    client = Client()
    client.force_login(admin)
    configured = settings.FORM_RENDERER
    pages = [reverse(section.url_name) for section in SECTIONS]
    started_load = loadavg()

    def ask(path: str) -> float:
        started = time.perf_counter()
        response = client.get(path)
        took = time.perf_counter() - started
        assert response.status_code == 200, (path, response.status_code)
        return took * 1000

    times: dict[tuple[str, str], list[float]] = {}
    for path in pages:  # each page once with each, before any is timed
        for renderer in (BASELINE, configured):
            with override_settings(FORM_RENDERER=renderer):
                ask(path)
    for _ in range(args.rounds):
        for renderer in (BASELINE, configured):
            with override_settings(FORM_RENDERER=renderer):
                for path in pages:
                    times.setdefault((path, renderer), []).extend(
                        ask(path) for _ in range(args.asks)
                    )

    lines = [
        f"{machine()}; {versions()}; commit {revision()}; in-process (Django's test "
        f"client), SQLite, a team's admin signed in; {args.rounds} rounds of "
        f"{args.asks} asks a page a renderer, in turn (medians); load average {started_load}",
        "",
        f"| page | `{BASELINE.rsplit('.', 1)[1]}` ms (Django's default) | "
        f"`{configured.rsplit('.', 1)[1]}` ms (`FORM_RENDERER`) | x |",
        "|---|---:|---:|---:|",
    ]
    for path in pages:
        before = statistics.median(times[(path, BASELINE)])
        now = statistics.median(times[(path, configured)])
        lines.append(f"| `{path}` | {before:.1f} | {now:.1f} | {now / before:.2f} |")
    text = "\n".join(lines)
    published(text, args.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
