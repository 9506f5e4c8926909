"""The rolling-7d window's day changes: when a day leaves the window, the entries it held
leave with it.

The window's one period (``current``) only rises between day changes: every run counted
is a max, in Redis by the submit scripts, in PostgreSQL by the consumer, which also keeps
each player's best per day (stores/rolling.py). When a day turns seven days old, the
season job's pass (services/seasons.py, one instance at a time) calls ``roll``:

1. holding the apply lock exclusively, PostgreSQL drops that day's rows and replaces each
   entry that came from it by the player's best of the days still held (or none);
2. if any entry changed, the entries that left are taken off Redis's :shadow and :pending
   sides with their metadata, Redis's copy of the period is rebuilt from PostgreSQL by the
   usual staged rebuild (services/rebuild/: runs logged meanwhile land after its swap),
   the times of players left with no entry go, and every instance's live streams are told;
3. the day is recorded as rolled in both stores, so a pass that died between 1 and 3 is
   finished by the next.

A run received before the change but applied after it (the consumer behind), or brought
back by a replay, brings its old day back into ``rolling_days``; the next pass sees it and
rolls again. Between midnight UTC and the pass (the season job's interval) plus the
rebuild, reads still show the day that left. Both steps hold the apply lock, so the log
consumer waits meanwhile, for every board; what it costs is in docs/performance.md.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from rankd.boards import BoardConfig
from rankd.periods import ROLLING, ROLLING_PERIOD_ID, PeriodRef, rolling_first_day
from rankd.services.rebuild import Rebuilder
from rankd.stores import rolling
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.stores import RedisStores

logger = logging.getLogger("rankd.rolling")


@dataclass(frozen=True, slots=True)
class Rolled:
    first_day: int  # the oldest day the window holds now (days since 1970-01-01)
    changed: int  # entries replaced or removed in the durable copy
    rebuilt: bool  # whether Redis's copy was rebuilt


async def roll(
    pg: PostgresStore,
    redis: RedisStores,
    rebuilder: Rebuilder,
    board: BoardConfig,
    now_ms: int,
    announce: Callable[[], Awaitable[None]] | None = None,
) -> Rolled | None:
    """Bring ``board``'s rolling period to the window at ``now_ms``; None if it was.
    ``announce``: tells every instance's live streams to read again."""
    if ROLLING not in board.windows:
        return None
    first = rolling_first_day(now_ms)
    # asked first without the lock: the exclusive apply lock holds up every consumer batch,
    # and most passes find nothing to do
    async with pg.connection() as conn:
        if _current(await rolling.state(conn, board.board_id, first), first):
            return None
    async with pg.apply_lock(exclusive=True) as conn:
        state = await rolling.state(conn, board.board_id, first)
        if _current(state, first):
            return None
        done = await rolling.roll(conn, board.board_id, first)
        rebuild = bool(done.gone) or state.redis_day < state.pg_day  # a pass died before it
        await rolling.record(conn, board.board_id, pg_day=first, redis_day=-1 if rebuild else first)
    if rebuild:
        by_segment: dict[str, list[tuple[str, int]]] = {}
        for segment, player, ms in done.gone:
            by_segment.setdefault(segment, []).append((player, ms))
        refs = {s: PeriodRef(board.board_id, ROLLING, ROLLING_PERIOD_ID, s) for s in by_segment}
        # both layouts of a board being resharded (rankd/reshard.py), the served one first,
        # as stored now: a move may have begun or switched since the caller read the config
        board = await pg.get_board(board.board_id) or board
        for layout in filter(None, (board.shards, board.other_layout)):
            config = replace(board, shards=layout, reshard=None)
            for segment, gone in by_segment.items():
                await redis.rolling.forget_departed(refs[segment], gone, layout)
            # the old entries stay readable until the swap: nothing to mark as being restored
            await rebuilder.rebuild(
                board.board_id,
                ROLLING,
                ROLLING_PERIOD_ID,
                fresh_config=config,
                serve_meanwhile=True,
            )
            for segment, gone in by_segment.items():
                left = [p for p, _ in gone if (segment, p) not in done.kept]
                await redis.rolling.forget_times(refs[segment], left, layout)
        async with pg.connection() as conn:
            await rolling.record(conn, board.board_id, pg_day=first, redis_day=first)
        if announce is not None:
            await announce()
        logger.info(
            "%s: rolling-7d now from day %d: %d entries replaced or removed",
            board.board_id,
            first,
            len(done.gone),
        )
    return Rolled(first, len(done.gone), rebuild)


def _current(state: rolling.RollState, first_day: int) -> bool:
    """Whether both stores hold the window from ``first_day`` on, and nothing older."""
    return not state.stale and state.pg_day >= first_day and state.redis_day >= state.pg_day
