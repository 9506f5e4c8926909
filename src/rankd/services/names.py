"""Player display names.

PostgreSQL's ``players`` table is the durable record. Redis holds a copy in one hash (see
keys.NAMES), restored with the boards after Redis is lost, so a read that needs names it has
not cached costs one HMGET instead of a PostgreSQL query. An in-process cache with a short
TTL sits in front, which serves the top lists almost always.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from rankd import keys
from rankd.stores.postgres import PostgresStore

MAX_CACHED = 200_000


class NameCache:
    def __init__(self, pg: PostgresStore, redis: Redis, ttl_s: float) -> None:
        self.pg = pg
        self.redis = redis
        self.ttl_s = ttl_s
        self._cache: dict[str, tuple[float, str | None]] = {}

    async def lookup(self, player_ids: Iterable[str]) -> dict[str, str | None]:
        now = time.monotonic()
        found: dict[str, str | None] = {}
        missing: list[str] = []
        for pid in player_ids:
            hit = self._cache.get(pid)
            if hit is not None and now - hit[0] < self.ttl_s:
                found[pid] = hit[1]
            else:
                missing.append(pid)
        if not missing:
            return found
        try:
            fetched: list[bytes | str | None] = await self.redis.hmget(keys.NAMES, missing)
        except (RedisError, OSError):
            # display-only: serve what we have rather than fail the read
            for pid in missing:
                hit = self._cache.get(pid)
                found[pid] = hit[1] if hit is not None else None
            return found
        found.update(self.absorb(missing, fetched))
        return found

    def absorb(self, player_ids: list[str], raw: list[bytes | str | None]) -> dict[str, str | None]:
        """Cache the answer of an HMGET on NAMES that a read sent in its own pipeline."""
        now = time.monotonic()
        if len(self._cache) > MAX_CACHED:
            self._cache.clear()  # crude bound; names are display-only
        found: dict[str, str | None] = {}
        for pid, value in zip(player_ids, raw, strict=True):
            name = value.decode() if isinstance(value, bytes) else value
            self._cache[pid] = (now, name)
            found[pid] = name
        return found

    async def set(self, player_id: str, name: str) -> None:
        """Durable first (PostgreSQL), then the Redis copy and this process's cache."""
        await self.pg.set_name(player_id, name)
        await self.redis.hset(keys.NAMES, player_id, name)
        self._cache[player_id] = (time.monotonic(), name)
