"""Player names and profile segments: copies of PostgreSQL's players table."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson

from rankd.stores.redis import keys
from rankd.stores.redis.common import name
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.staging import swap


class Profiles:
    """The names hash and the profile-segments hash."""

    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn

    async def names(self, player_ids: Sequence[str]) -> list[str | None]:
        if not player_ids:
            return []
        with reachable():
            if self.conn.read_from_replicas:  # a plain read, which a replica may answer
                raw = await self.conn.client.hmget(keys.NAMES, list(player_ids))
            else:
                # in the shared pipeline: a read that misses the name cache (a rank read of
                # a player not read for a while) then costs no connection and round trip of
                # its own
                [raw] = await self.conn.pipeline((), [("HMGET", (keys.NAMES, *player_ids))])
        return [name(n) for n in raw]

    async def set_name(self, player_id: str, name: str) -> None:
        with reachable():
            await self.conn.client.hset(keys.NAMES, player_id, name)

    async def profile_segments(self, player_ids: Sequence[str]) -> list[dict[str, str]]:
        """Each player's profile segments ({} for none)."""
        with reachable():
            raw = await self.conn.client.hmget(keys.PROFILE_SEGMENTS, list(player_ids))
        return [orjson.loads(r) if r else {} for r in raw]

    async def set_profile_segments(self, player_id: str, segments: dict[str, str]) -> None:
        with reachable():
            await self.conn.client.hset(keys.PROFILE_SEGMENTS, player_id, orjson.dumps(segments))

    async def restore_profile_segments(self, chunks: AsyncIterator[dict[str, str]]) -> int:
        """Replace the profile-segments hash with ``chunks`` (staged, then renamed)."""
        return await self._restore_hash(keys.PROFILE_SEGMENTS, chunks)

    async def patch_players(self, players: Sequence[tuple[str, str, str]]) -> None:
        """Write these players' names and profile segments into the copies (an empty
        profile removed), as restore_names/restore_profile_segments would have."""
        with reachable():
            for first in range(0, len(players), 1000):
                chunk = players[first : first + 1000]
                pipe = self.conn.client.pipeline(transaction=False)
                pipe.hset(keys.NAMES, mapping={p: n for p, n, _ in chunk})
                profiles = {p: s for p, _, s in chunk if s != "{}"}
                if profiles:
                    pipe.hset(keys.PROFILE_SEGMENTS, mapping=profiles)  # type: ignore[arg-type]
                cleared = [p for p, _, s in chunk if s == "{}"]
                if cleared:
                    pipe.hdel(keys.PROFILE_SEGMENTS, *cleared)
                await pipe.execute()

    async def has_names(self) -> bool:
        with reachable():
            return bool(await self.conn.client.exists(keys.NAMES))

    async def restore_names(self, chunks: AsyncIterator[dict[str, str]]) -> int:
        """Replace the names hash with ``chunks`` (staged, then renamed into place)."""
        return await self._restore_hash(keys.NAMES, chunks)

    async def _restore_hash(self, key: str, chunks: AsyncIterator[Any]) -> int:
        staging = keys.staging(key)
        loaded = 0
        with reachable():
            await self.conn.client.delete(staging)
            async for chunk in chunks:
                await self.conn.client.hset(staging, mapping=chunk)
                loaded += len(chunk)
            await swap(self.conn.nodes, key, {key: loaded})
        return loaded

    async def forget_player(self, player_id: str) -> None:
        """Remove a player's name and profile segments."""
        with reachable():
            await self.conn.client.hdel(keys.NAMES, player_id)
            await self.conn.client.hdel(keys.PROFILE_SEGMENTS, player_id)
