"""Rebuild loads: PostgreSQL's standings loaded beside the live keys, then swapped in at once.

Big periods stream through bulk.py's bulk ZADDs into a staging key; many small ones go in
one round trip of load_period.lua calls; sharded ones are staged in one pass over the period.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial

from redis.asyncio import Redis
from redis.exceptions import WatchError

from rankd import codec
from rankd.errors import Unavailable
from rankd.periods import PeriodRef
from rankd.stores.redis import keys
from rankd.stores.redis.bulk import Loader, Progress, SmallPeriod, bulk, command, run_commands
from rankd.stores.redis.common import Shards
from rankd.stores.redis.connection import NodeClients, RedisConn, reachable
from rankd.stores.redis.leases import Leases
from rankd.stores.redis.scripts import (
    HIST_REBUILD,
    LOAD_PERIOD,
    MOVE_ENTRIES,
    Command,
    retry_noscript,
)

# a swap whose WATCH the lease's own renewal tripped is tried again this often (see swap)
SWAP_TRIES = 3


class Loads:
    """A rebuild's bulk loads and swaps."""

    def __init__(self, conn: RedisConn, shards: Shards) -> None:
        self.conn = conn
        self.shards = shards
        # the periods whose writes this process's rebuilds hold off (stores/redis/leases.py)
        self.leases = Leases(conn.nodes)

    async def load_period(
        self,
        ref: PeriodRef,
        entries: Callable[[], AsyncIterator[tuple[int, bytes]]],
        counted_runs: Callable[[], AsyncIterator[tuple[int, bytes]]] | None,
        times: Callable[[int], AsyncIterator[tuple[int, int, bytes]]],
        start_ms: int,
        progress: Progress | None = None,
        *,
        shadowed: Sequence[str] = (),
        held: Sequence[tuple[str, int, int]] = (),
        shard: int = -1,
        staged: int | None = None,
    ) -> int:
        """Load a period's entries (and a sum board's counted runs) beside the live keys,
        then swap them in at once; returns the entries loaded. The entries' exact times go
        straight into their hashes before the swap (a field per member: nothing half-done
        shows), under the period's restoring flag: its writes are refused from then until
        the swap (see swap); ``times`` takes the number of entries, to pick how to read them.

        Pages are (members, ZADD arguments in RESP with chr(1) for CR LF), as
        stores/standings.py formats them in PostgreSQL; times come grouped per hash bucket.
        ``shadowed``: banned players, whose entries go to the :shadow key instead (moved out
        of the staged board before the swap, so no reader sees them); ``held``: the
        :pending key's entries, (player, composite, exact ms) of runs held for review.
        ``shard``: which shard of a sharded period this loads (its entries alone);
        ``staged``: its entries and times are in place already (stage_shards loaded them,
        this many), so only the rest and the swap are left.
        """
        pk = keys.period_keys(*ref, shard)

        async def time_groups(members: int) -> AsyncIterator[tuple[str, int, bytes]]:
            async for bucket, fields, arguments in times(members):
                yield f"{pk.public}:at:{bucket}", fields, arguments

        try:
            with reachable():
                staging = keys.staging(pk.public)
                node = self.conn.nodes.for_key(pk.public)  # every key here shares the shard's tag
                flag = keys.restoring(pk.public)
                if staged is None:
                    loaded = {pk.public: await Loader.run(node, staging, entries(), progress)}
                    # from the first time written into the live hashes until the swap, the
                    # period's writing scripts refuse (see swap)
                    await self.leases.take(pk.public)
                    await Loader.hashes(node, time_groups(loaded[pk.public]))
                else:
                    loaded = {pk.public: staged}  # stage_shards took the lease
                for i in range(0, len(shadowed), 1000):
                    chunk = shadowed[i : i + 1000]
                    call = (MOVE_ENTRIES, (pk.shadow, staging, pk.public), ("replace", "", "", ""))
                    [moved] = await self.conn.run([(call[0], call[1], (*call[2], *chunk))])
                    loaded[pk.public] -= int(moved)
                if counted_runs is not None:
                    loaded[pk.runs] = await Loader.run(
                        node, keys.staging(pk.runs), counted_runs(), None
                    )
                # the marks go with the board they were made on: runs applied to the replaced key
                # are applied again by the log consumer
                pending: list[Command] = [("DEL", (pk.pending, pk.applied))]
                if shard >= 0:  # a shard's histogram, counted from the key swapped in
                    # EVAL, not EVALSHA: a Redis that lost its scripts would fail it inside
                    # the MULTI, after the rename; a rebuild sends it once a shard
                    source = HIST_REBUILD.source
                    pending.append(("EVAL", (source, 2, pk.public, pk.hist)))
                for player, composite, achieved_ms in held:
                    pending.append(
                        ("ZADD", (pk.pending, composite, codec.member(player, achieved_ms)))
                    )
                    pending.append(
                        ("HSET", (keys.times(pk.public, player), f"{player}~p", achieved_ms))
                    )
                await swap(self.conn.nodes, pk.public, loaded, pending, restoring=flag)
                self.leases.swapped(pk.public)
                await self.conn.client.zadd(
                    keys.periods_index(ref[0], ref[1]), {ref[2]: start_ms}, nx=True
                )
                return loaded[pk.public] + len(held)
        except BaseException:
            # failed, or stopped (Ctrl-C): the lease goes now, the torn mark stays
            await self.leases.abandon([pk.public])
            raise

    async def is_torn(self, public: str) -> bool:
        """Whether the period of ``public`` carries the torn mark of a rebuild that died
        midway (stores/redis/leases.py)."""
        with reachable():
            return bool(await self.conn.client.exists(keys.torn(public)))

    async def stage_shards(
        self,
        ref: PeriodRef,
        shards: int,
        pages: AsyncIterator[list[tuple[int, int, bytes]]],
        times: AsyncIterator[tuple[int, int, int, bytes]],
        progress: Progress | None = None,
    ) -> list[int]:
        """A sharded period's entries into every shard's staging key and their exact times
        into the shards' hashes, in one pass over the period (see standings.sharded_pages);
        load_period(..., shard=k, staged=n) then finishes each shard. Returns the members
        staged per shard."""
        every = keys.shard_keys(*ref, shards)

        async def groups() -> AsyncIterator[tuple[str, int, bytes]]:
            async for shard, bucket, fields, arguments in times:
                yield f"{every[shard].public}:at:{bucket}", fields, arguments

        stagings = [keys.staging(pk.public) for pk in every]
        try:
            with reachable():
                # on Redis Cluster the shards live on different nodes: each key's writes go
                # on a connection to the node that owns it
                loaded = await Loader.sharded(self.conn.nodes.for_key, stagings, pages, progress)
                for pk in every:  # each shard's writes refused until its swap (see swap)
                    await self.leases.take(pk.public)
                await Loader.hashes(self.conn.nodes.for_key, groups())
        except BaseException:
            await self.leases.abandon([pk.public for pk in every])
            raise
        return loaded

    async def load_small_periods(self, periods: Sequence[SmallPeriod]) -> int:
        """Load many small periods (no bans, no held runs, not a sum board: see
        services/rebuild/) in one round trip: one load_period script call each (atomic:
        readers never see half of a period), then the periods indexes. Returns the entries
        loaded."""
        # one batch of commands per node: on a cluster each goes to the node owning its
        # key's slot (a standalone or Sentinel Redis is one node)
        by_node: dict[int, tuple[Redis, list[bytes]]] = {}

        def batch_for(key: str) -> list[bytes]:
            node = self.conn.nodes.for_key(key)
            return by_node.setdefault(id(node), (node, []))[1]

        indexed: dict[tuple[str, str], list[bytes]] = {}
        sha = LOAD_PERIOD.sha.encode()
        for small in periods:
            pk = keys.period_keys(*small.ref)
            commands = batch_for(pk.public)
            head = (b"EVALSHA", sha, b"3", pk.public.encode(), pk.pending.encode(),
                    pk.applied.encode(), b"%d" % small.members)  # fmt: skip
            parts = [bulk(h) for h in head]
            parts.append(small.entries.replace(b"\x01", b"\r\n"))
            size = len(head) + 2 * small.members
            for bucket, fields, arguments in small.times:
                parts += [bulk(b"%d" % bucket), bulk(b"%d" % fields)]
                parts.append(arguments.replace(b"\x01", b"\r\n"))
                size += 2 + 2 * fields
            commands.append(b"*%d\r\n%b" % (size, b"".join(parts)))
            index = indexed.setdefault((small.ref[0], small.ref[1]), [])
            index += [b"%d" % small.start_ms, small.ref[2].encode()]
        for (board, window), members in indexed.items():
            index_key = keys.periods_index(board, window)
            batch_for(index_key).append(command(b"ZADD", index_key.encode(), b"NX", *members))
        with reachable():
            for node, commands in by_node.values():
                # Redis may have lost its scripts (restarted): loaded, then sent again
                await retry_noscript(self.conn.client, partial(run_commands, node, commands))
        return sum(small.members for small in periods)

    async def missing_periods(self, refs: Sequence[PeriodRef]) -> set[PeriodRef]:
        """Which of ``refs`` have no board key (on no shard), asked in pipelined chunks (one
        round trip per 1,000 periods, not one each)."""
        missing: set[PeriodRef] = set()
        for i in range(0, len(refs), 1000):
            chunk = refs[i : i + 1000]
            spans = [self.shards.every(ref) for ref in chunk]
            with reachable():
                async with self.conn.client.pipeline(transaction=False) as pipe:
                    for every in spans:
                        for pk in every:
                            pipe.exists(pk.public)
                    found = iter(await pipe.execute())
            for ref, every in zip(chunk, spans, strict=True):
                if not any([next(found) for _ in every]):
                    missing.add(ref)
        return missing


