"""What every browser suite does the same way: open a watched context, sign in,
collect what went wrong on a page, and check that nothing spills sideways.

One place, so a change to how the suites watch for CSP violations or sign in
is made once. Pages and contexts stay ``Any``: Playwright is imported only
inside the session's ``browser`` fixture (a missing browser skips outside CI).
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from curfew_testkit.server import ServedApp

#: Records CSP violations (in every frame) before any page script runs.
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push([e.violatedDirective, e.blockedURI, e.sourceFile, e.lineNumber].join(" "));
});
"""

#: Playwright's own default is 30 s; the suites wait at most this long.
DEFAULT_TIMEOUT_MS = 15_000


def wait_until(page: Any, expression: str, timeout: float = 15.0) -> None:
    """Poll a JS expression from outside the page: Playwright's own
    ``wait_for_function`` evals inside the page, which the strict CSP forbids."""
    from playwright.sync_api import Error

    deadline = time.monotonic() + timeout
    while True:
        try:
            if page.evaluate(expression):
                return
        except Error as exc:  # a navigation in flight: ask the next document
            if "context was destroyed" not in str(exc):
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout}s: {expression}")
        page.wait_for_timeout(50)


class Watched:
    """A page plus everything that went wrong on it."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("response", self._response)

    def _response(self, response: Any) -> None:
        if response.status >= 500:
            self.problems.append(f"{response.status} {response.url}")

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.problems.append(f"console {message.type}: {message.text}")

    def assert_clean(self) -> None:
        violations = self.page.evaluate("window.__csp || []")
        assert violations == [], f"CSP violations: {violations}"
        assert self.problems == [], self.problems


def open_context(
    browser: Any,
    *,
    width: int,
    height: int = 900,
    scheme: str = "light",
    locale: str = "en-US",
    language: tuple[ServedApp, str] | None = None,
    timeout: float | None = DEFAULT_TIMEOUT_MS,
    **options: Any,
) -> Any:
    """A new browser context of ``width``×``height`` in colour ``scheme`` and
    ``locale``, with the CSP watcher in every page and ``timeout`` (ms, ``None``
    for Playwright's own) as the default wait.

    ``language=(app, code)`` sets Django's language cookie for ``app`` as the
    page's switcher would; ``options`` go to ``new_context`` as they are
    (``java_script_enabled``, ``has_touch``, ``is_mobile``, ...). The caller
    closes the context.
    """
    context = browser.new_context(
        viewport={"width": width, "height": height},
        color_scheme=scheme,
        locale=locale,
        **options,
    )
    context.add_init_script(WATCH_CSP)
    if timeout is not None:
        context.set_default_timeout(timeout)
    if language is not None:
        app, code = language
        context.add_cookies([{"name": "django_language", "value": code, "url": app.base_url}])
    return context


#: Django's session cookie (``SESSION_COOKIE_NAME``'s default, which the site keeps).
SESSION_COOKIE = "sessionid"
#: Each (app, user, password)'s session cookie from its last sign-in through
#: the form (``sign_in``), for the next context that signs the same user in.
_sessions: dict[tuple[str, str, str], dict[str, Any]] = {}


def sign_in(
    page: Any,
    app: ServedApp,
    user: str,
    password: str,
    *,
    start: str | None = "/login/",
    arrive: str = "/",
    landing: str | None = "#now-headline",
    form: bool = False,
) -> Any:
    """Sign in through the login form reached from ``start`` (``None``: the page
    shows it already); wait to arrive at ``arrive`` and, unless ``None``, for
    its ``landing`` element. Returns ``page``.

    From the login page (``start``'s default), a user already signed in
    through the form in this run by this app gets that session back: the
    cookie, then straight to ``arrive``. A sign-in is a PBKDF2 check on the
    server and two pages, 0.8 s a test on this machine, nearly half a browser
    test. A session that has ended meanwhile (a sign-out, a password change)
    sends ``arrive`` to the login form, which is then filled as ever; so is
    the form with ``form=True`` or any other ``start``. Only the session
    cookie is handed over: the new context keeps its own language cookie."""
    key = (app.base_url, user, password)
    kept = _sessions.get(key) if start == "/login/" and not form else None
    if kept is not None:
        page.context.add_cookies([kept])
        page.goto(f"{app.base_url}{arrive}")
        if page.url == f"{app.base_url}{arrive}":
            if landing is not None:
                page.wait_for_selector(landing)
            return page
        del _sessions[key]  # ended: the login form is on the page now
        start = None
    if start is not None:
        page.goto(f"{app.base_url}{start}")
    page.fill("#id_username", user)
    page.fill("#id_password", password)
    page.click(".login-card button[type=submit]")
    page.wait_for_url(f"{app.base_url}{arrive}")
    if landing is not None:
        page.wait_for_selector(landing)
    for cookie in page.context.cookies(app.base_url):
        if cookie["name"] == SESSION_COOKIE:
            _sessions[key] = cookie
    return page


def failing_posts(how: str) -> Any:
    """A route handler (``page.route``): a POST fails ``how`` ("abort": no
    answer at all, as a server down or a browser offline; "502": a proxy's
    bare page); anything else goes to the server."""

    def handle(route: Any) -> None:
        if route.request.method != "POST":
            route.continue_()
        elif how == "abort":
            route.abort("connectionrefused")
        else:
            route.fulfill(status=502, content_type="text/html", body="bad gateway")

    return handle


def api(app: ServedApp, token: str, method: str, path: str, body: Any = None) -> Any:
    """Call ``app``'s JSON API with a gateway key, as a client would; the decoded answer."""
    request = urllib.request.Request(
        f"{app.base_url}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def api_post(app: ServedApp, token: str, path: str, body: dict[str, Any]) -> Any:
    return api(app, token, "POST", path, body)


#: Elements under a selector whose box reaches past a width (a pixel of slack);
#: screen-reader-only text and preformatted blocks may.
STICKING_OUT = """([inside, w]) => Array.from(document.querySelectorAll(inside + ' *'))
  .filter(el => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.right > w + 1 && !el.closest('.sr-only, pre');
  }).map(el => el.tagName + '#' + el.id + '.' + el.className).slice(0, 5)"""


def assert_fits(page: Any, width: int | None = None, *, inside: str | None = None) -> None:
    """Nothing scrolls sideways: the document is no wider than ``width``, by
    default the window's inner width (in headless Chromium, whose scrollbars
    take no room, also the root's client width); with ``inside``, no element
    with a box under that selector reaches past ``width`` either."""
    scroll, limit = page.evaluate(
        "(w) => [document.documentElement.scrollWidth, w ?? window.innerWidth]", width
    )
    assert scroll <= limit, f"sideways scroll: {scroll} > {limit}"
    if inside is not None:
        sticking_out = page.evaluate(STICKING_OUT, [inside, limit])
        assert sticking_out == [], sticking_out


def served_team_member(
    app: ServedApp,
    *,
    team: str,
    admin: str,
    member: str,
    password: str,
    night: dict[str, Any],
) -> str:
    """A team made as the manual says, from a terminal (``curfew team create``
    and ``add``), its schedule's ``night`` changes saved by the service; the
    member's own API key."""
    tokens = app.create_users(
        member,
        admin,
        password=password,
        then=(
            ("curfew", "team", "create", team, "--admin", admin),
            ("curfew", "team", "add", team, member),
            team_schedule_command(team, night),
        ),
    )
    return tokens[member]


def team_schedule_command(team: str, changes: dict[str, Any]) -> tuple[str, ...]:
    """The ``manage.py`` command that saves ``changes`` to the team's schedule
    by the service (for ``ServedApp.create_users``' ``then`` too)."""
    return (
        "shell",
        "-c",
        "from curfew_core.selectors.teams import team_by_name\n"
        "from curfew_core.services.teams import team_schedule_update\n"
        f"team_schedule_update(team=team_by_name({team!r}), changes={changes!r})\n",
    )
