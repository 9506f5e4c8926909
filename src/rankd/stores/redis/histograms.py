"""Sharded boards' score histograms in Redis (histogram.py): each shard's ``<key>:hist``
read whole for approximate ranks, and recounted from the shard's standings to put right
any drift (lua/hist_check.lua)."""

from __future__ import annotations

from typing import Any

from rankd.periods import PeriodRef
from rankd.stores.redis import keys
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.scripts import HIST_CHECK


class HistogramKeys:
    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn

    async def fetch(self, ref: PeriodRef, shards: int) -> list[dict[Any, Any]]:
        """Every shard's histogram of a period (bucket -> entries, and '#': its change
        counter), in one round trip."""
        pipe = self.conn.client.pipeline(transaction=False)
        for pk in keys.shard_keys(*ref, shards):
            pipe.hgetall(pk.hist)
        with reachable():
            found: list[dict[Any, Any]] = await pipe.execute()
        return found

    async def reconcile(self, ref: PeriodRef, shards: int) -> list[int]:
        """Recount every shard's histogram from its standings and repair it; the drift
        found on each (the sum over buckets of |held - true|)."""
        calls = [(HIST_CHECK, (pk.public, pk.hist), ()) for pk in keys.shard_keys(*ref, shards)]
        with reachable():
            return [int(d) for d in await self.conn.run(calls)]