async def swap(
    nodes: NodeClients,
    tagged: str,
    staged: dict[str, int],
    also: Sequence[Command] = (),
    *,
    restoring: str | None = None,
) -> None:
    """Put every staged key in place in one MULTI/EXEC: a sum board's total and its
    counted runs must change together, or a submit landing between them would be
    counted in one and lost from the other. They share ``tagged``'s hash tag, so the
    transaction runs on the one node that holds them.

    ``restoring``: the period's lease (keys.restoring, stores/redis/leases.py), taken
    before PostgreSQL's exact times went into the live hashes. While it is held the writing
    scripts refuse (lua/lib.lua refuse_while_restoring), so no submit or applied run can
    point a player's time at a member the staged key does not hold (the next write would
    then add a second member for the player). It is removed in this transaction with the
    torn mark; if it lapsed (or changed) first, nothing is swapped (WATCH) and the rebuild
    fails: the torn mark stays, and the period is rebuilt again."""
    for attempt in range(1, SWAP_TRIES + 1):
        pipe = nodes.for_key(tagged).pipeline(transaction=True)
        if restoring is not None:
            await pipe.watch(restoring)
            if not await pipe.exists(restoring):
                await pipe.reset()  # type: ignore[no-untyped-call]
                raise Unavailable("the period's rebuild outlasted its restoring lease; retry")
            pipe.multi()  # type: ignore[no-untyped-call]
        for live, loaded in staged.items():
            if loaded == 0:
                pipe.delete(live, keys.staging(live))
                continue
            pipe.rename(keys.staging(live), live)
        for name, args in also:  # e.g. the :pending key, put in place with the board
            pipe.execute_command(name, *args)
        if restoring is not None:
            pipe.delete(restoring, keys.torn(tagged))
        try:
            await pipe.execute()
            return
        except WatchError:
            # the lease's renewal (a PEXPIRE) touched the WATCHed key: the torn mark kept
            # the period's writes refused all along, so the swap is tried again
            if attempt == SWAP_TRIES:
                raise
