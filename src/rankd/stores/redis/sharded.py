"""The reads of a sharded board: one period's standings spread over ``shards`` sorted sets.

A player lives on one shard (redis/keys.py shard_of). Every read answers exactly what the same
read of one unsharded key holding every entry answers, ties included: the whole board's
order is (composite descending, member descending byte by byte), ZREVRANGE's order on one
key, and a member (codec.member) is rebuilt from a row's player id and exact time.

* rank: the entry's composite and member from its own shard, then on every shard at once
  (one pipeline: one round trip per node) the entries ahead of it (ahead.lua), summed;
* top n from ``offset``: each shard's top ``offset + n``, merged; served while
  ``offset + n`` is at most MERGE_DEPTH (each shard returns that many rows: the cost grows
  with the depth times the shards, 16 x 10,000 rows is ~10 ms);
* around: each shard's ``span`` entries just ahead of the player's entry and ``span + 1``
  from there on, merged: the board's nearest ones are among them;
* a group (friends): found on their own shards, then ranked as above, all in one pipeline.

The same operations as the unsharded reads in redis/reads.py, so the standings interface
(services/standings/live.py) picks one or the other by the board's ``shards``. Redis's errors
leave here as ``Unavailable`` (503: retry), as they leave the store's.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, ParamSpec, Protocol, TypeVar

from redis.asyncio import Redis

from rankd import codec
from rankd.errors import InvalidRequest
from rankd.periods import PeriodRef
from rankd.stores.redis import keys
from rankd.stores.redis.common import Own, Rows
from rankd.stores.redis.connection import reachable
from rankd.stores.redis.scripts import AHEAD, ENTRY, FRIENDS, OWN_ENTRY, TOP, Call


class Runner(Protocol):
    """Runs script calls, then plain commands, in one round trip (RedisConn.pipeline)."""

    def __call__(
        self, calls: Sequence[Call], extra: Sequence[tuple[str, tuple[Any, ...]]] = ()
    ) -> Awaitable[list[Any]]: ...


_SIDES = ("public", "shadow", "pending")

# How deep a top list is served on a sharded board: offset + n at most this. Every shard
# returns offset + n rows for the merge, so the cost is linear in the depth.
MERGE_DEPTH = 10_000


P = ParamSpec("P")
R = TypeVar("R")


def _reachable(read: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """A read whose Redis errors (unreachable, timed out, or an error reply such as OOM or
    READONLY in a failover) become Unavailable: retrying later can succeed."""

    @functools.wraps(read)
    async def translated(*args: P.args, **kwargs: P.kwargs) -> R:
        with reachable():
            return await read(*args, **kwargs)

    return translated


def _number(raw: Any) -> int:
    return int(float(raw))


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _rows(flat: Sequence[Any]) -> Rows:
    return [
        (_text(flat[i]), _number(flat[i + 1]), int(flat[i + 2])) for i in range(0, len(flat), 3)
    ]


def order_key(row: tuple[str, int, int]) -> tuple[int, int, bytes]:
    """A row's place on the whole board, largest first: composite, then member bytes. The
    member's stamp (codec.member) is fixed-width and orders as its reversed time, so
    (-stamp offset, id bytes) orders as the member's bytes without building it."""
    return row[1], -codec.stamp_offset(row[2]), row[0].encode()


def merge(slices: Sequence[Rows]) -> Rows:
    """Rows of several shards in the whole board's order (each slice already is)."""
    return list(heapq.merge(*slices, key=order_key, reverse=True))


def shard_refs(ref: PeriodRef, shards: int) -> list[keys.PeriodKeys]:
    return keys.shard_keys(ref.board, ref.window, ref.period, ref.segment, shards)


def own_keys(ref: PeriodRef, shards: int, player_id: str) -> keys.PeriodKeys:
    return keys.own_keys(*ref, player_id, shards)


