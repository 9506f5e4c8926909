"""Player display names: PostgreSQL behind an in-process cache with a short TTL."""

from __future__ import annotations

import time
from collections.abc import Iterable

import psycopg
from psycopg_pool import PoolTimeout

from rankd.stores.postgres import PostgresStore

MAX_CACHED = 200_000
# Names are display-only: a read waits this long at most for PostgreSQL, then shows none.
LOOKUP_TIMEOUT_S = 0.5


class NameCache:
    def __init__(self, pg: PostgresStore, ttl_s: float) -> None:
        self.pg = pg
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
        if missing:
            try:
                fetched = await self.pg.get_names(missing, timeout_s=LOOKUP_TIMEOUT_S)
            except (psycopg.Error, PoolTimeout):
                # Names are display-only: serve what we have rather than fail the read.
                for pid in missing:
                    hit = self._cache.get(pid)
                    found[pid] = hit[1] if hit is not None else None
                return found
            if len(self._cache) > MAX_CACHED:
                self._cache.clear()  # crude bound; names are display-only
            for pid in missing:
                name = fetched.get(pid)
                self._cache[pid] = (now, name)
                found[pid] = name
        return found

    async def set(self, player_id: str, name: str) -> None:
        await self.pg.set_name(player_id, name)
        self._cache[player_id] = (time.monotonic(), name)
