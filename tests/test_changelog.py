"""The operators' changelog names every migration and every setting.

An upgrade that brings a migration or a setting the changelog does not name is
one an operator learns of in production. Declared once elsewhere (the
migrations folder, the settings' declarations that write
docs/configuration.md), each must be named in CHANGELOG.md at least once.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def _named(name: str, text: str = CHANGELOG) -> bool:
    return f"`{name}`" in text


def migrations() -> list[str]:
    return sorted(p.stem for p in (ROOT / "curfew_core" / "migrations").glob("0*.py"))


def settings() -> list[str]:
    """Every setting in the generated reference's tables."""
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    return re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", reference, re.M)


def test_every_migration_is_named() -> None:
    missing = [name for name in migrations() if not _named(name)]
    assert not missing, f"CHANGELOG.md does not name these migrations: {missing}"


def test_every_setting_is_named() -> None:
    missing = [name for name in settings() if not _named(name)]
    assert not missing, f"CHANGELOG.md does not name these settings: {missing}"


def test_control_the_lists_are_read_and_a_missing_name_is_caught() -> None:
    assert "0001_release_2026_12_04" in migrations()
    assert len(migrations()) >= 3
    assert "CURFEW_CACHE_FRESH_SECONDS" in settings()
    assert len(settings()) >= 50
    assert not _named("0001_release_2026_12_04", "no migration here")
