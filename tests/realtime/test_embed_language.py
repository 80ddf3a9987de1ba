"""QA "look" finding 7: the iframe capsule said ``<html lang="en">`` whatever
the viewer's language, so the capsule (which reads ``documentElement.lang``)
was English on a Chinese page, and its error was English only. The iframe
speaks the viewer's language (their browser's, or ``?lang=``)."""

from __future__ import annotations

import pytest

from curfew_testkit.asgi_client import Client
from tests.realtime.conftest import embed_token

pytestmark = pytest.mark.django_db

ZH = "zh-CN,zh;q=0.9"


def test_the_iframe_speaks_the_viewers_browser_language(user) -> None:
    token = embed_token(user)
    zh = Client().get("/embed/capsule/", {"token": token}, HTTP_ACCEPT_LANGUAGE=ZH)
    assert zh.status_code == 200
    assert '<html lang="zh-Hans">' in zh.content.decode()
    # The control: an English browser.
    en = Client().get("/embed/capsule/", {"token": token}, HTTP_ACCEPT_LANGUAGE="en-GB,en")
    assert '<html lang="en">' in en.content.decode()


def test_lang_in_the_address_chooses(user) -> None:
    token = embed_token(user)
    page = Client().get(
        "/embed/capsule/", {"token": token, "lang": "zh"}, HTTP_ACCEPT_LANGUAGE="en"
    )
    assert '<html lang="zh-Hans">' in page.content.decode()
    # An unknown language is the viewer's.
    page = Client().get(
        "/embed/capsule/", {"token": token, "lang": "xx"}, HTTP_ACCEPT_LANGUAGE="en"
    )
    assert '<html lang="en">' in page.content.decode()


def test_the_error_is_said_in_the_viewers_language() -> None:
    zh = Client().get("/embed/capsule/", {"token": "cfe_nope"}, HTTP_ACCEPT_LANGUAGE=ZH)
    assert zh.status_code == 401
    body = zh.content.decode()
    assert "胶囊密钥未知或已撤销" in body
    assert "Curfew capsule:" not in body
    en = Client().get("/embed/capsule/", {"token": "cfe_nope"}, HTTP_ACCEPT_LANGUAGE="en")
    assert "Curfew capsule: unknown or revoked embed token" in en.content.decode()
    # The JSON door keeps the API's English.
    state = Client().get("/embed/state", {"token": "cfe_nope"}, HTTP_ACCEPT_LANGUAGE=ZH)
    assert state.json()["message"] == "unknown or revoked embed token"
