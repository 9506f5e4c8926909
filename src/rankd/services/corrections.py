"""An admin's corrections (CONTRACT v1.3, period control): removing one player's entry from
one board period (``DELETE /v1/boards/{board}/entries/{player}?window&period``), durably,
and closing an open period early (``POST .../periods/{period}/close?window``).

Closing. The close is recorded with a time a settle after now (every instance's cached
config has it by then: it is loaded with the board's config, stores/postgres.py), and the
call answers once that time has come. From it on a run received counts as closed there on
every path (plan.py asks the config), reads and the period list say closed, and the season
job freezes and archives the period as if it had ended (seasons.py); replays decide by the
same time. A period closed again keeps its first time.

The removal is recorded with its time; from then on the runs of that player that ended at
or before it do not count in that period on any path: the submit path and the log
consumer plan them ``closed`` there (every instance keeps a copy of the removals beside its
bans, services/moderation.py BanList), replays do the same, and a rebuild finds nothing in
PostgreSQL. Runs that end later count again, as a new entry.

The durable copy loses the entry (every segment's), its counted runs, its runs waiting for
review and its archived rows in one transaction holding the apply lock exclusively (no
consumer batch is half applied meanwhile; each batch checks its copy of the removals is
current before it writes, services/applier.py). Redis loses the entry on every side at
once, and again once every instance has surely refreshed its copy (``settle_s``): a
submit another instance planned before it knew of the removal is removed too, unless the
durable copy holds the entry again (a later run).
"""

from __future__ import annotations

import asyncio
import logging
import time

from rankd.aio import keep_task, stop_tasks
from rankd.errors import InvalidRequest, PlayerNotRanked, Unavailable
from rankd.formats import clip
from rankd.periods import ENDLESS, PeriodError, PeriodRef
from rankd.services.moderation import CATCH_UP_S, Moderation
from rankd.services.registry import BoardRegistry
from rankd.services.seasons import SEASON_LOCK
from rankd.stores import corrections as db
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.stores import RedisStores

logger = logging.getLogger("rankd.corrections")

MAX_LATER_TASKS = 64  # second sweeps waiting per process; beyond it one runs at once
MAX_CLOSES = 1000  # early-closed periods a board keeps (each rides in its cached config)
LOCK_WAIT_S = 10.0  # how long a removal waits for a season pass or a rebuild to finish


