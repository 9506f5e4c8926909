"""A large period rebuilt by several streams at once: PostgreSQL read by parallel queries,
Redis written on parallel connections (one per stream and node).

The period is cut into composite ranges of about equal size (rebuild_slices.composite_slices,
from a page sample), one stream each, every stream on a PostgreSQL connection of its own.
The phases keep the staged rebuild's protocol (stores/redis/staging.py: load_period, the
swap) exactly:

1. entries: every stream loads its range's pages into the staging keys (each shard's, or
   the one of an unsharded period), emptied once before any stream starts;
2. the restoring flags are set on every shard, then every stream writes its range's exact
   times into the live hashes (a flagged period refuses writes until its swap);
3. each shard is finished as the one-stream path finishes it (bans moved to :shadow, held
   runs, a sum board's counted runs, the histogram) and swapped in: load_period with
   ``staged``, the shards in parallel.

The apply lock is held by the caller's transaction throughout, so no consumer batch
commits meanwhile: the streams' own READ COMMITTED connections see the same rows the
caller's would (the one-stream path reads each page in a statement of its own too).

Redis executes commands one at a time, so on one node the gain is the overlap of
PostgreSQL's formatting (the larger cost), the client and Redis; on a Redis Cluster a
sharded period's streams write to every primary together.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from rankd.periods import PeriodRef
from rankd.stores.postgres import Conn, own_connections
from rankd.stores.rebuild import slices as rebuild_slices
from rankd.stores.redis import keys
from rankd.stores.redis.bulk import Loader
from rankd.stores.redis.staging import Loads

Progress = Callable[[int], None]
PageReader = Callable[[], AsyncIterator[tuple[int, bytes]]]


async def load_period(
    loads: Loads,
    pg_url: str,
    conn: Conn,
    ref: PeriodRef,
    shards: int,
    streams: int,
    start_ms: int,
    progress: Progress | None,
    *,
    shadowed: Sequence[str],
    held: Sequence[tuple[str, int, int]],
    counted_runs: Callable[[tuple[int, int]], PageReader | None],
) -> int:
    """Load the period ``ref`` (``shards`` > 1: a sharded one) with up to ``streams``
    parallel streams and swap it in; returns the entries loaded (as load_period does).
    ``counted_runs(shard)``: a sum board's counted run pages of a shard, else None."""
    every = keys.shard_keys(*ref, max(shards, 1))
    try:
        n = shards if shards > 1 else 0
        stagings = [keys.staging(pk.public) for pk in every]
        bounds = await rebuild_slices.composite_slices(conn, ref, streams)
        for staging in stagings:  # emptied once, before the streams load beside each other
            await loads.conn.nodes.for_key(staging).delete(staging)
        loaded = [0] * len(every)

        async with own_connections(pg_url, len(bounds)) as conns:

            async def entries(reader: Conn, slice_: tuple[int, int]) -> None:
                pages = rebuild_slices.slice_pages(reader, ref, n, slice_)
                counts = await Loader.sharded(
                    loads.conn.nodes.for_key, stagings, pages, progress, empty=False
                )
                for k, count in enumerate(counts):
                    loaded[k] += count

            await _all(entries(c, b) for c, b in zip(conns, bounds, strict=True))

            # from the first exact time written into the live hashes until each shard's swap,
            # the period's writing scripts refuse (stores/redis/leases.py)
            for pk in every:
                await loads.leases.take(pk.public)

            async def times(reader: Conn, slice_: tuple[int, int]) -> None:
                async def groups() -> AsyncIterator[tuple[str, int, bytes]]:
                    async for shard, bucket, fields, arguments in rebuild_slices.slice_time_groups(
                        reader, ref, n, slice_
                    ):
                        yield f"{every[shard].public}:at:{bucket}", fields, arguments

                async with reader.transaction():  # the named cursor needs one
                    await Loader.hashes(loads.conn.nodes.for_key, groups())

            await _all(times(c, b) for c, b in zip(conns, bounds, strict=True))

        async def finish(k: int) -> int:
            shard = (k, n)

            def mine(player: str) -> bool:
                return keys.shard_of(player, n) == (k if n else -1)

            return await loads.load_period(
                ref,
                _unused_pages,
                counted_runs(shard),
                _unused_times,
                start_ms,
                progress,
                shadowed=[p for p in shadowed if mine(p)],
                held=[h for h in held if mine(h[0])],
                shard=every[k].shard,
                staged=loaded[k],
            )

        limit = asyncio.Semaphore(max(1, streams))

        async def finish_one(k: int) -> int:
            async with limit:
                return await finish(k)

        return sum(await _all(finish_one(k) for k in range(len(every))))

    except BaseException:
        # failed or stopped: the leases not swapped yet go now (their torn marks stay)
        await loads.leases.abandon([pk.public for pk in every])
        raise


async def _all(calls: Any) -> list[Any]:
    """Run the coroutines together; the first failure cancels the others and is raised."""
    tasks = [asyncio.ensure_future(c) for c in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _unused_pages() -> AsyncIterator[tuple[int, bytes]]:
    raise AssertionError("staged: the entries are loaded already")


def _unused_times(_members: int) -> AsyncIterator[tuple[int, int, bytes]]:
    raise AssertionError("staged: the exact times are loaded already")
