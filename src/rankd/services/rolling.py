"""The rolling-7d window's day changes: when a day leaves the window, the entries it held
leave with it.

The window's one period (``current``) only rises between day changes: every run counted
is a max, in Redis by the submit scripts, in PostgreSQL by the consumer, which also keeps
each player's best per day (stores/rolling.py). When a day turns seven days old, the
season job's pass (services/seasons.py, one instance at a time) calls ``roll``:

1. holding the apply lock exclusively, PostgreSQL drops that day's rows and replaces each
   entry that came from it by the player's best of the days still held (or none);
2. if any entry changed, Redis's copy of the period is rebuilt from PostgreSQL by the
   usual staged rebuild (services/rebuild/: runs logged meanwhile land after its swap);
3. the day is recorded as rolled in both stores, so a pass that died between 1 and 3 is
   finished by the next.

A run received before the change but applied after it (the consumer behind), or brought
back by a replay, brings its old day back into ``rolling_days``; the next pass sees it and
rolls again. Between midnight UTC and the pass (the season job's interval) plus the
rebuild, reads still show the day that left. What it costs is in docs/windows.md.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from rankd.boards import BoardConfig
from rankd.periods import ROLLING, ROLLING_PERIOD_ID, rolling_first_day
from rankd.services.rebuild import Rebuilder
from rankd.stores import rolling
from rankd.stores.postgres import PostgresStore

logger = logging.getLogger("rankd.rolling")


@dataclass(frozen=True, slots=True)
class Rolled:
    first_day: int  # the oldest day the window holds now (days since 1970-01-01)
    changed: int  # entries replaced or removed in the durable copy
    rebuilt: bool  # whether Redis's copy was rebuilt


async def roll(
    pg: PostgresStore, rebuilder: Rebuilder, board: BoardConfig, now_ms: int
) -> Rolled | None:
    """Bring ``board``'s rolling period to the window at ``now_ms``; None if it was."""
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
        changed = await rolling.roll(conn, board.board_id, first)
        rebuild = changed > 0 or state.redis_day < state.pg_day  # a pass died before it
        await rolling.record(conn, board.board_id, pg_day=first, redis_day=-1 if rebuild else first)
    if rebuild:
        await rebuilder.rebuild(board.board_id, ROLLING, ROLLING_PERIOD_ID, fresh_config=board)
        async with pg.connection() as conn:
            await rolling.record(conn, board.board_id, pg_day=first, redis_day=first)
        logger.info(
            "%s: rolling-7d now from day %d: %d entries replaced or removed",
            board.board_id,
            first,
            changed,
        )
    return Rolled(first, changed, rebuild)


def _current(state: rolling.RollState, first_day: int) -> bool:
    """Whether both stores hold the window from ``first_day`` on, and nothing older."""
    return not state.stale and state.pg_day >= first_day and state.redis_day >= state.pg_day
