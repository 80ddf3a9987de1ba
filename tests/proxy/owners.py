"""A served proxy's record of whose a stored response is, made as the proxy
makes it (``services.stored_responses``), for the tests that read the fake
upstream's one stored response: only its maker may (``proxy.stored_owner``)."""

from __future__ import annotations

from curfew_testkit.server import ServedApp


def own(app: ServedApp, username: str, response_id: str) -> None:
    """``response_id`` is ``username``'s in ``app``'s database."""
    script = (
        "from django.contrib.auth.models import User\n"
        "from django.utils import timezone\n"
        "from curfew_core.services.stored_responses import stored_response_record\n"
        f"user = User.objects.get(username={username!r})\n"
        f"stored_response_record(response_id={response_id!r}, user_id=user.pk, "
        "at=timezone.now())\n"
    )
    app.manage("shell", "-c", script)
