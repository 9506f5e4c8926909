"""The standings' reads: one round trip each (a sharded board's through stores/redis/sharded.py)."""

from __future__ import annotations

from collections.abc import Sequence

from rankd.periods import PeriodRef
from rankd.stores.redis import keys
from rankd.stores.redis.common import SIDES, Own, Rows, Shards, name, number, rows
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.marks import PeriodsIndex
from rankd.stores.redis.metadata import metadata_of
from rankd.stores.redis.scripts import AROUND, ENTRY, FRIENDS, OWN_ENTRY, TOP
from rankd.stores.redis.sharded import ShardedReads


class Reads:
    """A period's top, a player's entry, rank, neighbours and friends, and its totals."""

    def __init__(
        self, conn: RedisConn, shards: Shards, index: PeriodsIndex, sharded: ShardedReads
    ) -> None:
        self.conn = conn
        self.shards = shards
        self.index = index
        self.sharded = sharded

    async def top(self, ref: PeriodRef, offset: int, count: int) -> tuple[Rows, int]:
        """``count`` entries from rank ``offset + 1``, and the period's total."""
        if (shards := self.shards.of(ref.board)) > 1:
            with reachable():
                return await self.sharded.top(ref, shards, offset, count)
        call = (TOP, (keys.period_keys(*ref).public,), (offset, offset + count - 1))
        with reachable():
            total, flat = await self.conn.call(call)
        return rows(flat), int(total)

    async def after(
        self, ref: PeriodRef, position: tuple[str, int, int], count: int
    ) -> tuple[int, int, Rows]:
        """(0-based rank of the first row, total, rows): up to ``count`` entries after
        ``position`` (a cursor's page; stores/redis/sharded.py ``after``, on one key or many)."""
        with reachable():
            return await self.sharded.after(ref, self.shards.of(ref.board), position, count)

    async def entry(
        self, ref: PeriodRef, player_id: str
    ) -> tuple[tuple[int, int, int] | None, int]:
        """((composite, 0-based rank, exact ms or 0) or None: no entry, total)."""
        if (shards := self.shards.of(ref.board)) > 1:
            with reachable():
                return await self.sharded.entry(ref, shards, player_id)
        call = (ENTRY, (keys.period_keys(*ref).public,), (player_id,))
        with reachable():
            reply = await self.conn.call(call)
        if len(reply) == 1:
            return None, int(reply[0])
        total, composite, rank0, achieved = reply
        return (number(composite), int(rank0), int(achieved)), int(total)

    async def shard_entry(
        self, ref: PeriodRef, player_id: str
    ) -> tuple[int, tuple[int, int, int] | None, int]:
        """On a sharded board, the player's own shard alone: (the shard, (composite, 0-based
        rank on the shard, exact ms) or None, the shard's total). One script call."""
        shards = self.shards.of(ref.board)
        shard = keys.shard_of(player_id, shards)
        call = (ENTRY, (keys.own_keys(*ref, player_id, shards).public,), (player_id,))
        with reachable():
            reply = await self.conn.call(call)
        if len(reply) == 1:
            return shard, None, int(reply[0])
        total, composite, rank0, achieved = reply
        return shard, (number(composite), int(rank0), int(achieved)), int(total)

    async def around(
        self, ref: PeriodRef, player_id: str, span: int
    ) -> tuple[int, int, Rows] | None:
        """(0-based rank of the first row, total, rows) around a player; None: no entry."""
        if (shards := self.shards.of(ref.board)) > 1:
            with reachable():
                return await self.sharded.around(ref, shards, player_id, span)
        call = (AROUND, (keys.period_keys(*ref).public,), (player_id, span))
        with reachable():
            reply = await self.conn.call(call)
        if reply[0] == -1:
            return None
        return int(reply[0]), int(reply[1]), rows(reply[2])

    async def group(
        self, ref: PeriodRef, player_ids: Sequence[str]
    ) -> tuple[list[tuple[int, int, int] | None], list[str | None]]:
        """Each player's (composite, 0-based rank, exact ms or 0) or None, and their names."""
        if (shards := self.shards.of(ref.board)) > 1:
            with reachable():
                return await self.sharded.group(ref, shards, player_ids)
        call = (FRIENDS, (keys.period_keys(*ref).public,), tuple(player_ids))
        with reachable():
            [flat, names] = await self.conn.run([call], [("HMGET", (keys.NAMES, *player_ids))])
        standings = [
            None
            if flat[3 * i] is None
            else (number(flat[3 * i]), int(flat[3 * i + 1]), int(flat[3 * i + 2]))
            for i in range(len(player_ids))
        ]
        return standings, [name(n) for n in names]

    async def own(self, ref: PeriodRef, player_id: str) -> tuple[Own, int]:
        """A player's own view of a period (see ``Own``) and the public total."""
        if (shards := self.shards.of(ref.board)) > 1:
            with reachable():
                return await self.sharded.own(ref, shards, player_id)
        pk = keys.period_keys(*ref)
        call = (OWN_ENTRY, (pk.public, pk.shadow, pk.pending), (player_id,))
        with reachable():
            reply = await self.conn.call(call)
        if int(reply[0]) == -1:
            return None, int(reply[1])
        side, total, composite, rank, achieved = reply
        return (SIDES[int(side)], number(composite), int(rank), int(achieved)), int(total)

    async def count_from(self, ref: PeriodRef, floor: int) -> tuple[int, int]:
        """(entries with a composite of at least ``floor``, total)."""
        if (shards := self.shards.of(ref.board)) > 1:
            with reachable():
                return await self.sharded.count_from(ref, shards, floor)
        key = keys.period_keys(*ref).public
        with reachable():
            pipe = self.conn.client.pipeline(transaction=False)
            pipe.zcount(key, floor, "+inf")
            pipe.zcard(key)
            above, total = await pipe.execute()
        return int(above), int(total)

    async def metadata(
        self, ref: PeriodRef, entries: Sequence[tuple[str, int]]
    ) -> list[bytes | None]:
        """The metadata JSON of each (player, exact achieved ms) entry (None: none)."""
        return await metadata_of(self.conn, self.shards, ref, entries)

    async def public_totals(self, refs: Sequence[PeriodRef]) -> list[int]:
        """How many public entries each period holds (one ZCARD each, a sharded period's
        summed over its shards; one round trip)."""
        if not refs:
            return []
        spans = [self.shards.every(ref) for ref in refs]
        with reachable():
            pipe = self.conn.client.pipeline(transaction=False)
            for every in spans:
                for pk in every:
                    pipe.zcard(pk.public)
            counts = iter(await pipe.execute())
        return [sum(int(next(counts)) for _ in every) for every in spans]

    async def public_periods(self, board_id: str, window: str) -> list[str]:
        """Ids of the window's periods in the index whose public standings hold an entry
        (one ZCARD each, one round trip): a period whose only entries are banned players'
        or held runs is not listed to the public."""
        ids = await self.index.period_ids(board_id, window)
        if not ids:
            return []
        shards = self.shards.of(board_id)
        with reachable():
            pipe = self.conn.client.pipeline(transaction=False)
            for pid in ids:  # every shard's (a sharded period is listed if any holds one)
                for pk in keys.shard_keys(board_id, window, pid, "", shards):
                    pipe.zcard(pk.public)
            counts = iter(await pipe.execute())
        width = max(shards, 1)
        return [pid for pid in ids if sum(int(next(counts)) for _ in range(width)) > 0]

    async def period_exists(self, ref: PeriodRef) -> bool:
        if (shards := self.shards.of(ref.board)) > 1:
            with reachable():
                return await self.sharded.exists(ref, shards)
        with reachable():
            return bool(await self.conn.client.exists(keys.period_keys(*ref).public))
