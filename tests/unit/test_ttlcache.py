"""The one in-process cache: expiry, stale reads on request, and a bound in bytes."""

from __future__ import annotations

import time

from rankd.ttlcache import TTLCache


def test_entries_expire_but_stay_readable_when_stale_is_asked() -> None:
    cache: TTLCache[str, int] = TTLCache(0.05, 1000, lambda *_: 10)
    cache.put("a", 1)
    hit = cache.get("a")
    assert hit is not None and hit.value == 1
    time.sleep(0.06)
    assert cache.get("a") is None
    stale = cache.get("a", stale_ok=True)
    assert stale is not None and stale.value == 1 and stale.age_s >= 0.05


def test_bytes_stay_within_the_bound_evicting_least_recently_used() -> None:
    cache: TTLCache[int, str] = TTLCache(60, 1000, lambda _, v: len(v))
    for i in range(500):
        cache.put(i, "x" * 100)
        assert cache.bytes <= 1000
    assert len(cache) == 10
    assert cache.get(495) is not None
    assert cache.get(489) is None
    cache.get(490)  # touched: now the most recently used
    cache.put(1000, "x" * 100)
    assert cache.get(490) is not None and cache.get(491) is None


def test_an_entry_larger_than_the_bound_is_not_kept() -> None:
    cache: TTLCache[str, str] = TTLCache(60, 50, lambda _, v: len(v))
    cache.put("small", "x")
    cache.put("big", "x" * 51)
    assert cache.get("big") is None and cache.get("small") is not None
    assert cache.bytes == 1


def test_back_dated_entries_and_a_zero_ttl() -> None:
    cache: TTLCache[str, int] = TTLCache(1.0, 100, lambda *_: 1)
    cache.put("a", 1, age_s=0.99)
    hit = cache.get("a", stale_ok=True)
    assert hit is not None and hit.age_s >= 0.99
    off: TTLCache[str, int] = TTLCache(0.0, 100, lambda *_: 1)
    off.put("a", 1)
    assert off.get("a") is None and len(off) == 0
