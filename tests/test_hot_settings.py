"""``hot_settings.setting`` reads what ``django.conf.settings`` says, however
the settings are changed in tests (it remembers values between changes)."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.test import override_settings

from curfew_core.hot_settings import setting

NAME = "CURFEW_VERDICT_MAX_AGE"


def same() -> bool:
    return bool(setting(NAME) == getattr(django_settings, NAME))


def test_it_reads_the_settings_and_follows_every_change(settings: Any) -> None:
    assert same()
    with override_settings(CURFEW_VERDICT_MAX_AGE=7):
        assert setting(NAME) == 7
        settings.CURFEW_VERDICT_MAX_AGE = 9  # pytest-django's fixture
        assert setting(NAME) == 9
    assert same()
    settings.CURFEW_VERDICT_MAX_AGE = 11
    assert setting(NAME) == 11
