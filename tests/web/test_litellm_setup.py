"""The LiteLLM setup the Integrations page and the README show works as
written: the install line names something pip can install from a checkout
(there is no ``curfew-client`` on the package index), and the environment
names ``LITELLM_MASTER_KEY``, without which the LiteLLM proxy does not start."""

from __future__ import annotations

import html
import re
import tomllib
from pathlib import Path

import pytest

from tests.web.conftest import PageClient

ROOT = Path(__file__).resolve().parents[2]
INSTALL = re.compile(r"pip install '([^'\[]+)\[litellm\]'")


def assert_installable_from_a_checkout(text: str) -> None:
    targets = INSTALL.findall(text)
    assert targets, "no LiteLLM install line"
    for target in targets:
        # A path in the checkout (pip's "./dir[extra]"), never an index name.
        assert target.startswith("./"), target
        project = tomllib.loads((ROOT / target / "pyproject.toml").read_text(encoding="utf-8"))
        assert "litellm" in project["project"]["optional-dependencies"], target


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_integrations_page_shows_a_litellm_setup_that_works(
    page: PageClient, language: str
) -> None:
    response = page.get("/integrations/", HTTP_ACCEPT_LANGUAGE=language)
    text = html.unescape(response.content.decode())
    snippet = text.split('id="setup-litellm"')[1].split("</details>")[0]
    assert_installable_from_a_checkout(snippet)
    assert "LITELLM_MASTER_KEY=" in snippet


def test_the_readme_shows_a_litellm_setup_that_works() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## LiteLLM")[1].split("\n## ")[0]
    assert_installable_from_a_checkout(section)
    assert "LITELLM_MASTER_KEY=" in section
