"""The capsule in real Chromium: embedded on another site's page, in an iframe and on
the app's own pages; changes arrive without reload; a server restart heals.

The host page is served from 127.0.0.2, an origin the app does not allow, so the
embed is exercised exactly as a third-party page would use it.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from curfew_testkit.server import ServedApp
from tests.browser.support import api_post, assert_fits, open_context

pytestmark = pytest.mark.browser

USER = "capsule-browser"
HOSTILE_CSS = """
  body { font: 18px Georgia, serif; background: #fafafa; }
  /* A careless host stylesheet: none of it may reach inside the capsule. */
  span, div, p { color: red !important; border: 3px solid red !important; font-size: 30px; }
  * { letter-spacing: 0.3em; }
"""


class HostPages:
    """A tiny plain-HTML site on another origin (127.0.0.2) serving fixed pages."""

    def __init__(self, pages: dict[str, str]) -> None:
        body = {path: html.encode() for path, html in pages.items()}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                page = body.get(self.path)
                self.send_response(200 if page else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(page or b"not found")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        self.base_url = f"http://127.0.0.2:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def host_page(app: str, token: str) -> str:
    script = f"{app}/static/curfew/capsule.js"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Someone else's dashboard</title>
<style>{HOSTILE_CSS}</style></head>
<body>
  <h1>Someone else's dashboard</h1>
  <p id="wide">Wide: <script src="{script}" data-token="{token}"></script></p>
  <p id="narrow">Narrow:
    <script src="{script}" data-token="{token}" data-mode="narrow"></script></p>
  <p>Iframe:</p>
  <iframe src="{app}/embed/capsule/?token={token}" title="AI status" width="340" height="48"
          style="border:0"></iframe>
</body></html>"""


def polling_page(app: str, token: str) -> str:
    # A browser (or proxy) without WebSockets: the capsule must fall back to HTTP.
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>No WebSockets here</title>
<script>window.WebSocket = undefined;</script></head>
<body><p>
  <script src="{app}/static/curfew/capsule.js" data-token="{token}" data-poll="1"></script>
</p>
</body></html>"""


def session_cookie(app: ServedApp) -> dict[str, str]:
    """A signed-in session for USER, made server-side (no dependence on a login page)."""
    code = (
        "from django.conf import settings; from django.contrib.auth import SESSION_KEY, "
        "BACKEND_SESSION_KEY, HASH_SESSION_KEY; from django.contrib.auth.models import User; "
        "from importlib import import_module; "
        f"u = User.objects.get(username={USER!r}); "
        "s = import_module(settings.SESSION_ENGINE).SessionStore(); "
        "s[SESSION_KEY] = str(u.pk); "
        "s[BACKEND_SESSION_KEY] = 'django.contrib.auth.backends.ModelBackend'; "
        "s[HASH_SESSION_KEY] = u.get_session_auth_hash(); s.create(); "
        "print(settings.SESSION_COOKIE_NAME, s.session_key)"
    )
    name, key = app.manage("shell", "-c", code).stdout.split()[-2:]
    return {"name": name, "value": key, "url": app.base_url}


@pytest.fixture(scope="module")
def tokens(served_app: ServedApp) -> dict[str, str]:
    api = served_app.create_user(USER)
    out = served_app.manage("curfew", "embed-token", "--user", USER).stdout
    return {"api": api, "embed": out.strip().splitlines()[-1]}


@pytest.fixture(scope="module")
def host(served_app: ServedApp, tokens: dict[str, str]) -> Iterator[HostPages]:
    pages = HostPages(
        {
            "/": host_page(served_app.base_url, tokens["embed"]),
            "/polling": polling_page(served_app.base_url, tokens["embed"]),
        }
    )
    yield pages
    pages.close()


# -- helpers reading the capsules (open shadow roots; the iframe is its own frame) ------

ALL_CAPSULES = "() => [...document.querySelectorAll('curfew-capsule')]"
FORCED_OFF = (
    "h.dataset.state === 'lights-out' && "
    "h.shadowRoot.querySelector('.detail').textContent.includes('switched off by hand')"
)
NOT_FORCED = (
    "h.dataset.link === 'live' && !h.shadowRoot.textContent.includes('switched off by hand')"
)


def wait_capsules(frame: Any, condition: str, timeout: float = 15) -> None:
    """Wait until every capsule in ``frame`` satisfies the JS ``condition`` on ``h`` (host).

    Polled from outside: ``wait_for_function`` evals inside the page, which the
    settings pages' strict CSP forbids."""
    expression = (
        f"() => {{ const hs = ({ALL_CAPSULES})(); "
        f"return hs.length > 0 && hs.every(h => {condition}); }}"
    )
    deadline = time.monotonic() + timeout
    while not frame.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"capsules still not {condition} after {timeout}s")
        time.sleep(0.1)


