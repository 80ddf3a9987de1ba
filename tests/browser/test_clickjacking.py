"""Clickjacking, in real Chromium: no other site can frame a page of Curfew
(issue 23, "not yet tried": only the headers had been checked).

A page on another origin (127.0.0.2) frames the sign-in page, the settings
pages, the admin's sign-in and the sign-up page (on here): each frame must
stay empty, refused by the browser (``frame-ancestors 'self'`` and
``X-Frame-Options``), so no hidden form can be clicked through a decoy. The
control is the capsule's iframe, which is made to be framed anywhere and
must load in the same page, so an empty frame means "refused", not "the
host page is broken".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import open_context
from tests.browser.test_capsule import HostPages, session_cookie

pytestmark = pytest.mark.browser

USER = "capsule-browser"  # session_cookie() signs this user in
FRAMED = ["/login/", "/", "/account/", "/integrations/", "/admin/login/", "/account/signup/"]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApp]:
    served = ServedApp(tmp_path_factory.mktemp("framed"), env={"CURFEW_SIGNUP": "1"})
    served.prepare()
    served.start()
    yield served
    served.stop()


@pytest.fixture(scope="module")
def host(app: ServedApp) -> Iterator[HostPages]:
    app.create_user(USER)
    embed = app.manage("curfew", "embed-token", "--user", USER).stdout.strip().splitlines()[-1]
    frames = "\n".join(
        f'<iframe name="f{n}" src="{app.base_url}{path}" width="600" height="300"></iframe>'
        for n, path in enumerate(FRAMED)
    )
    control = f'<iframe name="capsule" src="{app.base_url}/embed/capsule/?token={embed}"></iframe>'
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Win a prize</title></head><body><h1>Click the button!</h1>
{frames}
{control}
</body></html>"""
    pages = HostPages({"/": page})
    yield pages
    pages.close()


def _loaded(frame: Any) -> bool:
    """Whether ``frame`` shows a document of the app (a refused frame shows
    Chromium's own error document, or nothing)."""
    try:
        return bool(frame.evaluate("document.querySelector('body *') !== null"))
    except Exception:
        return False


def test_no_page_of_the_site_can_be_framed_by_another_site(
    browser: Any, app: ServedApp, host: HostPages
) -> None:
    context = open_context(browser, width=1280)
    try:
        # Signed in, as a person lured to the decoy would be.
        context.add_cookies([session_cookie(app)])
        page = context.new_page()
        refused: list[str] = []
        page.on(
            "console",
            lambda message: (
                refused.append(message.text) if "frame" in message.text.lower() else None
            ),
        )
        page.goto(host.base_url + "/", wait_until="load")
        capsule = page.frame(name="capsule")
        assert capsule is not None
        page.wait_for_timeout(300)
        assert capsule.url.startswith(app.base_url), capsule.url
        assert _loaded(capsule), "control: the capsule's iframe loads on another site"
        for n, path in enumerate(FRAMED):
            frame = page.frame(name=f"f{n}")
            assert frame is not None, path
            shows_app = frame.url.startswith(app.base_url) and _loaded(frame)
            assert not shows_app, f"{path} was framed by another site ({frame.url})"
        # Chromium says why, once per refused frame.
        assert len(refused) >= len(FRAMED), refused
    finally:
        context.close()
