"""One plain vocabulary, in the reader's language (issue 25).

A scan over every section of the settings site as a signed-in Chinese reader
sees it (pretending, with decisions in the ledger and changes in the audit,
so reasons, the exemption picker and Recent changes all have rows): no
English word is left in what a person reads, text or ``title``/``aria-label``
/``placeholder``, outside the parts that are data or code (``<pre>``,
``<code>``, scripts, typed values, elements marked ``translate="no"``: zone
ids, session names) and a few names that stay as they are (Curfew, AI,
API...). Every reason the engine can give is put in Chinese too. And an
English account never starts with Chinese replies or persona.

The Django test client, not a browser: one fast module.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone, translation

from curfew_core.engine import Overrides, RequestContext, TeamSide, decide, decide_member
from curfew_core.ledger.entry import Entry
from curfew_core.models import Schedule
from curfew_core.schedules import config as schedule_config
from curfew_core.services import ledger_recorder as recorder
from curfew_core.services.schedules import schedule_update
from curfew_core.services.tokens import token_create
from curfew_core.web import words
from curfew_core.web.schedule import choices
from curfew_testkit.asgi_client import Client
from tests.web.conftest import PageClient
from tests.web.forms import form_fields

pytestmark = pytest.mark.django_db

ZH = "zh-CN,zh;q=0.9"
SECTIONS = ("/", "/schedule/", "/replies/", "/integrations/", "/activity/", "/account/")
#: The band's week views too: a holiday, a weekend and a make-up workday get
#: a tag each (China's National Day week, and the Saturday worked after it).
PAGES = (
    *SECTIONS,
    "/?band_view=week&band_date=2026-10-01",
    "/?band_view=week&band_date=2026-10-08",
)
#: Words that stay as they are on a Chinese page: names (the product, the
#: language switch), units and formats people type, acronyms Chinese
#: readers use as they are.
KEPT = frozenset(
    {
        "Curfew",
        "AI",
        "API",
        "OpenAPI",
        "JSON",
        "CSV",
        "UTC",
        "HH",
        "MM",
        "YYYY",
        "DD",
        "English",
        "token",
        "tokens",
        "USD",
        "CNY",
        "EUR",
        "htmx",
        # "ID" is how Chinese pages say it too.
        "ID",
        "id",
        # The purposes a tool sends, named as it sends them.
        "title",
        "compaction",
        "summary",
        # The tools and formats the developer parts name.
        "OpenAI",
        "Anthropic",
        "Python",
        "LiteLLM",
        "SDK",
        "iframe",
        "IDE",
    }
)
#: Data in running text, not words: a placeholder, a quoted reply or name, a
#: key's prefix, a zone id inside a disclosure (Details, For developers).
PLACEHOLDER = re.compile(r"\{[a-z]+\}|“[^”]*”|cfw_\S+")
ZONE_ID = re.compile(r"\b[A-Z][A-Za-z]+/[A-Za-z_/+-]+")
#: Elements whose content is code or data, not words for the reader.
SKIPPED = frozenset({"script", "style", "pre", "code", "template", "textarea", "kbd"})
#: Attributes a person reads (a tooltip, what a screen reader says, a hint in a box).
READ_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt")
WORD = re.compile(r"[A-Za-z]{2,}")
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "source", "wbr", "col", "area"})


class _Reader(HTMLParser):
    """The words of a page a person reads, each with where it was found."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []
        self.found: list[tuple[str, str]] = []
        self.disclosed = 0

    @property
    def skipping(self) -> bool:
        return any(skip for _tag, skip in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {key: value or "" for key, value in attrs}
        # An element in English on purpose (the "English" preset), not the page's own lang.
        english = tag != "html" and a.get("lang", "").startswith("en")
        # The tool setups (Integrations) are commands to copy, in the tools' own words.
        skip = tag in SKIPPED or a.get("translate") == "no" or english or a.get("id") == "setup"
        if not self.skipping and not skip:
            for name in READ_ATTRIBUTES:
                if a.get(name):
                    self.found.append((f"<{tag} {name}>", a[name]))
            if tag == "input" and a.get("type") in ("submit", "button") and a.get("value"):
                self.found.append((f"<{tag} value>", a["value"]))
        if tag not in VOID:
            self.stack.append((tag, skip))

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index][0] == tag:
                del self.stack[index:]
                return

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            where = self.stack[-1][0] if self.stack else "?"
            text = data.strip()
            if any(tag == "details" for tag, _skip in self.stack):
                text = ZONE_ID.sub("", text)  # a technical term, behind its disclosure
            self.found.append((f"<{where}>", text))