def words(frame: Any) -> list[str]:
    return list(
        frame.evaluate(
            f"""() => ({ALL_CAPSULES})().map(h => {{
              const r = h.shadowRoot;
              return [r.querySelector('.face').textContent, r.querySelector('.label').textContent,
                      r.querySelector('.detail').textContent].join(' ').trim(); }})"""
        )
    )


def live_text(frame: Any) -> list[str]:
    return list(
        frame.evaluate(
            f"() => ({ALL_CAPSULES})().map(h => "
            "h.shadowRoot.querySelector('[aria-live]').textContent)"
        )
    )


def everywhere(page: Any, condition: str, timeout: float = 15) -> None:
    for frame in page.frames:
        if "/embed/capsule/" in frame.url or frame is page.main_frame:
            wait_capsules(frame, condition, timeout)


def shot(page: Any, artifacts_dir: str, name: str) -> None:
    page.screenshot(path=os.path.join(artifacts_dir, name), full_page=True)


# -- the tests ------------------------------------------------------------------------------


def test_embedded_capsules_follow_overrides_and_heal_after_a_restart(
    browser: Any, served_app: ServedApp, host: HostPages, tokens: dict[str, str], artifacts_dir: str
) -> None:
    context = browser.new_context(viewport={"width": 900, "height": 420})
    errors: list[str] = []
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    api_post(served_app, tokens["api"], "/api/v1/overrides", {"auto": True})
    page.goto(host.base_url + "/")
    assert len(page.frames) == 2

    # Live: every capsule (wide, narrow, iframe) shows a real state from the socket.
    everywhere(page, "h.dataset.link === 'live' && h.dataset.state !== 'unknown'")
    everywhere(page, "h.dataset.css === 'loaded'")
    shot(page, artifacts_dir, "capsule-host-live.png")

    # Its own stylesheet applies; the host's hostile CSS does not reach inside.
    look = page.evaluate(
        """() => { const r = document.querySelector('#wide curfew-capsule').shadowRoot;
                   const pill = getComputedStyle(r.querySelector('.capsule'));
                   const label = getComputedStyle(r.querySelector('.label'));
                   return {radius: pill.borderTopLeftRadius, color: label.color,
                           spacing: label.letterSpacing}; }"""
    )
    assert look["radius"] == "999px"
    assert look["color"] != "rgb(255, 0, 0)"
    assert look["spacing"] == "normal"

    # Narrow shows the face only; the words stay for screen readers, the reason in the title.
    narrow = page.evaluate(
        """() => { const r = document.querySelector('#narrow curfew-capsule').shadowRoot;
                   const w = r.querySelector('.words').getBoundingClientRect();
                   const f = r.querySelector('.face').getBoundingClientRect();
                   return {words: w.width * w.height, face: f.width,
                           text: r.querySelector('.label').textContent,
                           title: r.querySelector('.capsule').title}; }"""
    )
    assert narrow["words"] <= 1
    assert narrow["face"] > 10
    assert narrow["text"]
    assert narrow["title"]

    # An override through the API reaches every capsule without a reload.
    api_post(served_app, tokens["api"], "/api/v1/overrides", {"off": True})
    everywhere(page, FORCED_OFF)
    assert all("Asleep" in w for w in words(page.main_frame))
    assert all("Asleep" in t for t in live_text(page.main_frame)), "announced to AT"
    shot(page, artifacts_dir, "capsule-host-forced-off.png")

    api_post(served_app, tokens["api"], "/api/v1/overrides", {"overtime": "30m"})
    everywhere(page, "h.dataset.state === 'overtime'")
    # The pushed words (curfew_core/vocabulary.py), the capsule's own gone.
    assert all("On overtime" in w and "until " in w for w in words(page.main_frame))
    shot(page, artifacts_dir, "capsule-host-overtime.png")

    # The server goes away: no capsule pretends to know the state any more.
    served_app.stop()
    try:
        everywhere(page, "h.dataset.link === 'reconnecting' && h.dataset.state === 'unknown'")
        assert all("reconnecting" in w for w in words(page.main_frame))
        first_retry = page.evaluate(
            "() => Number(document.querySelector('curfew-capsule').dataset.retryMs)"
        )
        shot(page, artifacts_dir, "capsule-host-reconnecting.png")
    finally:
        served_app.start()
    # …and comes back: the capsules reconnect on their own, no reload.
    everywhere(page, "h.dataset.link === 'live' && h.dataset.state === 'overtime'", timeout=40)
    shot(page, artifacts_dir, "capsule-host-recovered.png")
    assert first_retry <= 30_000
    assert not [e for e in errors if "Content Security Policy" in e], errors
    api_post(served_app, tokens["api"], "/api/v1/overrides", {"auto": True})
    context.close()


