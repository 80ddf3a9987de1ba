"""The process's layer in front of Redis (``curfew_core.store.local_layer``):
bounded, least recently used, never emptied whole; an entry it missed the
invalidation of stands no longer than the freshness bound."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from curfew_core.edge import caller
from curfew_core.selectors import tokens
from curfew_core.store import local_layer
from curfew_core.store.memos import TLRU


@pytest.fixture
def layer(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A small layer, listening (as a server process's is once subscribed)."""
    now = [1_000_000.0]
    small: TLRU[str, Any] = TLRU(maxsize=3, ttu=local_layer._until, timer=lambda: now[0])
    monkeypatch.setattr(local_layer, "_layer", small)
    monkeypatch.setattr(local_layer, "active", lambda: True)
    return now


def rows(loaded_at: float) -> dict[str, Any]:
    return {"loaded_at": loaded_at}


def test_a_full_layer_evicts_the_least_recently_used_entry_only(layer: Any) -> None:
    now = layer[0]
    local_layer.keep({f"bundle:{n}": rows(now) for n in (1, 2, 3)}, local_layer.epoch())
    local_layer.read(["bundle:1"])  # used lately: stays
    local_layer.keep({"bundle:4": rows(now)}, local_layer.epoch())
    found = local_layer.read(["bundle:1", "bundle:2", "bundle:3", "bundle:4"])
    assert [value is local_layer.MISSING for value in found] == [False, True, False, False]
    assert local_layer.size() == 3


def test_a_lost_invalidation_is_bounded_by_freshness(layer: Any) -> None:
    with override_settings(CURFEW_CACHE_FRESH_SECONDS=5):
        local_layer.keep({"bundle:1": rows(layer[0])}, local_layer.epoch())
        # No message comes (lost): the entry stands while its rows may be trusted...
        layer[0] += 4.9
        assert local_layer.read(["bundle:1"])[0] is not local_layer.MISSING
        # ...and not past that bound.
        layer[0] += 0.2
        assert local_layer.read(["bundle:1"])[0] is local_layer.MISSING


def test_rows_read_long_ago_are_not_kept_past_their_freshness(layer: Any) -> None:
    with override_settings(CURFEW_CACHE_FRESH_SECONDS=5):
        local_layer.keep({"bundle:1": rows(layer[0] - 4.0)}, local_layer.epoch())
        layer[0] += 1.5
        assert local_layer.read(["bundle:1"])[0] is local_layer.MISSING


def test_an_invalidation_drops_the_entry_and_a_fetch_begun_before_it_is_not_kept(
    layer: Any,
) -> None:
    local_layer.keep({"bundle:1": rows(layer[0])}, local_layer.epoch())
    since = local_layer.epoch()  # a fetch from Redis begins...
    local_layer.drop(["bundle:1"])  # ...a write's invalidation arrives...
    local_layer.keep({"bundle:1": rows(layer[0])}, since)  # ...the fetch's old answer
    assert local_layer.read(["bundle:1"])[0] is local_layer.MISSING
    # Control: a fetch begun after it is kept.
    local_layer.keep({"bundle:1": rows(layer[0])}, local_layer.epoch())
    assert local_layer.read(["bundle:1"])[0] is not local_layer.MISSING


def test_a_layer_not_listening_is_not_read(layer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    local_layer.keep({"bundle:1": rows(layer[0])}, local_layer.epoch())
    assert local_layer.read(["bundle:1"])[0] is not local_layer.MISSING
    monkeypatch.setattr(local_layer, "active", lambda: False)
    assert local_layer.read(["bundle:1"])[0] is local_layer.MISSING


def test_the_memos_on_the_verdict_path_evict_one_entry_not_all() -> None:
    tokens.forget_seen()
    for n in range(tokens._DIGESTS_KEPT + 1):
        tokens.digest(f"cfw_{n}")
    assert len(tokens._digests) == tokens._DIGESTS_KEPT
    assert "cfw_0" not in tokens._digests
    assert f"cfw_{tokens._DIGESTS_KEPT}" in tokens._digests
    assert caller._callers.maxsize == caller._CALLERS_KEPT
    tokens.forget_seen()


def test_the_layers_map_keeps_cachetools_expiry_and_drops_what_it_cannot_keep() -> None:
    """``memos.TLRU`` (lru-dict in C, an expiry each) reads as cachetools'
    ``TLRUCache`` did: a value stands until its ``ttu``, not at that instant;
    a value already past it is not kept, and the key's older value goes with
    it (it is older still)."""
    now = [100.0]
    kept: TLRU[str, float] = TLRU(maxsize=2, ttu=lambda key, until, at: until, timer=lambda: now[0])
    kept["a"] = 105.0
    now[0] = 104.9
    assert kept.get("a") == 105.0
    now[0] = 105.0
    assert kept.get("a") is None
    assert kept.get("a", -1.0) == -1.0
    assert len(kept) == 0  # read past its instant: removed, not kept for the LRU to age out
    kept["b"] = 200.0
    kept["b"] = 90.0  # a value already past its instant
    assert kept.get("b") is None
    assert len(kept) == 0
    kept["c"], kept["d"] = 300.0, 300.0
    assert kept.get("c") == 300.0  # used lately
    kept["e"] = 300.0
    assert (kept.get("c"), kept.get("d"), kept.get("e")) == (300.0, None, 300.0)
    assert kept.pop("c") == 300.0
    assert kept.pop("c", "gone") == "gone"
    assert kept.maxsize == 2
