"""One large period rebuilt on one stream: a sharded one's entries staged for every shard
in one pass, then each shard (the only one of an unsharded period) loaded and swapped in
turn, with its banned and held entries and a sum board's counted runs."""

from __future__ import annotations

from collections.abc import Callable

from rankd.boards import BoardConfig
from rankd.periods import PeriodRef
from rankd.placement import shard_of
from rankd.plan import sum_horizon_ms
from rankd.stores.postgres import Conn
from rankd.stores.rebuild import pages as rebuild_pages
from rankd.stores.redis.keys import shard_keys
from rankd.stores.redis.staging import Loads

Progress = Callable[[int], None]


async def load(
    loads: Loads,
    conn: Conn,
    ref: PeriodRef,
    config: BoardConfig,
    start_ms: int,
    since: int | None,
    progress: Progress | None,
    banned: dict[PeriodRef, list[str]],
    held: dict[PeriodRef, list[tuple[str, int, int]]],
) -> int:
    """Load ``ref`` and swap it in; returns the entries loaded. ``since``: a sum board's
    counted runs from then on are restored too (None: not a sum board)."""
    n = config.shards if config.shards > 1 else 0
    staged: list[int | None] = [None]
    every = shard_keys(*ref, max(n, 1))
    if n:  # a sharded period: every shard's entries in one pass, then each shard
        staged = list(
            await loads.stage_shards(
                ref,
                n,
                rebuild_pages.sharded_pages(conn, ref, n),
                rebuild_pages.sharded_time_groups(conn, ref, n),
                progress,
            )
        )
    try:
        members = 0
        for k in range(max(n, 1)):
            shard = (k, n)

            def mine(player: str, shard: tuple[int, int] = shard) -> bool:
                return shard_of(player, shard[1]) == (shard[0] if shard[1] else -1)

            members += await loads.load_period(
                ref,
                rebuild_pages.entry_pages_of(conn, ref, shard),
                None
                if since is None
                else rebuild_pages.counted_run_pages_of(
                    conn, ref, since, sum_horizon_ms(config), shard
                ),
                rebuild_pages.time_groups_of(conn, ref, shard),
                start_ms,
                progress,
                shadowed=[p for p in banned.get(ref, ()) if mine(p)],
                held=[h for h in held.get(ref, ()) if mine(h[0])],
                shard=every[k].shard,
                staged=staged[k],
            )
        return members
    except BaseException:
        # a shard that failed gave up its own lease; the ones after it go too
        await loads.leases.abandon([pk.public for pk in every])
        raise