def test_winding_shows_the_curves_budget(
    browser: Any, served_app: ServedApp, host: HostPages, tokens: dict[str, str], artifacts_dir: str
) -> None:
    """The state answer names the curve's budget ``budget`` (``max_tokens`` is only a
    verdict's clamp); the capsule reads it under that name."""
    context = browser.new_context(viewport={"width": 900, "height": 420})
    page = context.new_page()
    state = api_post(served_app, tokens["api"], "/api/v1/overrides", {"debug": "23:30"})
    try:
        assert state["state"] == "winding"
        assert state["budget"] > 0
        page.goto(host.base_url + "/")
        everywhere(page, "h.dataset.link === 'live' && h.dataset.state === 'winding'")
        # The time machine runs on, so the budget may have stepped since: any number.
        shown = words(page.main_frame)
        assert all(re.search(r"answers up to \d+ tokens", w) for w in shown), shown
        shot(page, artifacts_dir, "capsule-host-winding.png")
    finally:
        api_post(served_app, tokens["api"], "/api/v1/overrides", {"debug": "clear"})
    context.close()


def test_a_boot_race_heals_without_a_reload(
    browser: Any, served_app: ServedApp, host: HostPages, tokens: dict[str, str], artifacts_dir: str
) -> None:
    """The page and its (cached) script are there before the server is: the capsule
    waits honestly and goes live when the server comes up, with no reload."""
    static = Path(__file__).resolve().parents[2] / "static" / "curfew"
    context = browser.new_context(viewport={"width": 900, "height": 420})
    for name, kind in (("capsule.js", "text/javascript"), ("capsule.css", "text/css")):
        body = (static / name).read_bytes()
        context.route(
            f"{served_app.base_url}/static/curfew/{name}",
            lambda route, _request, body=body, kind=kind: route.fulfill(
                body=body, content_type=kind
            ),
        )
    page = context.new_page()
    served_app.stop()
    try:
        page.goto(host.base_url + "/")
        wait_capsules(page, "h.dataset.link === 'reconnecting' && h.dataset.state === 'unknown'")
        shot(page, artifacts_dir, "capsule-boot-race-waiting.png")
    finally:
        served_app.start()
    wait_capsules(page, "h.dataset.link === 'live' && h.dataset.state !== 'unknown'", timeout=40)
    shot(page, artifacts_dir, "capsule-boot-race-live.png")
    context.close()


def test_without_websockets_the_capsule_polls(
    browser: Any, served_app: ServedApp, host: HostPages, tokens: dict[str, str], artifacts_dir: str
) -> None:
    context = browser.new_context(viewport={"width": 600, "height": 200})
    page = context.new_page()
    api_post(served_app, tokens["api"], "/api/v1/overrides", {"off": True})
    page.goto(host.base_url + "/polling")
    wait_capsules(page, f"h.dataset.link === 'polling' && {FORCED_OFF}")
    api_post(served_app, tokens["api"], "/api/v1/overrides", {"overtime": "1h"})
    wait_capsules(page, "h.dataset.link === 'polling' && h.dataset.state === 'overtime'")
    shot(page, artifacts_dir, "capsule-polling.png")
    api_post(served_app, tokens["api"], "/api/v1/overrides", {"auto": True})
    context.close()


