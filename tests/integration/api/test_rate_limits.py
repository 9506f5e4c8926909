"""Rate limits per key and per client address, counted in the real Redis.

Two instances (each its own Runtime and app, with tight limits) share the session's Redis.
Each test takes keys and addresses of its own, so their counts never meet. Timing claims
(the other key's latency while one floods) are measured in bench/rate_limits.py, not here.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from redis.asyncio import Redis

from rankd.api.app import create_app
from rankd.api.rate_limit import client_address
from rankd.embedded import free_port
from rankd.errors import RateLimited
from rankd.runtime import Runtime
from rankd.services.rate_limits import Rate, RateLimiter
from rankd.stores.redis import keys as redis_keys
from rankd.stores.redis.limits import RateLimits
from rankd.stores.redis.stores import RedisStores
from tests.support.common import Urls, make_settings

T = TypeVar("T")

BURST = 3
KEYS = [f"rl-{uuid.uuid4().hex[:12]}-{i}" for i in range(40)]
_next_key = iter(KEYS)
_next_address = itertools.count(1)


def fresh_key() -> dict[str, str]:
    return {"Authorization": f"Bearer {next(_next_key)}"}


def fresh_address() -> str:
    n = next(_next_address)
    return f"198.51.{n // 250}.{n % 250 + 1}"


@dataclass
class Instance:
    runtime: Runtime
    app: Any

    def client(self, address: str = "192.0.2.1") -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app, client=(address, 40000))
        return httpx.AsyncClient(transport=transport, base_url="http://rankd.test")


@pytest.fixture(scope="module")
async def instances(urls: Urls) -> AsyncIterator[tuple[Instance, Instance]]:
    """Two instances on the same Redis, each allowing BURST requests at once and then one a
    second, per key and per address."""
    tight = make_settings(
        urls,
        server_keys=KEYS,
        rate_key_per_s=1.0,
        rate_key_burst=BURST,
        rate_address_per_s=1.0,
        rate_address_burst=BURST,
    )
    made = []
    for _ in range(2):
        rt = Runtime.build(tight)
        await rt.open(background=False)
        app = create_app(tight)
        app.state.runtime = rt  # the lifespan (consumer, watchdog) is the session app's job
        made.append(Instance(rt, app))
    try:
        yield made[0], made[1]
    finally:
        for instance in made:
            await instance.runtime.close()


def run(i: int, player: str | None = None) -> dict[str, Any]:
    return {"run_id": f"r-{uuid.uuid4().hex[:8]}-{i}", "player_id": player or f"p{i}", "score": i}


def counted(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_over_the_limit_429_with_retry_after_and_nothing_stored(
    instances: tuple[Instance, Instance], make_board: Any, client: httpx.AsyncClient
) -> None:
    one, _ = instances
    board = await make_board()
    key = fresh_key()
    before = counted("rankd_rate_limited_total", limit="key")
    async with one.client() as http:
        for i in range(BURST):
            response = await http.post(f"/v1/boards/{board}/runs", json=run(i), headers=key)
            assert response.status_code == 200, response.text
        refused = await http.post(f"/v1/boards/{board}/runs", json=run(99), headers=key)
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "rate_limited"
    assert "retry in 1 s" in error["message"]
    assert refused.headers["Retry-After"] == "1"  # one request a second: the next in ≤ 1 s
    assert counted("rankd_rate_limited_total", limit="key") == before + 1
    # the refused run never reached the board; the allowed ones did
    missing = await client.get(f"/v1/boards/{board}/players/p99")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "player_not_ranked"
    top = (await client.get(f"/v1/boards/{board}/top")).json()
    assert sorted(e["player_id"] for e in top["entries"]) == ["p0", "p1", "p2"]


async def test_retry_after_counts_the_wait_in_whole_seconds(
    urls: Urls, bare_runtime: Runtime
) -> None:
    # one request every 10 s: a refusal right after the burst waits about 10 s
    limiter = RateLimiter(bare_runtime.redis.limits, Rate(0.1, 2), Rate(0, 1))
    identity = f"k:{uuid.uuid4().hex}"
    await limiter.check("key", identity)
    await limiter.check("key", identity)
    with pytest.raises(RateLimited) as refused:
        await limiter.check("key", identity)
    assert refused.value.retry_after_s == 10
    # and the key holds only until the identity is idle again: at most burst / rate seconds
    ttl_ms = await bare_runtime.redis.client.pttl(redis_keys.rate_limit(identity))
    assert 0 < ttl_ms <= 20_000


async def test_a_flooding_key_does_not_limit_another_key(
    instances: tuple[Instance, Instance], make_board: Any
) -> None:
    one, _ = instances
    board = await make_board()
    flooder, other = fresh_key(), fresh_key()
    async with one.client() as http:

        async def read(headers: dict[str, str]) -> int:
            response = await http.get(f"/v1/boards/{board}/top", headers=headers)
            return response.status_code

        flood = [read(flooder) for _ in range(30)]
        polite = [read(other) for _ in range(BURST)]
        statuses = await asyncio.gather(*flood, *polite)
    flood_statuses, other_statuses = statuses[:30], statuses[30:]
    assert flood_statuses.count(200) <= BURST + 1  # + 1: a second may pass mid-flood
    assert flood_statuses.count(429) >= 30 - BURST - 1
    assert other_statuses == [200] * BURST


async def test_anonymous_requests_are_limited_per_address(
    instances: tuple[Instance, Instance], make_board: Any
) -> None:
    one, _ = instances
    board = await make_board()
    crowded, elsewhere = fresh_address(), fresh_address()
    path = f"/v1/boards/{board}/top"
    async with one.client(crowded) as http:
        assert [(await http.get(path)).status_code for _ in range(BURST)] == [200] * BURST
        refused = await http.get(path)
        assert refused.status_code == 429
        assert "this address" in refused.json()["error"]["message"]
        assert int(refused.headers["Retry-After"]) >= 1
        # a wrong key is no key: counted against the address, so still refused
        wrong = await http.get(path, headers={"Authorization": "Bearer not-a-key"})
        assert wrong.status_code == 429
        # a valid key is counted on its own, whatever the address
        assert (await http.get(path, headers=fresh_key())).status_code == 200
        # probes and scrapes are never limited
        for probe in ("/healthz", "/metrics"):
            assert (await http.get(probe)).status_code == 200
    async with one.client(elsewhere) as http:
        assert (await http.get(path)).status_code == 200


async def test_two_instances_share_one_count(
    instances: tuple[Instance, Instance], make_board: Any
) -> None:
    one, two = instances
    board = await make_board()
    key = fresh_key()
    path = f"/v1/boards/{board}/top"
    async with one.client() as first, two.client() as second:
        statuses = [(await first.get(path, headers=key)).status_code for _ in range(BURST - 1)]
        statuses.append((await second.get(path, headers=key)).status_code)
        assert statuses == [200] * BURST
        # the burst is spent on both instances, not BURST on each
        assert (await second.get(path, headers=key)).status_code == 429
        assert (await first.get(path, headers=key)).status_code == 429


async def test_unreachable_redis_lets_requests_through(urls: Urls) -> None:
    """Fail open: a Redis that cannot be asked is no reason to refuse anyone, and for a while
    afterwards requests do not wait on it again."""
    down = RedisStores(f"redis://127.0.0.1:{free_port()}/0", pool_timeout_s=1)
    unchecked = counted("rankd_rate_limit_unchecked_total")
    try:
        for fail_open_s in (60.0, 0.0):  # asked once then left alone; asked every time
            limiter = RateLimiter(down.limits, Rate(1, 1), Rate(1, 1), fail_open_s=fail_open_s)
            for _ in range(5):
                await limiter.check("key", "k:down")  # over the rate, yet no 429
                await limiter.check("address", "a:down")
        assert counted("rankd_rate_limit_unchecked_total") == unchecked + 20
    finally:
        await down.close()


async def test_a_refusal_is_remembered_until_its_retry_time(
    bare_runtime: Runtime, redis: Redis
) -> None:
    """A flood is refused in the process, without a round trip, but never past the moment
    Redis said to retry."""
    # one a second: the refusal is remembered that long, room for the round trips below on
    # a loaded machine (at one per 50 ms the memory could lapse before the second check)
    limiter = RateLimiter(bare_runtime.redis.limits, Rate(1, 1), Rate(0, 1))
    identity = f"k:{uuid.uuid4().hex}"
    await limiter.check("key", identity)
    with pytest.raises(RateLimited):
        await limiter.check("key", identity)
    await redis.delete(redis_keys.rate_limit(identity))  # Redis would allow it now...
    with pytest.raises(RateLimited):
        await limiter.check("key", identity)  # ...but the refusal stands, from memory
    memo = limiter.refused.get(identity)
    assert memo is not None
    await asyncio.sleep(max(0.0, memo.value - time.monotonic()) + 0.01)
    await limiter.check("key", identity)  # its retry time has come: asked again, allowed


async def test_remembered_refusals_are_bounded(bare_runtime: Runtime) -> None:
    limiter = RateLimiter(
        bare_runtime.redis.limits, Rate(0.01, 1), Rate(0, 1), refusal_memo_bytes=4000
    )
    prefix = uuid.uuid4().hex
    for i in range(100):
        identity = f"k:{prefix}-{i}"
        await limiter.check("key", identity)
        with pytest.raises(RateLimited):
            await limiter.check("key", identity)
    assert limiter.refused.bytes <= 4000
    assert len(limiter.refused) == 4000 // 200  # the latest ones
    # an identity that left the memory is asked of Redis again, and still refused
    with pytest.raises(RateLimited):
        await limiter.check("key", f"k:{prefix}-0")


async def test_a_flushed_script_cache_is_reloaded(bare_runtime: Runtime, redis: Redis) -> None:
    """Redis restarted or failed over without its scripts: loaded again, the call answered."""
    identity = f"k:{uuid.uuid4().hex}"
    await redis.script_flush()
    assert await bare_runtime.redis.limits.rate_limit(identity, 1_000_000, 1) == 0
    assert await bare_runtime.redis.limits.rate_limit(identity, 1_000_000, 1) > 0


async def test_a_zero_rate_turns_the_limit_off(bare_runtime: Runtime, redis: Redis) -> None:
    limiter = RateLimiter(bare_runtime.redis.limits, Rate(0, 1), Rate(0, 1))
    identity = f"k:{uuid.uuid4().hex}"
    for _ in range(10):
        await limiter.check("key", identity)
    assert not await redis.exists(redis_keys.rate_limit(identity))  # not even counted


def test_client_address_trusts_forwarded_for_only_as_configured() -> None:
    def scope(peer: str, forwarded: str | None = None) -> dict[str, Any]:
        headers = [] if forwarded is None else [(b"x-forwarded-for", forwarded.encode())]
        return {"client": (peer, 1234), "headers": headers}

    assert client_address(scope("10.0.0.5", "203.0.113.9"), 0) == "10.0.0.5"
    # one proxy: the entry it appended; what the client wrote to the left is ignored
    assert client_address(scope("10.0.0.5", "1.2.3.4, 203.0.113.9"), 1) == "203.0.113.9"
    assert client_address(scope("10.0.0.5", "1.2.3.4, 203.0.113.9, 10.0.0.7"), 2) == "203.0.113.9"
    # fewer entries than proxies, no header, or garbage: the peer
    assert client_address(scope("10.0.0.5", "203.0.113.9"), 2) == "10.0.0.5"
    assert client_address(scope("10.0.0.5"), 1) == "10.0.0.5"
    assert client_address(scope("10.0.0.5", "1.2.3.4, <script>"), 1) == "10.0.0.5"
    # IPv6 by its /64; an IPv4-mapped address as IPv4
    assert client_address(scope("2001:db8:1:2:aaaa::1"), 0) == "2001:db8:1:2::/64"
    assert client_address(scope("2001:db8:1:2:bbbb::9"), 0) == "2001:db8:1:2::/64"
    assert client_address(scope("::ffff:192.0.2.1"), 0) == "192.0.2.1"
    assert client_address({"headers": []}, 0) == "unknown"


# The law of the script, over arbitrary request sequences, against the real Redis with an
# injected clock. Each example runs on a fresh event loop with its own store (the session's
# loop belongs to pytest-asyncio). Intervals of at least 50 ms keep each key alive (in real
# time) for longer than an example takes, so expiry never cuts in where the clock is frozen.

PROPS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def in_fresh_loop(urls: Urls, fn: Callable[[RateLimits], Awaitable[T]]) -> T:
    async def main() -> T:
        store = RedisStores(urls.redis)
        try:
            return await fn(store.limits)
        finally:
            await store.close()

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def model(tat: int, now: int, interval: int, burst: int) -> tuple[int, int]:
    """GCRA as written in the literature: (new arrival time, wait µs; 0 = allowed)."""
    next_tat = max(tat, now) + interval
    allowed_at = next_tat - burst * interval
    return (next_tat, 0) if now >= allowed_at else (tat, allowed_at - now)


@PROPS
@given(
    interval=st.integers(50_000, 2_000_000),
    burst=st.integers(1, 12),
    # each step: how far the clock moves, in hundredths of an interval; -1: to exactly when
    # the last refusal said to retry
    steps=st.lists(st.integers(-1, 300), min_size=1, max_size=60),
)
def test_gcra_law(urls: Urls, interval: int, burst: int, steps: list[int]) -> None:
    identity = f"k:{uuid.uuid4().hex}"
    start = 1_800_000_000_000_000  # µs: 2027

    async def go(store: RateLimits) -> list[tuple[int, int]]:
        now, last_wait, decided = start, 0, []
        for step in steps:
            if step == -1:
                now += last_wait
            else:
                now += step * interval // 100
            wait = await store.rate_limit(identity, interval, burst, now_us=now)
            decided.append((now, wait))
            if wait:
                last_wait = wait
        return decided

    decided = in_fresh_loop(urls, go)
    tat = 0
    for now, wait in decided:
        tat, expected = model(tat, now, interval, burst)
        assert wait == expected, (now - start, wait, expected)
    allowed = [now for now, wait in decided if wait == 0]
    # the law: any span of w µs holds at most burst + w / interval allowed requests
    for i in range(len(allowed)):
        for j in range(i, len(allowed)):
            assert j - i + 1 <= burst + (allowed[j] - allowed[i]) / interval
    # and a refusal's wait is honest: retrying exactly then is allowed
    for (now, wait), (later, verdict) in itertools.pairwise(decided):
        if wait and later == now + wait:
            assert verdict == 0


# --- leases: one Redis call for many requests, the limit still exact ----------------------


class CountingStore:
    """The real Redis store, counting the rate-limit calls it makes."""

    def __init__(self, store: RateLimits) -> None:
        self.store = store
        self.conn = store.conn  # the limiter tells a stalled Redis by its answers
        self.calls = 0
        self.taken = 0

    async def rate_limit(self, *args: Any, cost: int = 1) -> int:
        self.calls += 1
        wait_us: int = await self.store.rate_limit(*args, cost=cost)
        if wait_us == 0:
            self.taken += cost
        return wait_us


async def test_a_lease_serves_many_requests_with_one_call(bare_runtime: Runtime) -> None:
    counting = CountingStore(bare_runtime.redis.limits)
    # 1,000/s, 50 ms leases: 50 requests per Redis call
    limiter = RateLimiter(counting, Rate(1000, 1000), Rate(0, 1), lease_s=0.05)  # type: ignore[arg-type]
    key = f"k:lease-{uuid.uuid4().hex}"
    for _ in range(200):
        await limiter.check("key", key)
    assert counting.calls <= 200 / 50 + 2, counting.calls


async def test_concurrent_requests_of_one_identity_share_one_lease_call(
    bare_runtime: Runtime,
) -> None:
    counting = CountingStore(bare_runtime.redis.limits)
    limiter = RateLimiter(counting, Rate(1000, 1000), Rate(0, 1), lease_s=0.05)  # type: ignore[arg-type]
    key = f"k:herd-{uuid.uuid4().hex}"
    await asyncio.gather(*(limiter.check("key", key) for _ in range(40)))
    assert counting.calls == 1


async def test_leases_over_two_processes_never_exceed_the_limit(bare_runtime: Runtime) -> None:
    """Every request is paid for in Redis before it is served: whatever the leases, over
    any span at most burst + rate x span requests pass, summed over both instances."""
    rate = Rate(200, 20)  # leases of 10 at 50 ms
    counting = CountingStore(bare_runtime.redis.limits)
    first = RateLimiter(counting, rate, Rate(0, 1), lease_s=0.05)  # type: ignore[arg-type]
    second = RateLimiter(counting, rate, Rate(0, 1), lease_s=0.05)  # type: ignore[arg-type]
    key = f"k:two-{uuid.uuid4().hex}"
    allowed = 0
    started = time.monotonic()
    for i in range(600):
        try:
            await (first if i % 2 else second).check("key", key)
            allowed += 1
        except RateLimited:
            pass
        if i % 20 == 0:
            await asyncio.sleep(0.005)
    span = time.monotonic() - started
    assert allowed <= counting.taken <= rate.burst + rate.per_s * span + 1
    assert allowed > 0
