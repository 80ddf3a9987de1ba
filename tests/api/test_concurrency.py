"""Two saves of the same version at the same moment: one lands, the other is
told its version is stale (409). Never a lost update, never a 500.

Run on a real SQLite file in a child process: the test database is in memory,
where SQLite's locking is not what ``make run`` gets.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from curfew_testkit.server import ROOT

RACE = r"""
import json, threading
import django
django.setup()
from django.core.management import call_command
from django.db import connections
call_command("migrate", verbosity=0)
from django.contrib.auth.models import User
from curfew_core.services.schedules import StaleVersion, schedule_update

user = User.objects.create_user("racer")
outcomes = []
for round_ in range(ROUNDS):
    version = schedule_update(user=user, changes={"curve": "step"}, source="t").version
    start = threading.Barrier(2)

    def save(who):
        start.wait()
        try:
            schedule_update(
                user=user, changes={"tired_persona": f"{round_}-{who}"},
                expected_version=version, source="t",
            )
            outcomes.append("saved")
        except StaleVersion:
            outcomes.append("stale")
        except Exception as exc:
            outcomes.append(f"{type(exc).__name__}: {exc}")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=save, args=(who,)) for who in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    schedule_update(user=user, changes={"curve": "linear"}, source="t")
print(json.dumps(outcomes))
"""


def test_same_version_saves_race_to_one_save_and_one_409(tmp_path: Path) -> None:
    rounds = 12
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "curfew_site.settings_test",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'race.sqlite3'}",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "-c", RACE.replace("ROUNDS", str(rounds))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcomes = __import__("json").loads(result.stdout.strip().splitlines()[-1])
    assert sorted(set(outcomes)) == ["saved", "stale"], outcomes
    assert outcomes.count("saved") == rounds
    assert outcomes.count("stale") == rounds
