"""The real server (whitenoise, hashed manifest names, debug off) serves the
page's own stylesheet and scripts: a missing or empty file fails here."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from django.contrib.staticfiles import finders

from curfew_testkit.server import ServedApp

USER = "web-static"


def _signed_in(app: ServedApp) -> httpx.Client:
    app.create_user(USER)
    client = httpx.Client(base_url=app.base_url, timeout=30)
    login = client.get("/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
    assert csrf
    response = client.post(
        "/login/",
        data={
            "username": USER,
            "password": "correct horse battery",
            "next": "/",
            "csrfmiddlewaretoken": csrf.group(1),
        },
        headers={"Referer": f"{app.base_url}/login/"},
    )
    assert response.status_code == 302, response.text[:500]
    return client


def test_stylesheet_and_scripts_are_served_hashed_and_whole(served_app: ServedApp) -> None:
    client = _signed_in(served_app)
    page = client.get("/")
    assert page.status_code == 200
    assert "Content-Security-Policy" in page.headers
    css = re.search(
        r'<link rel="stylesheet"[^>]*href="(/static/curfew/curfew\.[0-9a-f]{12}\.css)"', page.text
    )
    assert css, "the page does not link its own (hashed) stylesheet"
    sheet = client.get(css.group(1), headers={"Accept-Encoding": "gzip, br"})
    assert sheet.status_code == 200
    assert sheet.headers["content-type"].startswith("text/css")
    assert sheet.headers.get("content-encoding") in ("gzip", "br")
    assert "immutable" in sheet.headers.get("cache-control", "")
    assert len(sheet.text) > 5000
    assert ".band" in sheet.text
    assert "var(--state)" in sheet.text
    # The states' colours and looks: the declaration it imports, served hashed too.
    states = re.search(r'@import url\("(states\.[0-9a-f]{12}\.css)"\)', sheet.text)
    assert states, "the stylesheet does not import the states' declaration"
    declared = client.get(f"/static/curfew/{states.group(1)}")
    assert declared.status_code == 200
    assert "--c-winding" in declared.text
    # The Schedule section draws the chart: it links every script the site has.
    schedule = client.get("/schedule/")
    assert schedule.status_code == 200
    scripts = re.findall(r'<script src="([^"]+)"', schedule.text)
    names = " ".join(scripts)
    for wanted in (
        "vendor/plotly/plotly-basic.min.",
        "curfew/settings.",
        "curfew/page.",
        "django_htmx/htmx-2.min.",
    ):
        assert wanted in names, f"{wanted} not linked: {scripts}"
    for src in scripts:
        response = client.get(src)
        assert response.status_code == 200, src
        assert "javascript" in response.headers["content-type"], src
        # Whole: as long as the file it was collected from (page.js is tiny).
        name = re.sub(r"\.[0-9a-f]{12}(\.[a-z]+)$", r"\1", src.removeprefix("/static/"))
        source = finders.find(name)
        assert isinstance(source, str), name
        assert len(response.content) == Path(source).stat().st_size > 100, src
    plotly = next(s for s in scripts if "plotly" in s)
    assert "plotly.js (basic - minified) v" in client.get(plotly).text[:400]