class Corrections:
    def __init__(
        self,
        redis: RedisStores,
        pg: PostgresStore,
        boards: BoardRegistry,
        moderation: Moderation,
        *,
        settle_s: float,
    ) -> None:
        self.redis = redis
        self.pg = pg
        self.boards = boards
        self.moderation = moderation
        self.settle_s = settle_s
        # a close takes effect this long after the call: each instance's config cache has
        # reloaded by then (the registry's TTL and a second; the deletion's settle time)
        self.close_in_ms = int(settle_s * 1000)
        self._later: set[asyncio.Task[None]] = set()

    async def close(self) -> list[str]:
        return await stop_tasks(list(self._later), 1.0)

    async def close_period(self, board_id: str, window: str | None, period: str) -> int:
        """Close the board's open ``period`` of ``window`` (the board's first window when not
        named) now; returns when runs are closed there (ms). Closing it again is harmless."""
        config = await self.boards.reload(board_id)
        window = config.default_window if window is None else window
        if window not in config.windows:
            raise InvalidRequest(
                f"window must be one of this board's windows: {', '.join(config.windows)}"
            )
        if window in ENDLESS:
            raise InvalidRequest(f"the {window} window never closes; close a period of another")
        try:
            chosen = config.period_of(window, period)
        except PeriodError as exc:
            raise InvalidRequest(str(exc)) from exc
        already = config.closes.get((window, chosen.id))
        now_ms = int(time.time() * 1000)
        if already is None:
            if chosen.start_ms > now_ms:
                raise InvalidRequest(f"{window} period {chosen.id} has not started yet")
            if config.period_status(chosen, now_ms) == "closed":
                raise InvalidRequest(f"{window} period {chosen.id} is closed already")
            if len(config.closes) >= MAX_CLOSES:
                raise InvalidRequest(
                    f"board {clip(board_id)!r} has {MAX_CLOSES} early-closed periods, the most "
                    "it keeps"
                )
            async with self.pg.connection() as conn:
                await db.close_period(conn, board_id, window, chosen.id, now_ms + self.close_in_ms)
            config = await self.boards.reload(board_id)
        closes = config.closes_at_ms(chosen)
        assert closes is not None
        # answered once it is closed everywhere: every instance's config has it by then
        await asyncio.sleep(max(0.0, closes - time.time() * 1000) / 1000)
        self.moderation.invalidations.publish()
        return closes

    async def remove_entry(
        self, board_id: str, player_id: str, window: str | None, period: str | None
    ) -> tuple[str, str]:
        """Remove the player's entry from the board's period (the default window's current
        one when not named); returns (window, period). PlayerNotRanked when the player has
        no entry there."""
        config = await self.boards.get(board_id)
        window = config.default_window if window is None else window
        if window not in config.windows:
            raise InvalidRequest(
                f"window must be one of this board's windows: {', '.join(config.windows)}"
            )
        now_ms = int(time.time() * 1000)
        try:
            if period is None:
                chosen = config.current_period(window, now_ms)
            else:
                chosen = config.period_of(window, period)
        except PeriodError as exc:
            raise InvalidRequest(str(exc)) from exc
        key = (board_id, window, chosen.id, player_id)
        # every run received before now is in the durable copy first, so what it holds is
        # the whole entry (and a run still on its way is planned with the removal in force)
        if not await self.moderation.caught_up(now_ms, CATCH_UP_S):
            raise Unavailable(
                "the log consumer is behind, so the entry could not be removed whole yet; "
                "nothing was changed, retry shortly"
            )
        async with self.pg.lease(SEASON_LOCK, wait_s=LOCK_WAIT_S) as lease:
            if lease is None:
                raise Unavailable("a season pass is archiving periods right now; retry shortly")
            async with self.pg.apply_lock(exclusive=True, lock_timeout_s=LOCK_WAIT_S) as conn:
                if not await db.has_entry(conn, key):
                    raise PlayerNotRanked(
                        f"player {clip(player_id)!r} has no entry in {window} period "
                        f"{chosen.id} of board {clip(board_id)!r}"
                    )
                refs = await db.remove_entry(conn, key, now_ms, config.generation)
        await self.moderation.bans.refresh()  # this instance's copy has it at once
        refs |= await self._live_refs(config.segments, key)
        await self.redis.moves.drop_entries(sorted(refs), [player_id])
        work = self._sweep_later(key, refs)
        if len(self._later) >= MAX_LATER_TASKS:
            await work
        else:
            keep_task(self._later, work, name=f"remove-entry-{board_id}-{player_id}")
        self.moderation.invalidations.publish()
        return window, chosen.id

    async def _live_refs(self, dimensions: tuple[str, ...], key: db.RemovalKey) -> set[PeriodRef]:
        """The period's global standings, and its segments the player's profile names (a
        run the durable copy has not listed may have put the entry there)."""
        board_id, window, period, player_id = key
        [profile] = await self.moderation.profiles.profile_segments([player_id])
        segments = ["", *(f"{d}:{v}" for d, v in profile.items() if d in dimensions)]
        return {PeriodRef(board_id, window, period, segment) for segment in segments}

    async def _sweep_later(self, key: db.RemovalKey, refs: set[PeriodRef]) -> None:
        """Once every instance has surely refreshed: drop what a run planned without the
        removal wrote meanwhile, unless the durable copy holds the entry again."""
        try:
            await asyncio.sleep(self.settle_s)
            await self.moderation.caught_up(int(time.time() * 1000), CATCH_UP_S)
            # under the apply lock (no timeout), as the erasure's second sweep says why
            async with self.pg.apply_lock(exclusive=True) as conn:
                if await db.has_entry(conn, key):
                    return  # a later run's entry: it stands
                await self.redis.moves.drop_entries(sorted(refs), [key[3]])
            self.moderation.invalidations.publish()
        except Exception as exc:
            logger.warning("second sweep of removed %s: %s: %s", key, type(exc).__name__, exc)
