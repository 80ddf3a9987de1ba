"""A process that records decisions until it is killed (``test_crash.py``),
or, given a number, records that many and exits normally.

Prints ``<n> <monotonic seconds>`` after recording decision ``n`` (session
``s<n>``), so the test knows when each was handed to the recorder.
"""

from __future__ import annotations

import sys
import time

import django


def main() -> None:
    django.setup()
    from django.contrib.auth.models import User
    from django.utils import timezone

    from curfew_core.ledger.entry import Entry
    from curfew_core.services.ledger_recorder import record

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
        time.sleep(0.05)


if __name__ == "__main__":
    main()
