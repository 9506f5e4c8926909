"""Which Redis process the boards were verified on, and how far the log has been applied
on each node (services/rebuild/restart.py)."""

from __future__ import annotations

from typing import cast

from redis.asyncio.cluster import RedisCluster

from rankd.errors import Unavailable
from rankd.stores.redis import keys
from rankd.stores.redis.connection import RedisConn, identity, is_cluster, reachable
from rankd.stores.redis.scripts import LOG_POSITION, RESTORED_FROM


class Positions:
    """The verified marker and the log positions."""

    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn

    async def server_run_id(self) -> str:
        """Redis's own run id, a new one after every restart; on a cluster every primary's
        (a failover changes it too)."""
        with reachable():
            return await identity(self.conn.client)

    async def is_verified(self) -> bool:
        """Whether the boards were last verified on the Redis process running now."""
        return await self.verified_id() == await self.server_run_id()

    async def _primary_get(self, key: str) -> bytes | None:
        """GET from the primary that owns ``key``, never a replica (with reads from
        replicas on a cluster, the client would send a GET to one)."""
        return cast(bytes | None, await self.conn.nodes.for_key(key).get(key))

    async def verified_id(self) -> str | None:
        """The run id (or ids) the boards were last verified on, on this Redis."""
        with reachable():
            marker = await self._primary_get(keys.VERIFIED_MARKER)
        return None if marker is None else bytes(marker).decode()

    async def mark_restored_from(self, replaced: str, sequence: int, at_ms: int) -> None:
        """Note where a restore replacing node ``replaced`` began (restored_from.lua)."""
        args: list[str | int] = [replaced, sequence, at_ms, keys.RESTORED_FROM_TTL_S]
        with reachable():
            await self.conn.script((RESTORED_FROM, [keys.RESTORED_FROM], args))

    async def restored_from(self, replaced: str) -> tuple[int, int] | None:
        """(sequence, at_ms) noted for ``replaced``; None when none (or unreadable)."""
        with reachable():
            noted = await self.conn.nodes.for_key(keys.RESTORED_FROM).hget(
                keys.RESTORED_FROM, replaced
            )
        text = noted.decode() if isinstance(noted, bytes) else str(noted or "")
        parts = text.split(":")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            return None
        return int(parts[0]), int(parts[1])

    async def mark_verified(self, run_id: str) -> None:
        with reachable():
            await self.conn.client.set(keys.VERIFIED_MARKER, run_id)

    def position_keys(self) -> list[str]:
        """One position key per primary, each in a slot that primary serves now: the
        standalone (or Sentinel) primary's one key, or on a cluster the first tag
        LOG_POSITION_TAG whose slot lies on each primary (found again on every call, so a
        slot moved since is followed)."""
        if not is_cluster(self.conn.client):
            return [keys.LOG_POSITION]
        cluster = cast(RedisCluster, self.conn.client)
        wanted = {node.name for node in cluster.get_primaries()}
        found: dict[str, str] = {}
        n = 0
        while len(found) < len(wanted) and n < 100_000:
            key = keys.LOG_POSITION_TAG.format(n)
            node = cluster.get_node_from_key(key)
            if node is not None and node.name in wanted and node.name not in found:
                found[node.name] = key
            n += 1
        if len(found) < len(wanted):
            raise Unavailable("a Redis Cluster primary serves no slot")
        return [found[name] for name in sorted(found)]

    async def record_position(self, sequence: int, now_ms: int) -> list[int]:
        """Record that the log is applied through ``sequence`` on every primary that is a
        process the boards were verified on (log_position.lua); per key its reply: 1
        written, 0 not past the recorded one, -1 refused (no verified marker, or the node
        restarted or was promoted since)."""
        verified = await self.verified_id()
        if verified is None:
            return [-1]
        with reachable():
            return [
                int(await self.conn.script((LOG_POSITION, [key], [sequence, verified, now_ms])))
                for key in self.position_keys()
            ]

    async def read_positions(self) -> list[tuple[int, int] | None]:
        """Per primary, the (sequence, recorded at ms) its position key holds; None where
        the key is missing (a wiped node, or one never recorded on)."""
        out: list[tuple[int, int] | None] = []
        with reachable():
            for key in self.position_keys():
                # from the primary: a replica may lag it (reads from replicas on a
                # cluster), and a position read too high would skip acknowledged runs
                seq, at_ms = await self.conn.nodes.for_key(key).hmget(key, ["seq", "at_ms"])
                out.append(None if seq is None else (int(seq), int(at_ms or 0)))
        return out
