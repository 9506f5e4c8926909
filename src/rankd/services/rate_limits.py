"""Request rate limits per bearer key and per client address, counted in Redis.

Why Redis: instances behind a balancer must share one count, or N instances allow N times
the rate. Why GCRA (lua/rate_limit.lua): one timestamp per identity, exact (no doubling at
a fixed window's edge, no per-request entries as in a sliding log), one round trip, and its
key expires as soon as the identity is idle again, so Redis holds a key only for identities
seen in the last burst / rate seconds. The process keeps only recent refusals, in a cache
bounded in bytes: a client cannot grow its memory by sending from many addresses or keys.

What it guarantees: over any span of w seconds an identity is allowed at most
``burst + rate * w`` requests, whichever instances they reach; the clock is Redis's own.

A refusal is remembered in the process until the moment Redis said to retry (a bounded
cache; its deadline counts from before the call, so it never outlasts Redis's own answer):
a flooding identity's requests are refused without a round trip, and a flood costs Redis
about two calls per slot the rate allows, not one per request.

Redis unreachable: the request goes through unchecked (it meets the outage on its own path:
reads fail or fall back, submits answer 503), and for ``fail_open_s`` afterwards requests are
not checked at all, so an outage never becomes 429s and no request waits on Redis twice.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from typing import Literal

from rankd import metrics
from rankd.errors import RateLimited, Unavailable
from rankd.stores.redis_store import RedisStore
from rankd.ttlcache import TTLCache

Kind = Literal["key", "address"]
# what one remembered refusal holds: an identity of up to ~70 characters and a float
REFUSAL_BYTES = 200
# the longest a refusal is remembered; a longer wait is asked of Redis again after it
REFUSAL_MEMO_S = 60.0


@dataclass(frozen=True, slots=True)
class Rate:
    """Requests per second (0: no limit) and how many an idle identity may make at once."""

    per_s: float
    burst: int

    @property
    def interval_us(self) -> int:
        # rounded up: the limit may come out a hair stricter than asked, never looser
        return math.ceil(1_000_000 / self.per_s)


def key_identity(key: bytes) -> str:
    """A bearer key's identity in Redis: a hash, so the key never appears in Redis."""
    return "k:" + hashlib.sha256(b"rankd-rate-limit\0" + key).hexdigest()[:32]


def address_identity(address: str) -> str:
    return "a:" + address


class RateLimiter:
    def __init__(
        self,
        store: RedisStore,
        per_key: Rate,
        per_address: Rate,
        fail_open_s: float = 1.0,
        refusal_memo_bytes: int = 1 << 20,
    ) -> None:
        self.store = store
        self.rates: dict[Kind, Rate] = {"key": per_key, "address": per_address}
        self.fail_open_s = fail_open_s
        self._unchecked_until = 0.0
        # identity -> until when (monotonic) it is refused without asking Redis
        self.refused: TTLCache[str, float] = TTLCache(
            REFUSAL_MEMO_S, refusal_memo_bytes, lambda _, __: REFUSAL_BYTES
        )

    async def check(self, kind: Kind, identity: str) -> None:
        """Count one request of ``identity``; RateLimited (with its Retry-After) when it is
        over its rate."""
        rate = self.rates[kind]
        if rate.per_s <= 0:
            return
        asked = time.monotonic()
        memo = self.refused.get(identity)
        if memo is not None:
            if memo.value > asked:
                raise self._refusal(kind, rate, memo.value - asked)
            self.refused.pop(identity)
        if asked < self._unchecked_until:
            metrics.RATE_UNCHECKED.inc()
            return
        try:
            wait_us = await self.store.rate_limit(identity, rate.interval_us, rate.burst)
        except Unavailable:
            self._unchecked_until = time.monotonic() + self.fail_open_s
            metrics.RATE_UNCHECKED.inc()
            return
        if wait_us == 0:
            return
        # from ``asked``: Redis read its clock after that, so this ends no later than its wait
        self.refused.put(identity, asked + wait_us / 1_000_000)
        raise self._refusal(kind, rate, wait_us / 1_000_000)

    @staticmethod
    def _refusal(kind: Kind, rate: Rate, wait_s: float) -> RateLimited:
        metrics.RATE_LIMITED.labels(kind).inc()
        retry_after_s = max(1, math.ceil(wait_s))
        whose = "this key" if kind == "key" else "this address"
        return RateLimited(
            f"too many requests from {whose} (limit {rate.per_s:g}/s, burst {rate.burst}); "
            f"retry in {retry_after_s} s",
            retry_after_s,
        )
