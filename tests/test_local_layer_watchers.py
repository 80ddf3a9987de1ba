"""What a process keeps beside its cache layer hears the layer's messages
(``local_layer.on_drop``), and with Redis a lost message is bounded by the long
freshness (issue 40: 300 s, five gateway lifetimes), not a shorter one."""

from __future__ import annotations

from typing import Any

import pytest
from cachetools import TLRUCache
from django.test import override_settings

from curfew_core.edge import team_caller
from curfew_core.store import local_layer


@pytest.fixture
def layer(monkeypatch: pytest.MonkeyPatch) -> Any:
    now = [1_000_000.0]
    small: TLRUCache[str, Any] = TLRUCache(maxsize=8, ttu=local_layer._until, timer=lambda: now[0])
    monkeypatch.setattr(local_layer, "_layer", small)
    monkeypatch.setattr(local_layer, "active", lambda: True)
    return now


def test_a_lost_invalidation_is_bounded_by_the_long_freshness(layer: Any) -> None:
    with override_settings(CURFEW_CACHE_FRESH_SECONDS=300):
        local_layer.keep({"bundle:1": {"loaded_at": layer[0]}}, local_layer.epoch())
        layer[0] += 299.9  # a user asked once a minute is warm all along
        assert local_layer.read(["bundle:1"])[0] is not local_layer.MISSING
        layer[0] += 0.2
        assert local_layer.read(["bundle:1"])[0] is local_layer.MISSING


def test_a_team_keys_member_names_are_forgotten_with_the_layers_messages() -> None:
    team_caller.forget()
    try:
        team_caller._remember(1, "bob", 7)
        assert team_caller._known_id(1, "bob") == (7, True)
        local_layer.drop(["bundle:7", "team:1"])  # the member's rows: the name stands
        assert team_caller._known_id(1, "bob") == (7, True)
        local_layer.drop(["team-member:1:bob"])  # left, or renamed, on any process
        assert team_caller._known_id(1, "bob") == (None, False)
        team_caller._remember(1, "bob", 7)
        local_layer.reset()  # everything forgotten (a lost channel does the same)
        assert team_caller._known_id(1, "bob") == (None, False)
    finally:
        team_caller.forget()


def test_a_watcher_hears_its_own_keys_and_a_lost_channel() -> None:
    heard: list[list[str] | None] = []
    local_layer.on_drop("watched:", heard.append)
    local_layer.on_drop("watched:", heard.append)  # once
    try:
        local_layer.drop(["bundle:1"])
        local_layer.drop(["watched:1", "bundle:2", "watched:2"])
        listener = local_layer._Listener("redis://127.0.0.1:9/0", "unused")
        listener.lost()
        assert heard == [["watched:1", "watched:2"], None]
    finally:
        local_layer._watchers.remove(("watched:", heard.append))
