"""A Sentinel group's reads from replicas (RANKD_REDIS_READ_FROM_REPLICAS): which plain
reads a replica may answer, and the client that sends those to one (connection.py builds
it for a ``redis+sentinel://`` URL with the setting on)."""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis
from redis.asyncio.sentinel import SentinelConnectionPool

from rankd.stores.redis import keys

# The plain reads a Sentinel group's replicas may answer (RANKD_REDIS_READ_FROM_REPLICAS):
# the sorted-set and hash reads of the read paths, on the boards' keys (``lb:...``) and the
# player names. Nothing else: not the restart's position and marker keys (a replica that
# rejoins may hold a position its new primary lacks), not the profile segments (a submit
# resolves a run's segments from them), not the SCANs of erasure and deletion, and never a
# pipeline or a script call (the submits' answers, the own views).
REPLICA_READS = frozenset(
    {
        "HGET", "HMGET", "HGETALL", "HLEN", "HEXISTS",
        "ZCARD", "ZCOUNT", "ZSCORE", "ZMSCORE", "ZRANK", "ZREVRANK", "ZLEXCOUNT",
        "ZRANGE", "ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE",
        "ZRANGEBYLEX", "ZREVRANGEBYLEX",
    }
)  # fmt: skip
NAMES_KEY = keys.NAMES


def replica_may_answer(args: tuple[Any, ...]) -> bool:
    if len(args) < 2 or str(args[0]).upper() not in REPLICA_READS:
        return False
    key = args[1].decode() if isinstance(args[1], bytes) else str(args[1])
    return key.startswith("lb:") or key == NAMES_KEY


class ReplicaReads(Redis):
    """A Sentinel group's client that sends the reads ``replica_may_answer`` allows to a
    replica (redis-py's Sentinel replica pool: the replicas in turn, the primary if none
    answers) and everything else,
    pipelines included, to the primary. A replica is asynchronous: such a read may miss a
    write made a moment before, as on a Redis Cluster's replicas."""

    def __init__(self, primary: SentinelConnectionPool, replicas: Redis) -> None:
        super().__init__(connection_pool=primary)
        self.replicas = replicas

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        if replica_may_answer(args):
            return await self.replicas.execute_command(*args, **options)  # type: ignore[no-untyped-call]
        return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]

    async def on_primary(self, *args: Any) -> Any:
        """A command the primary answers, whatever ``replica_may_answer`` says of it."""
        return await super().execute_command(*args)  # type: ignore[no-untyped-call]

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        try:
            await self.replicas.aclose()
        finally:
            await super().aclose(close_connection_pool)