def english_left(html: str, *, allowed: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """Each piece of read text holding an English word that is not kept."""
    reader = _Reader()
    reader.feed(html)
    kept = KEPT | allowed | PLACES
    return [
        (where, text)
        for where, text in reader.found
        if any(word not in kept for word in WORD.findall(PLACEHOLDER.sub("", text)))
    ]


#: The zone database's place names (Shanghai): the picker's words, as spelled there.
PLACES = frozenset(
    word
    for _region, zones in choices.timezone_groups()
    for _zone, label in zones
    for word in WORD.findall(label)
)


def _record(person: User, at: dt.datetime, **fields: Any) -> None:
    values: dict[str, Any] = {
        "at": at,
        "state": "on-duty",
        "action": "pass",
        "origin": "chat",
        "user_id": person.pk,
    }
    values.update(fields)
    recorder.record(Entry(**values))


@pytest.fixture
def chinese(user: User) -> PageClient:
    """A Chinese reader's client, with something on every section: decisions
    with the engine's reasons, exempt and not, saved changes, a key, and
    pretend on (its banner on every page)."""
    now = timezone.now().replace(microsecond=0)
    schedule = schedule_config.build(schedule_config.default_config())
    for hours in (1, 2, 30):
        at = now - dt.timedelta(hours=hours)
        verdict = decide(at, schedule, RequestContext(session_id="nightly-essay", purpose="draft"))
        _record(
            user,
            at,
            state=verdict.state.value,
            action=verdict.action.value,
            reason=verdict.reason,
            session="nightly-essay",
            purpose="draft",
            budget_before=4096,
            budget_after=verdict.max_tokens,
        )
    _record(user, now - dt.timedelta(minutes=5), session="pager", purpose="title", exempt=True)
    recorder.flush()
    schedule_update(user=user, changes={"curfew_start": "22:30"}, source="test", actor=user)
    schedule_update(user=user, changes={"dry_run": True}, source="test", actor=user)
    token_create(user=user, name="laptop", kind="api", channel="page")
    page = PageClient(user)
    page.client.cookies["django_language"] = "zh-hans"
    page.post(
        "/overrides/", {"verb": "debug", "moment": "2026-09-29T23:30"}, HTTP_ACCEPT_LANGUAGE=ZH
    )
    return page


@pytest.mark.parametrize("path", PAGES)
def test_no_english_is_left_on_a_chinese_page(chinese: PageClient, user: User, path: str) -> None:
    response = chinese.get(path, HTTP_ACCEPT_LANGUAGE=ZH)
    assert response.status_code == 200
    html = response.content.decode()
    assert '<html lang="zh-Hans">' in html
    # The user's own names are data: their login and key name, the sessions
    # and purposes their tools sent.
    data = {user.get_username(), "laptop", "nightly", "essay", "pager", "draft"}
    left = english_left(html, allowed=frozenset(data))
    assert not left, "\n".join(f"{where} {text!r}" for where, text in left)


def test_the_scan_sees_english_when_it_is_there(chinese: PageClient, user: User) -> None:
    """The control group: the same pages in English are full of English
    words, so a scan that found none above did read the page."""
    english = PageClient(user)
    for path in SECTIONS:
        html = english.get(path, HTTP_ACCEPT_LANGUAGE="en").content.decode()
        assert '<html lang="en">' in html
        assert len(english_left(html)) > 10, path


def test_recent_changes_are_told_in_words(chinese: PageClient) -> None:
    html = chinese.get("/activity/", HTTP_ACCEPT_LANGUAGE=ZH).content.decode()
    audit = html.split('id="audit"')[1]
    assert "开始犯困：23:00 → 22:30" in audit or "23:00 → 22:30" in audit
    assert "curfew_start" not in audit
    assert "debug_at" not in audit
    assert "开始假装" in audit


# -- every reason -------------------------------------------------------------------


def _reasons() -> Iterator[str]:
    """A reason of each kind the engine gives: every state, a valley and a
    make-up workday, each override, pretend, each exemption and the dry run."""
    base = schedule_config.default_config()
    shanghai = dt.timezone(dt.timedelta(hours=8))
    moments = [
        dt.datetime(2026, 9, 29, hour, minute, tzinfo=shanghai)
        for hour, minute in ((12, 30), (10, 0), (23, 30), (1, 15), (4, 0))
    ]
    moments += [
        dt.datetime(2026, 10, 1, 10, 0, tzinfo=shanghai),  # National Day: a valley
        dt.datetime(2026, 10, 3, 10, 0, tzinfo=shanghai),  # a Saturday: weekend
        dt.datetime(2026, 10, 10, 10, 0, tzinfo=shanghai),  # a make-up workday (调休)
    ]
    configs = [
        base,
        {**base, "dry_run": True},
        {**base, "enabled": False},
        {**base, "apply_to_subagents": False, "exempt_sessions": ["pager"]},
    ]
    requests = [
        RequestContext(),
        RequestContext(purpose="title"),
        RequestContext(purpose="draft"),
        RequestContext(session_id="pager"),
        RequestContext(subagent=True),
    ]
    for config in configs:
        schedule = schedule_config.build(config)
        for at in moments:
            for request in requests:
                yield decide(at, schedule, request).reason
            yield decide(
                at, schedule, overrides=Overrides(overtime_until=at + dt.timedelta(hours=1))
            ).reason
            yield decide(
                at, schedule, overrides=Overrides(forced_off_until=at + dt.timedelta(hours=1))
            ).reason
            yield decide(
                at,
                schedule,
                overrides=Overrides(
                    debug_at=at - dt.timedelta(hours=2), debug_until=at + dt.timedelta(hours=1)
                ),
            ).reason
    # A team member's: the team's side is told after the member's own.
    earlier = schedule_config.build(
        {**base, "curfew_start": "21:00", "lights_out": "22:00", "anchors": []}
    )
    own = schedule_config.build(base)
    for at in moments:
        for team in (
            TeamSide(schedule=earlier),
            TeamSide(schedule=earlier, overtime_until=at + dt.timedelta(hours=1)),
        ):
            yield decide_member(at, own, RequestContext(), Overrides(), team).reason


def test_every_reason_is_said_in_chinese() -> None:
    reasons = sorted(set(_reasons()))
    assert len(reasons) > 30
    assert any(" · team: " in reason for reason in reasons)
    with translation.override("zh-hans"):
        for reason in reasons:
            said = words.reason_words(reason, holiday="国庆节")
            # Quoted names are the caller's own (a purpose as it was sent).
            unquoted = re.sub(r"“[^”]*”", "", said)
            left = [word for word in WORD.findall(unquoted) if word not in KEPT]
            assert not left, f"{reason!r} -> {said!r}"
            assert CJK.search(said), said


def test_a_reason_part_it_does_not_know_stays_as_the_engine_wrote_it() -> None:
    with translation.override("zh-hans"):
        assert words.reason_words("2026-09-29 23:30 · something new") == (
            "2026-09-29 23:30 · something new"
        )
        assert words.reason_words("2026-09-29 23:30 · winding 12% · budget 1824") == (
            "2026-09-29 23:30 · 犯困中，夜晚已过 12% · 回答最多 1824 个 token"
        )


# -- an English account -------------------------------------------------------------

REPLY_FIELDS = ("off_duty_reply", "lights_out_reply", "tired_persona", "tier_texts")


def _chinese_in_defaults(client: Client | PageClient) -> dict[str, str]:
    html = client.get("/replies/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    fields = dict(form_fields(html, "replies-form"))
    return {name: fields[name] for name in REPLY_FIELDS if CJK.search(fields[name])}


def test_a_new_english_account_starts_with_no_chinese(db: None) -> None:
    from curfew_core.services.users import user_create

    with translation.override("en"):
        person = user_create(username="newcomer")
    person.set_password("correct horse battery")
    person.save()
    assert _chinese_in_defaults(PageClient(person)) == {}
    config = Schedule.objects.get(user=person).config
    assert not any(CJK.search(str(config[name])) for name in REPLY_FIELDS)


def test_a_new_chinese_account_starts_in_chinese(db: None) -> None:
    """The control group: the same making in Chinese gives Chinese words."""
    from curfew_core.services.users import user_create

    with translation.override("zh-hans"):
        person = user_create(username="xinren")
    config = Schedule.objects.get(user=person).config
    assert all(CJK.search(str(config[name])) for name in REPLY_FIELDS)


def test_signing_in_without_a_schedule_gives_one_in_your_language(user: User) -> None:
    """A person made by ``createsuperuser`` has no schedule: the declared
    defaults (Chinese replies and persona) would be shown to them. Signing in
    in English gives them the English ones; one who has a schedule keeps it."""
    assert not Schedule.objects.filter(user=user).exists()
    client = Client()
    response = client.post(
        "/login/",
        {"username": user.get_username(), "password": "correct horse battery"},
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert response.status_code == 302
    assert _chinese_in_defaults(client) == {}
    saved = Schedule.objects.get(user=user)
    schedule_update(user=user, changes={"off_duty_reply": "忙。"}, source="test")
    Client().post(
        "/login/",
        {"username": user.get_username(), "password": "correct horse battery"},
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert Schedule.objects.get(user=user).config["off_duty_reply"] == "忙。"  # never changed
    assert Schedule.objects.get(user=user).pk == saved.pk


def test_without_signing_in_the_declared_defaults_stay(user: User) -> None:
    """The control group of the one above: no sign-in, no new schedule."""
    assert _chinese_in_defaults(PageClient(user)) != {}


# -- exemptions by name -------------------------------------------------------------


def test_exemptions_are_picked_from_what_called_in(chinese: PageClient, user: User) -> None:
    chinese = PageClient(user)  # in English
    html = chinese.get("/replies/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    fields = form_fields(html, "replies-form")
    assert ("seen_session", "nightly-essay") in fields
    assert ("seen_session", "pager") in fields
    assert ("seen_purpose", "draft") in fields
    assert ("pick_session", "nightly-essay") not in fields  # offered, not ticked
    assert ("pick_purpose", "title") in fields  # let through by default
    picker = html.split('id="picker-exempt_sessions"')[1].split("</ul>")[0]
    assert "3 calls, last" in picker
    assert "through proxy: chat" in picker
    ticked = [*fields, ("pick_session", "nightly-essay")]
    response = chinese.post("/replies/", _as_data(ticked))
    assert response.status_code == 302
    assert Schedule.objects.get(user=user).config["exempt_sessions"] == ["nightly-essay"]


def _as_data(fields: list[tuple[str, str]]) -> dict[str, Any]:
    from tests.web.forms import as_post

    return as_post(fields)


def test_the_pretend_command_and_its_old_name(user: User) -> None:
    from io import StringIO

    from django.core.management import call_command

    from curfew_core.models import Override

    out = StringIO()
    call_command("curfew", "pretend", "01:30", "--user", user.get_username(), stdout=out)
    assert Override.objects.get(user=user).debug_at is not None
    assert "pretending it is " in out.getvalue()
    assert " real time" in out.getvalue()
    call_command("curfew", "debug", "clear", "--user", user.get_username(), stdout=StringIO())
    assert Override.objects.get(user=user).debug_at is None


def test_the_scan_finds_one_english_word_and_skips_data() -> None:
    page_html = (
        '<html lang="zh-Hans"><p>你的 AI 已经 asleep</p><p title="Off duty">好</p>'
        '<code>curfew_start</code><span translate="no">Shanghai nightly</span>'
        "<p>回复 “Later.” {until}</p></html>"
    )
    assert english_left(page_html) == [("<p>", "你的 AI 已经 asleep"), ("<p title>", "Off duty")]


def test_the_capsule_is_sent_the_reason_in_each_language(user: User) -> None:
    from curfew_core.selectors.verdicts import capsule_payload

    payload = capsule_payload(user_id=user.pk, now=timezone.now())
    assert payload["reasons"]["en"]  # the English words, the engine's kept in "reason"
    assert CJK.search(payload["reasons"]["zh"]), payload["reasons"]
    assert not CJK.search(payload["reason"])  # the API's stays English


# -- technical terms behind a disclosure --------------------------------------------

#: Terms a person who is not a programmer need not know. On an English page
#: they appear only behind a disclosure ("Details", "For developers", "Shape
#: it yourself") that says what they mean; outside, the page says it in words.
JARGON = re.compile(
    r"\b(valley|anchors?|IANA|tiers?|subagents?|dry run|persona|peak windows?|tiredness"
    r"|debug|time machine|curve shape|reasoning effort|safety cap)\b",
    re.IGNORECASE,
)


class _OutsideDisclosures(_Reader):
    """What ``_Reader`` reads, less what sits inside a ``<details>``."""

    def _disclosing(self) -> bool:
        return any(tag == "details" for tag, _skip in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        kept = len(self.found)
        super().handle_starttag(tag, attrs)
        if self._disclosing() and tag != "details":
            del self.found[kept:]

    def handle_data(self, data: str) -> None:
        if not self._disclosing() or self.stack[-1][0] == "summary":
            super().handle_data(data)


def jargon_left(html: str) -> list[tuple[str, str]]:
    reader = _OutsideDisclosures()
    reader.feed(html)
    return [(where, text) for where, text in reader.found if JARGON.search(text)]


@pytest.mark.parametrize("path", PAGES)
def test_an_english_page_keeps_technical_terms_behind_a_disclosure(
    chinese: PageClient, user: User, path: str
) -> None:
    english = PageClient(user)  # the same rows as the Chinese reader's, in English
    html = english.get(path, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert '<html lang="en">' in html
    if "band_view=week" in path:
        # The tags are there to be read (holidays and weekends; the worked Saturday).
        assert 'class="tag tag-valley"' in html
        assert 'class="tag tag-workday"' in html or "2026-10-01" in path
    left = jargon_left(html)
    assert not left, "\n".join(f"{where} {text!r}" for where, text in left)


def test_the_jargon_scan_sees_a_term_outside_and_not_inside_a_disclosure() -> None:
    html = (
        '<html lang="en"><p>Saturday · valley</p><details><summary>Shape it yourself</summary>'
        '<input aria-label="Anchor time"><p>Each anchor sets a budget</p></details>'
        '<button aria-label="Remove this anchor">x</button></html>'
    )
    assert jargon_left(html) == [
        ("<p>", "Saturday · valley"),
        ("<button aria-label>", "Remove this anchor"),
    ]


def test_the_capsule_is_sent_the_words_beside_a_state_in_each_language(user: User) -> None:
    """The budget, until when, a reply, only watching: pushed words, so the
    capsule keeps no table of its own (it said "budget 320" and "dry run")."""
    from curfew_core.selectors.verdicts import capsule_payload

    said = capsule_payload(user_id=user.pk, now=timezone.now())["words"]
    assert said["en"]["budget"] == "answers up to %(n)s tokens"
    assert said["en"]["dry_run"] == "only watching"
    assert set(said["zh"]) == set(said["en"])
    for key, text in said["zh"].items():
        bare = re.sub(r"%\([a-z]+\)s", "", text)
        assert CJK.search(bare), (key, text)
        assert not [w for w in WORD.findall(bare) if w not in KEPT], (key, text)
