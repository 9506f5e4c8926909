"""Player display names.

PostgreSQL's ``players`` table is the durable record. Redis holds a copy in one hash,
restored with the boards after Redis is lost, so a read that needs names it has not cached
costs one HMGET instead of a PostgreSQL query. An in-process cache with a short TTL sits in
front, which serves the top lists almost always.
"""

from __future__ import annotations

from collections.abc import Iterable

from rankd.errors import Unavailable
from rankd.stores.redis.profiles import Profiles
from rankd.ttlcache import TTLCache

# Estimated bytes of one cached name: the key and value strings and the entry's tuple.
_ENTRY_OVERHEAD = 200


class NameCache:
    def __init__(self, store: Profiles, ttl_s: float, max_bytes: int = 32 << 20) -> None:
        self.store = store
        self._cache: TTLCache[str, str | None] = TTLCache(
            ttl_s, max_bytes, lambda pid, name: _ENTRY_OVERHEAD + len(pid) + len(name or "")
        )

    async def lookup(self, player_ids: Iterable[str]) -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        missing: list[str] = []
        for pid in player_ids:
            hit = self._cache.get(pid)
            if hit is not None:
                found[pid] = hit.value
            else:
                missing.append(pid)
        if not missing:
            return found
        try:
            fetched = await self.store.names(missing)
        except Unavailable:
            # display-only: serve what we have rather than fail the read
            for pid in missing:
                stale = self._cache.get(pid, stale_ok=True)
                found[pid] = stale.value if stale is not None else None
            return found
        found.update(self.absorb(missing, fetched))
        return found

    def absorb(self, player_ids: list[str], names: list[str | None]) -> dict[str, str | None]:
        """Cache names a read fetched in its own round trip."""
        found: dict[str, str | None] = {}
        for pid, name in zip(player_ids, names, strict=True):
            self._cache.put(pid, name)
            found[pid] = name
        return found

    async def set_copy(self, player_id: str, name: str) -> None:
        """After PostgreSQL holds a new name: the Redis copy and this process's cache."""
        await self.store.set_name(player_id, name)
        self._cache.put(player_id, name)

    def forget(self, player_id: str) -> None:
        """An erased player: this process shows no name for the id from now on."""
        self._cache.pop(player_id)