def test_a_bad_embed_token_says_so_and_stops(
    browser: Any, served_app: ServedApp, artifacts_dir: str
) -> None:
    context = browser.new_context(viewport={"width": 600, "height": 200})
    page = context.new_page()
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    # The app's own iframe page refuses a bad token outright…
    response = page.goto(f"{served_app.base_url}/embed/capsule/?token=cfe_wrong")
    assert response is not None
    assert response.status == 401
    assert "unknown or revoked embed token" in page.content()
    # …and a script embed with one shows why, then stops knocking.
    page.set_content(
        f'<script src="{served_app.base_url}/static/curfew/capsule.js" data-token="cfe_wrong">'
        "</script>"
    )
    wait_capsules(page, "h.dataset.state === 'refused'")
    assert "embed token refused" in words(page.main_frame)[0]
    page.wait_for_timeout(2500)
    assert len(sockets) == 1, f"retried a refused token: {sockets}"
    shot(page, artifacts_dir, "capsule-refused.png")
    context.close()


def test_the_apps_own_pages_show_the_session_capsule(
    browser: Any, served_app: ServedApp, tokens: dict[str, str], artifacts_dir: str
) -> None:
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    context.add_cookies([session_cookie(served_app)])
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    # The embed page's panel and the Integrations section's capsule.
    for path, panel in (("/embed/", "#capsule-panel"), ("/integrations/", "#capsule")):
        page.goto(served_app.base_url + path)
        assert page.locator(f"{panel} curfew-capsule").count() == 1, path
        wait_capsules(page, "h.dataset.link === 'live' && h.dataset.state !== 'unknown'")
        api_post(served_app, tokens["api"], "/api/v1/overrides", {"off": True})
        wait_capsules(page, FORCED_OFF)
        name = "capsule-panel-settings-page" if path != "/embed/" else "capsule-panel-embed-page"
        page.locator(panel).screenshot(path=os.path.join(artifacts_dir, f"{name}.png"))
        api_post(served_app, tokens["api"], "/api/v1/overrides", {"auto": True})
        wait_capsules(page, NOT_FORCED)
    # Minting a token from the panel shows it once, inside a working snippet.
    page.goto(served_app.base_url + "/embed/")
    page.get_by_role("button", name="Create embed token").click()
    snippet = page.locator("code[data-snippet=script]").inner_text()
    assert 'data-token="cfe_' in snippet
    assert f"{served_app.base_url}/static/curfew/capsule.js" in snippet
    shot(page, artifacts_dir, "capsule-panel-new-token.png")
    assert not [e for e in errors if "Content Security Policy" in e], errors
    context.close()


# -- the 24-hour band (data-band="24h", iframe ?band=24h) -----------------------------

#: The states' colours as states.css declares them (light; dark lights-out is lighter).
STATE_RGB = {
    "on-duty": "rgb(86, 180, 233)",
    "winding": "rgb(230, 159, 0)",
    "off-duty": "rgb(204, 121, 167)",
    "lights-out": "rgb(31, 42, 92)",
}
DARK_LIGHTS_OUT = "rgb(74, 86, 166)"


def band_page(app: str, token: str) -> str:
    script = f"{app}/static/curfew/capsule.js"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<link rel="icon" href="data:,">
<title>A dashboard with the band</title><style>{HOSTILE_CSS}</style></head>
<body>
  <p id="wide"><script src="{script}" data-token="{token}" data-band="24h"></script></p>
  <p id="narrow"><script src="{script}" data-token="{token}" data-band="24h"
     data-mode="narrow"></script></p>
  <p id="plain"><script src="{script}" data-token="{token}"></script></p>
  <iframe src="{app}/embed/capsule/?token={token}&amp;band=24h" title="AI status" width="300"
          height="96" style="border:0"></iframe>
