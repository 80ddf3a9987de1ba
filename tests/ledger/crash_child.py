"""A process that records decisions until it is killed (``test_crash.py``),
or, given a number, records that many and exits normally.

Prints ``<n> <monotonic seconds>`` after recording decision ``n`` (session
``s<n>``), so the test knows when each was handed to the recorder.

The environment shapes it: ``CRASH_PAUSE`` (seconds between decisions, 0.05),
``CRASH_WRITE_SECONDS`` (each ledger write takes this long more: a database
under load, or a flusher starved of the GIL by a busy event loop), and
``CRASH_LINGER=1`` (after the last decision, wait to be killed, not exit).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import django


def main() -> None:
    django.setup()
    from django.contrib.auth.models import User
    from django.utils import timezone

    from curfew_core.ledger.entry import Entry
    from curfew_core.services import ledger_recorder
    from curfew_core.services.ledger_recorder import record

    slow = float(os.environ.get("CRASH_WRITE_SECONDS", "0"))
    if slow:
        write = ledger_recorder.decisions_write

        def slow_write(**kwargs: Any) -> int:
            time.sleep(slow)
            return write(**kwargs)

        ledger_recorder.decisions_write = slow_write  # type: ignore[assignment]
    pause = float(os.environ.get("CRASH_PAUSE", "0.05"))
    user = User.objects.create_user("crash")
    stop_after = int(sys.argv[1]) if len(sys.argv) > 1 else None
    n = 0
    while stop_after is None or n < stop_after:
        record(
            Entry(
                at=timezone.now(),
                state="off-duty",
                action="short-circuit",
                origin="chat",
                user_id=user.pk,
                session=f"s{n}",
                budget_after=0,
            )
        )
        sys.stdout.write(f"{n} {time.monotonic()}\n")
        sys.stdout.flush()
        n += 1
        if pause:
            time.sleep(pause)
    if os.environ.get("CRASH_LINGER") == "1":
        sys.stdout.write("done\n")
        sys.stdout.flush()
        time.sleep(3600)


if __name__ == "__main__":
    main()