class ShardedReads:
    """The reads of sharded periods; each method is the unsharded one's twin."""

    def __init__(self, redis: Redis, run: Runner) -> None:
        self.redis = redis
        # the store's pipeline runner: concurrent requests' calls share round trips
        self.run = run

    async def _aheads(
        self, ref: PeriodRef, shards: int, pairs: Sequence[tuple[int, str]]
    ) -> tuple[list[int], int]:
        """For (composite, member) pairs: the entries ahead of each on the whole board, and
        the board's total. One pipeline over every shard."""
        flat: list[str | int] = [0, 0]
        for composite, member in pairs:
            flat += [composite, member]
        calls: list[Call] = [(AHEAD, (pk.public,), flat) for pk in shard_refs(ref, shards)]
        replies = await self.run(calls)
        aheads = [0] * len(pairs)
        total = 0
        for reply in replies:
            total += int(reply[0])
            for i, n in enumerate(reply[1]):
                aheads[i] += int(n)
        return aheads, total

    @_reachable
    async def total(self, ref: PeriodRef, shards: int) -> int:
        pipe = self.redis.pipeline(transaction=False)
        for pk in shard_refs(ref, shards):
            pipe.zcard(pk.public)
        return sum(int(n) for n in await pipe.execute())

    @_reachable
    async def top(self, ref: PeriodRef, shards: int, offset: int, count: int) -> tuple[Rows, int]:
        depth = offset + count
        if depth > MERGE_DEPTH:
            raise InvalidRequest(
                f"offset + n must be at most {MERGE_DEPTH} on a sharded board; "
                "page deeper ones from a player's rank (around) instead"
            )
        calls: list[Call] = [(TOP, (pk.public,), (0, depth - 1)) for pk in shard_refs(ref, shards)]
        replies = await self.run(calls)
        total = sum(int(r[0]) for r in replies)
        merged = merge([_rows(r[1]) for r in replies])
        return merged[offset:depth], total

    @_reachable
    async def after(
        self, ref: PeriodRef, shards: int, position: tuple[str, int, int], count: int
    ) -> tuple[int, int, Rows]:
        """(0-based rank of the first row, total, up to ``count`` rows) of the entries that
        sort after ``position`` (player id, composite, exact ms), whether or not that entry
        is still there: each shard's entries from the position on, merged (a cursor's page,
        at any depth). An unsharded board is one shard here."""
        player_id, composite, achieved = position
        member = codec.member(player_id, achieved)
        refs = shard_refs(ref, shards) if shards > 1 else [keys.period_keys(*ref)]
        calls: list[Call] = [(AHEAD, (k.public,), (0, count + 1, composite, member)) for k in refs]
        replies = await self.run(calls)
        total = sum(int(r[0]) for r in replies)
        rank0 = sum(int(r[1][0]) for r in replies)
        merged = merge([_rows(r[3]) for r in replies])
        if merged and merged[0] == position:  # the position's own entry, still in place
            merged, rank0 = merged[1:], rank0 + 1
        return rank0, total, merged[:count]

    @_reachable
    async def entry(
        self, ref: PeriodRef, shards: int, player_id: str
    ) -> tuple[tuple[int, int, int] | None, int]:
        """((composite, 0-based rank, exact ms or 0) or None: no entry, total)."""
        pk = own_keys(ref, shards, player_id)
        [reply] = await self.run([(ENTRY, (pk.public,), (player_id,))])
        if len(reply) == 1:
            return None, await self.total(ref, shards)
        composite, achieved = _number(reply[1]), int(reply[3])
        [ahead], total = await self._aheads(
            ref, shards, [(composite, codec.member(player_id, achieved))]
        )
        return (composite, ahead, achieved), total

    @_reachable
    async def around(
        self, ref: PeriodRef, shards: int, player_id: str, span: int
    ) -> tuple[int, int, Rows] | None:
        """(0-based rank of the first row, total, rows) around a player; None: no entry."""
        pk = own_keys(ref, shards, player_id)
        [reply] = await self.run([(ENTRY, (pk.public,), (player_id,))])
        if len(reply) == 1:
            return None
        composite, achieved = _number(reply[1]), int(reply[3])
        member = codec.member(player_id, achieved)
        calls: list[Call] = [
            (AHEAD, (k.public,), (span, span + 1, composite, member))
            for k in shard_refs(ref, shards)
        ]
        replies = await self.run(calls)
        total = sum(int(r[0]) for r in replies)
        rank0 = sum(int(r[1][0]) for r in replies)
        merged = merge([_rows(r[3]) for r in replies])
        mine = next(i for i, row in enumerate(merged) if row[0] == player_id)
        first = max(0, mine - span)
        return rank0 - (mine - first), total, merged[first : mine + span + 1]

    @_reachable
    async def group(
        self, ref: PeriodRef, shards: int, player_ids: Sequence[str]
    ) -> tuple[list[tuple[int, int, int] | None], list[str | None]]:
        """Each player's (composite, 0-based rank, exact ms or 0) or None, and their names."""
        by_shard: dict[int, list[int]] = {}
        for i, player_id in enumerate(player_ids):
            by_shard.setdefault(keys.shard_name(player_id, shards), []).append(i)
        calls: list[Call] = []
        for shard, indexes in by_shard.items():
            pk = keys.period_keys(*ref, shard)
            calls.append((FRIENDS, (pk.public,), tuple(player_ids[i] for i in indexes)))
        raw = await self.run(calls, [("HMGET", (keys.NAMES, *player_ids))])
        found: list[tuple[int, int] | None] = [None] * len(player_ids)
        for indexes, flat in zip(by_shard.values(), raw[:-1], strict=True):
            for j, i in enumerate(indexes):
                if flat[3 * j] is not None:
                    found[i] = (_number(flat[3 * j]), int(flat[3 * j + 2]))
        pairs = [(f[0], codec.member(player_ids[i], f[1])) for i, f in enumerate(found) if f]
        aheads = iter((await self._aheads(ref, shards, pairs))[0] if pairs else [])
        standings = [None if f is None else (f[0], next(aheads), f[1]) for f in found]
        return standings, [None if n is None else _text(n) for n in raw[-1]]

    @_reachable
    async def own(self, ref: PeriodRef, shards: int, player_id: str) -> tuple[Own, int]:
        """A player's own view: their shard's answer (side, composite, the rank they would
        take there), plus the entries ahead of them on every other shard."""
        pk = own_keys(ref, shards, player_id)
        call: Call = (OWN_ENTRY, (pk.public, pk.shadow, pk.pending), (player_id,))
        [reply] = await self.run([call])
        if int(reply[0]) == -1:
            return None, await self.total(ref, shards)
        side, _, composite, rank, achieved = reply
        others = [k for k in shard_refs(ref, shards) if k.shard != pk.shard]
        member = codec.member(player_id, int(achieved))
        flat: tuple[str | int, ...] = (0, 0, _number(composite), member)
        replies = await self.run([(AHEAD, (k.public,), flat) for k in others])
        rank = int(rank) + sum(int(r[1][0]) for r in replies)
        total = int(reply[1]) + sum(int(r[0]) for r in replies)
        return (_SIDES[int(side)], _number(composite), rank, int(achieved)), total

    @_reachable
    async def count_from(self, ref: PeriodRef, shards: int, floor: int) -> tuple[int, int]:
        """(entries with a composite of at least ``floor``, total)."""
        pipe = self.redis.pipeline(transaction=False)
        for pk in shard_refs(ref, shards):
            pipe.zcount(pk.public, floor, "+inf")
            pipe.zcard(pk.public)
        counts = [int(n) for n in await pipe.execute()]
        return sum(counts[0::2]), sum(counts[1::2])

    @_reachable
    async def exists(self, ref: PeriodRef, shards: int) -> bool:
        # one EXISTS per key: on Redis Cluster a multi-key EXISTS must stay in one slot
        pipe = self.redis.pipeline(transaction=False)
        for pk in shard_refs(ref, shards):
            pipe.exists(pk.public)
        return any(await pipe.execute())

    async def pages(
        self, ref: PeriodRef, shards: int, size: int
    ) -> AsyncIterator[tuple[list[str], list[int], list[int]]]:
        """The whole period in the board's order, ``size`` entries at a time: (player ids,
        composites, exact ms). Each shard is read ``size`` at a time and merged, so memory
        stays at shards x size rows however large the period."""
        pks = shard_refs(ref, shards)
        buffers: list[Rows] = [[] for _ in pks]
        next_at = [0] * len(pks)
        done = [False] * len(pks)

        async def refill() -> None:
            want = [k for k in range(len(pks)) if not buffers[k] and not done[k]]
            if not want:
                return
            calls: list[Call] = [
                (TOP, (pks[k].public,), (next_at[k], next_at[k] + size - 1)) for k in want
            ]
            for k, reply in zip(want, await self.run(calls), strict=True):
                rows = _rows(reply[1])
                buffers[k] = rows[::-1]  # popped from the end: best last
                next_at[k] += len(rows)
                done[k] = len(rows) < size

        out: Rows = []
        while True:
            await refill()
            live = [k for k in range(len(pks)) if buffers[k]]
            if not live:
                break
            # emit while every shard still has a row buffered (or is exhausted)
            while all(buffers[k] or done[k] for k in range(len(pks))):
                best = max(
                    (k for k in range(len(pks)) if buffers[k]),
                    default=None,
                    key=lambda k: order_key(buffers[k][-1]),
                )
                if best is None:
                    break
                out.append(buffers[best].pop())
                if len(out) == size:
                    yield [r[0] for r in out], [r[1] for r in out], [r[2] for r in out]
                    out = []
        if out:
            yield [r[0] for r in out], [r[1] for r in out], [r[2] for r in out]