</body></html>"""


BAND_HOSTS = "() => [...document.querySelectorAll('curfew-capsule[data-band]')]"


def band_facts(frame: Any) -> list[dict[str, Any]]:
    """What each band capsule in ``frame`` draws: its cells' states and fills, the
    now marker's place, and the band's size."""
    facts: list[dict[str, Any]] = frame.evaluate(
        f"""() => ({BAND_HOSTS})().map(h => {{
              const r = h.shadowRoot, band = r.querySelector('.band');
              const cells = [...r.querySelectorAll('.band-cells .cell')];
              const now = r.querySelector('.band-now');
              const box = band.getBoundingClientRect();
              const fills = {{}};
              for (const c of cells) fills[c.dataset.state] = getComputedStyle(c).backgroundColor;
              return {{hidden: band.hidden, states: cells.map(c => c.dataset.state), fills,
                      label: band.getAttribute('aria-label') || '',
                      nowShown: !now.hidden, nowLeft: parseFloat(now.style.left),
                      nowAt: h.dataset.now, width: box.width, height: box.height,
                      hostWidth: h.getBoundingClientRect().width}}; }})"""
    )
    return facts


@pytest.mark.parametrize(
    ("width", "scheme"),
    [(900, "light"), (900, "dark"), (390, "light"), (390, "dark")],
    ids=["desktop-light", "desktop-dark", "phone-light", "phone-dark"],
)
def test_the_capsule_draws_the_24_hour_band_when_asked(
    browser: Any,
    served_app: ServedApp,
    tokens: dict[str, str],
    artifacts_dir: str,
    width: int,
    scheme: str,
) -> None:
    pages = HostPages({"/band": band_page(served_app.base_url, tokens["embed"])})
    # This test has always waited with Playwright's own default timeout.
    context = open_context(browser, width=width, height=640, scheme=scheme, timeout=None)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    # A weekday at 10:00 (the time machine runs on from there): peak hours, off duty.
    api_post(served_app, tokens["api"], "/api/v1/overrides", {"debug": "2026-09-29 10:00"})
    try:
        page.goto(pages.base_url + "/band")
        assert len(page.frames) == 2
        frames = [f for f in page.frames if f is page.main_frame or "/embed/capsule/" in f.url]
        # Live and styled, and (when the band was asked for) the band drawn: it
        # is not in the shadow root until the first message, hence ``?.``.
        ready = (
            "h.dataset.link === 'live' && h.dataset.css === 'loaded' && "
            "(!h.hasAttribute('data-band') || "
            "(h.shadowRoot.querySelector('.band')?.hidden === false && !!h.dataset.now))"
        )
        for frame in frames:
            wait_capsules(frame, ready)
        facts = [fact for frame in frames for fact in band_facts(frame)]
        assert len(facts) == 3, "wide, narrow and the iframe ask for the band"
        for fact in facts:
            assert not fact["hidden"]
            assert len(fact["states"]) == 96
            # The default Tuesday: 09-12 and 14-18 off duty (peak), lights out 03-09.
            assert fact["states"][36:48] == ["off-duty"] * 12
            assert fact["states"][12:36] == ["lights-out"] * 24
            assert fact["states"][48:56] == ["on-duty"] * 8
            # The now marker sits at 10:xx (40/96 of the day and a bit).
            assert fact["nowShown"]
            assert fact["nowAt"].startswith("10:")
            assert 41.6 <= fact["nowLeft"] < 42.4, fact["nowLeft"]
            # One palette: the fills are states.css's colours, as on the settings page.
            expected = dict(STATE_RGB)
            if scheme == "dark":
                expected["lights-out"] = DARK_LIGHTS_OUT
            assert fact["fills"] == expected
            assert fact["label"].startswith("2026-09-29: 00:00–03:00 Getting sleepy")
            assert fact["height"] > 10
            assert fact["width"] <= width
        # The capsule that did not ask has no band.
        assert page.evaluate(
            "() => !document.querySelector('#plain curfew-capsule').shadowRoot"
            ".querySelector('.band')"
        )
        # No sideways scroll on a phone.
        assert_fits(page, width)
        shot(page, artifacts_dir, f"capsule-band-{width}-{scheme}.png")

        # Another day (a weekend): the band is pushed again and redrawn, no reload.
        api_post(served_app, tokens["api"], "/api/v1/overrides", {"debug": "2026-10-11 10:00"})
        for frame in frames:
            wait_capsules(
                frame,
                "!h.hasAttribute('data-band') || "
                "h.shadowRoot.querySelector('.band').getAttribute('aria-label')"
                ".startsWith('2026-10-11')",
            )
        for fact in [fact for frame in frames for fact in band_facts(frame)]:
            assert "off-duty" not in fact["states"], "a Sunday has no peak hours"
            assert fact["nowShown"]
        violations = [v for frame in frames for v in frame.evaluate("window.__csp || []")]
        assert violations == [], f"CSP violations: {violations}"
        assert failed == [], failed
        assert errors == [], errors
    finally:
        api_post(served_app, tokens["api"], "/api/v1/overrides", {"debug": "clear"})
        context.close()
        pages.close()
