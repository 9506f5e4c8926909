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

Leases. Asking Redis on every request cost about as much as the request itself (a rank read
served half as many requests a second with limits on). So a process takes an identity's
allowance in leases: one GCRA call pays for ``lease`` requests at once (``lease_s`` worth of
its rate, at most its burst; one when fewer are left), which the process then serves from
memory. Every request is paid for in Redis before it is served, so the guarantee above holds
exactly; the cost is that an identity spread over many processes may be refused up to one
lease per process early, and a lease left unspent (kept at most ``LEASE_KEEP_S``) is paid
for but never served, which delays that identity by at most ``lease_s``. Concurrent
requests of one identity share one lease call. Leases live in a cache bounded in bytes.

Redis unreachable: the request goes through unchecked (it meets the outage on its own path:
reads fail or fall back, submits answer 503), and for ``fail_open_s`` afterwards requests are
not checked at all, so an outage never becomes 429s and no request waits on Redis twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from dataclasses import dataclass
from typing import Literal

from rankd import metrics
from rankd.aio import Stalled, unless_stalled
from rankd.errors import RateLimited, Unavailable
from rankd.stores.redis.limits import RateLimits
from rankd.ttlcache import TTLCache

Kind = Literal["key", "address", "runs", "player_runs"]
# what one remembered refusal holds: an identity of up to ~70 characters and a float
REFUSAL_BYTES = 200
# the longest a refusal is remembered; a longer wait is asked of Redis again after it
REFUSAL_MEMO_S = 60.0
LEASE_BYTES = 200  # one lease: the identity and a one-element list
LEASE_KEEP_S = 10.0  # a lease's remainder is kept this long


@dataclass(frozen=True, slots=True)
class Rate:
    """Requests per second (0: no limit) and how many an idle identity may make at once."""

    per_s: float
    burst: int

    @property
    def interval_us(self) -> int:
        # rounded up: the limit may come out a hair stricter than asked, never looser
        return math.ceil(1_000_000 / self.per_s)

    def lease(self, lease_s: float) -> int:
        """How many requests one Redis call takes at once."""
        return max(1, min(self.burst, int(self.per_s * lease_s)))


def key_identity(key: bytes) -> str:
    """A bearer key's identity in Redis: a hash, so the key never appears in Redis."""
    return "k:" + hashlib.sha256(b"rankd-rate-limit\0" + key).hexdigest()[:32]


def address_identity(address: str) -> str:
    return "a:" + address


class RateLimiter:
    def __init__(
        self,
        store: RateLimits,
        per_key: Rate,
        per_address: Rate,
        fail_open_s: float = 1.0,
        runs_per_key: Rate | None = None,
        runs_per_player: Rate | None = None,
        refusal_memo_bytes: int = 1 << 20,
        lease_s: float = 0.05,
        lease_bytes: int = 1 << 20,
        timeout_s: float = 5.0,
    ) -> None:
        self.store = store
        # a stalled Redis (one that answers nobody this long) fails the check open, like a
        # Redis that is down
        self.timeout_s = timeout_s
        # runs: a key's submitted runs, a batch counting each of its runs (work, not requests)
        self.rates: dict[Kind, Rate] = {
            "key": per_key,
            "address": per_address,
            "runs": runs_per_key or Rate(0.0, 1),
            # player_runs: one player's runs sent with their own token (client submits)
            "player_runs": runs_per_player or Rate(0.0, 1),
        }
        self.fail_open_s = fail_open_s
        self.lease_s = lease_s
        self._unchecked_until = 0.0
        # identity -> [requests left] of its current lease (paid for in Redis)
        self.leases: TTLCache[str, list[int]] = TTLCache(
            LEASE_KEEP_S, lease_bytes, lambda _, __: LEASE_BYTES
        )
        # identity -> the lease call in flight for it, shared by its concurrent requests
        # (at most one per identity with a request waiting: bounded by the connections)
        self._asking: dict[str, asyncio.Future[int]] = {}
        # identity -> until when (monotonic) it is refused without asking Redis
        self.refused: TTLCache[str, float] = TTLCache(
            REFUSAL_MEMO_S, refusal_memo_bytes, lambda _, __: REFUSAL_BYTES
        )

    async def check(self, kind: Kind, identity: str, cost: int = 1) -> None:
        """Count ``cost`` requests (or runs) of ``identity``; RateLimited (with its
        Retry-After) when it is over its rate. A cost above the burst can never pass:
        callers refuse it first (routes_runs.py)."""
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
        if cost == 1 and self._spend(identity):
            return
        if cost == 1:
            asking = self._lease(identity, rate)
        else:  # a batch pays for all its runs at once, past any lease
            asking = self.store.rate_limit(identity, rate.interval_us, rate.burst, cost=cost)
        try:
            wait_us = await unless_stalled(asking, self.timeout_s, self._answered_at)
        except (Unavailable, Stalled):
            self._unchecked_until = time.monotonic() + self.fail_open_s
            metrics.RATE_UNCHECKED.inc()
            return
        if wait_us == 0:
            return
        # from ``asked``: Redis read its clock after that, so this ends no later than its wait
        self.refused.put(identity, asked + wait_us / 1_000_000)
        raise self._refusal(kind, rate, wait_us / 1_000_000)

    def _answered_at(self) -> float:
        return self.store.conn.answered_at

    def _spend(self, identity: str) -> bool:
        """Take one request from the identity's lease, if one is left."""
        held = self.leases.get(identity)
        if held is None or held.value[0] < 1:
            return False
        held.value[0] -= 1
        return True

    async def _lease(self, identity: str, rate: Rate) -> int:
        """Pay Redis for this request (and a lease of more): 0 when allowed, else the µs to
        wait. Concurrent requests of one identity wait for one call, then spend its lease."""
        while (pending := self._asking.get(identity)) is not None:
            if wait_us := await asyncio.shield(pending):
                return wait_us  # refused: so is this one
            if self._spend(identity):
                return 0
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._asking[identity] = future
        try:
            size = rate.lease(self.lease_s)
            wait_us = await self.store.rate_limit(identity, rate.interval_us, rate.burst, cost=size)
            if wait_us and size > 1:  # fewer than a lease left: just this request
                size = 1
                wait_us = await self.store.rate_limit(identity, rate.interval_us, rate.burst)
            if wait_us == 0 and size > 1:
                self.leases.put(identity, [size - 1])
            future.set_result(wait_us)
            return wait_us
        except BaseException as exc:
            # the asker's deadline passed: its waiters fail open too, each on its own
            cut = isinstance(exc, asyncio.CancelledError)
            future.set_exception(Unavailable("Redis did not answer in time") if cut else exc)
            future.exception()  # retrieved: waiters ask again themselves
            raise
        finally:
            del self._asking[identity]

    @staticmethod
    def _refusal(kind: Kind, rate: Rate, wait_s: float) -> RateLimited:
        metrics.RATE_LIMITED.labels(kind).inc()
        retry_after_s = max(1, math.ceil(wait_s))
        whose = "this key" if kind == "key" else "this address"
        what = "requests"
        if kind == "runs":
            whose, what = "this key", "runs"
        elif kind == "player_runs":
            whose, what = "this player", "runs"
        return RateLimited(
            f"too many {what} from {whose} (limit {rate.per_s:g}/s, burst {rate.burst}); "
            f"retry in {retry_after_s} s",
            retry_after_s,
        )
