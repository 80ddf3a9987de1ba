"""Every time a page shows is on the user's clock (the schedule's time zone),
with the zone named: Integrations' "Last used" too, also after the key list
is redrawn in place (htmx), never the server's UTC."""

from __future__ import annotations

import datetime as dt
import re

from django.contrib.auth.models import User

from curfew_core.models import ApiToken
from curfew_core.services.tokens import token_create
from tests.web.conftest import PageClient

#: 2026-09-29 23:05 UTC: 07:05 the next morning in Shanghai (the default zone).
USED = dt.datetime(2026, 9, 29, 23, 5, tzinfo=dt.UTC)


def _last_used(html: str, token_id: int) -> str:
    row = re.search(rf'<tr data-token-id="{token_id}".*?</tr>', html, re.S)
    assert row, "no key row"
    cells: list[str] = re.findall(r"<td>(.*?)</td>", row.group(0), re.S)
    return cells[3].strip()


def test_last_used_is_on_the_users_clock(page: PageClient, user: User) -> None:
    token, _ = token_create(user=user, name="laptop")
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=USED)
    html = page.get("/integrations/").content.decode()
    assert _last_used(html, token.pk) == "2026-09-30 07:05"
    assert re.search(r"Last used <span[^>]*>\(Shanghai\)</span>", html)
    # Redrawn in place after a new key: still the user's clock.
    partial = page.post("/tokens/", {"name": "phone"}, htmx=True).content.decode()
    assert _last_used(partial, token.pk) == "2026-09-30 07:05"
    assert re.search(r"Last used <span[^>]*>\(Shanghai\)</span>", partial)
