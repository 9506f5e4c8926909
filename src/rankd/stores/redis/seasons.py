"""The season job's Redis side: a closed period read out in pages, then its keys removed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from rankd import codec
from rankd.periods import PeriodRef
from rankd.stores.redis import keys
from rankd.stores.redis.common import Shards, name
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.metadata import metadata_of
from rankd.stores.redis.sharded import ShardedReads


class SeasonKeys:
    """A closed period's pages, and its keys unlinked."""

    def __init__(self, conn: RedisConn, shards: Shards, sharded: ShardedReads) -> None:
        self.conn = conn
        self.shards = shards
        self.sharded = sharded

    async def period_pages(
        self, ref: PeriodRef, size: int = 10_000
    ) -> AsyncIterator[
        tuple[list[str], list[int], list[str | None], list[int], list[bytes | None]]
    ]:
        """A period's whole standings, best first, ``size`` entries at a time, as columns:
        player ids, composites, names, exact achieved times (0: not recorded) and the
        entries' metadata (from the primary, as the pages are). Bounded
        replies however large the period, never one huge ZRANGE. A sharded period's shards
        are merged into the one ranking an unsharded key would hold."""
        if (shards := self.shards.of(ref.board)) > 1:
            async for players, composites, achieved in self.sharded.pages(ref, shards, size):
                with reachable():
                    names = await self.conn.client.hmget(keys.NAMES, players)
                metadata = await self._metadata(ref, players, achieved)
                yield players, composites, [name(n) for n in names], achieved, metadata
            return
        key = keys.period_keys(*ref).public
        first = 0
        while True:
            with reachable():
                # without redis-py's withscores option its reply callback leaves the reply
                # as it came: the per-pair conversion it does otherwise was most of the cost
                # from the primary: the pages are archived and then the keys unlinked, so
                # a lagging replica's copy must not be the one archived
                raw: Any = await self.conn.on_primary(
                    "ZREVRANGE", key, first, first + size - 1, "WITHSCORES"
                )
                if not raw:
                    return
                if isinstance(raw[0], list):  # RESP3: [[member, score], ...]
                    members = [m for m, _ in raw]
                    composites = [int(s) for _, s in raw]
                else:  # RESP2: member, score, member, score, ...
                    members = raw[0::2]
                    composites = [int(float(s)) for s in raw[1::2]]
                # the ids and exact times are in the members (see codec.member)
                decoded = [m.decode() for m in members]
                players = [codec.player_of(m) for m in decoded]
                names = await self.conn.client.hmget(keys.NAMES, players)
            achieved = [codec.achieved_of(m) for m in decoded]
            metadata = await self._metadata(ref, players, achieved)
            yield players, composites, [name(n) for n in names], achieved, metadata
            if len(members) < size:
                return
            first += size

    async def _metadata(
        self, ref: PeriodRef, players: list[str], achieved: list[int]
    ) -> list[bytes | None]:
        entries = list(zip(players, achieved, strict=True))
        return await metadata_of(self.conn, self.shards, ref, entries, primary=True)

    async def unlink_period(self, ref: PeriodRef, layout: int | None = None) -> int:
        """Remove a period's keys; UNLINK frees their memory off Redis's main thread, so a
        large board leaving never blocks other commands. ``layout``: only that layout's
        standings (a resharding's old one), else every layout written and the admission."""
        removed = 0
        if layout is None and ref.window == "scheduled" and not ref.segment:
            with reachable():
                await self.conn.client.unlink(*keys.tournament(ref.board, ref.period))
        layouts = self.shards.written(ref.board) if layout is None else [layout]
        every = [pk for n in layouts for pk in keys.shard_keys(*ref, n)]
        for pk in every:  # every shard's keys (of both layouts in a move), a shard at a time
            # the exact-times hashes too: every bucket, in a few commands (absent ones cost
            # Redis a lookup each), as the members are not known here
            buckets = [f"{pk.public}:at:{b}" for b in range(keys.time_buckets_of(pk.public))]
            with reachable():
                # every key of a shard shares its tag: one node's plain pipeline (a cluster
                # client would split a many-key UNLINK by slot, to no use here)
                pipe = self.conn.nodes.for_key(pk.public).pipeline(transaction=False)
                side = (pk.runs, pk.shadow, pk.pending, pk.applied, pk.hist, pk.meta, pk.rid)
                pipe.unlink(pk.public, *side)
                for i in range(0, len(buckets), 8192):
                    pipe.unlink(*buckets[i : i + 8192])
                removed += int((await pipe.execute())[0])
        return removed
