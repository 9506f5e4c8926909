"""Periods whose rebuild died midway, rebuilt again without a person.

A rebuild that dies between its first exact time and its swap (kill -9, Ctrl-C, Redis
lost under it) leaves the period's torn mark (stores/redis/leases.py): once its lease has
lapsed, the writing scripts refuse with TORN. Whoever meets that (the submit path, the log
consumer) asks here, and this process rebuilds the period from PostgreSQL, which removes
the mark in its swap. One repair per period at a time; a repair that fails is tried again
after a pause, a few times, then left to the next TORN to ask again.

Bounded: at most MAX_REPAIRS periods waiting or in repair; past that a warning says to
run `rankd rebuild`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from rankd.aio import stop_tasks
from rankd.errors import PeriodBusy
from rankd.stores.redis import keys

logger = logging.getLogger("rankd.rebuild")

MAX_REPAIRS = 64
# a write refused by a rebuild's lease keeps /readyz saying so this long
BUSY_SEEN_S = 5.0
# a period a repair could not mend is not asked again for this long
GIVE_UP_S = 60.0
PAUSES_S = (0.5, 1.0, 2.0, 5.0, 10.0)


def busy_in(exc: BaseException | None) -> PeriodBusy | None:
    """The PeriodBusy at the root of ``exc``'s chain of causes, if one is there (a submit
    wraps it in "the run was logged but the boards are unreachable")."""
    depth = 0
    while exc is not None and depth < 8:
        if isinstance(exc, PeriodBusy):
            return exc
        exc, depth = exc.__cause__, depth + 1
    return None


class Repairs:
    def __init__(
        self,
        rebuild: Callable[[str, str, str], Awaitable[object]],
        still_torn: Callable[[str], Awaitable[bool]],
    ) -> None:
        """``rebuild(board, window, period)``: a rebuild from PostgreSQL of that period
        (every segment and shard); ``still_torn(key)``: whether the period's torn mark is
        still set (another instance may have repaired it meanwhile)."""
        self._rebuild = rebuild
        self._still_torn = still_torn
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._since: dict[str, float] = {}
        # periods whose writes met a rebuild's lease, and when last (at most MAX_REPAIRS)
        self._seen: dict[str, float] = {}
        # periods a repair could not mend, and when it gave up (at most MAX_REPAIRS): not
        # asked again for GIVE_UP_S, so a write that keeps meeting one does not keep taking
        # the exclusive apply lock
        self._gave_up: dict[str, float] = {}
        self._closed = False

    def ask(self, exc: BaseException | None) -> None:
        """Repair the period ``exc`` (or a cause of it) says is torn; note one a rebuild
        holds (for /readyz); anything else: no-op."""
        busy = busy_in(exc)
        if busy is None:
            return
        if not busy.torn:
            self._seen.pop(busy.key, None)
            self._seen[busy.key] = time.monotonic()
            while len(self._seen) > MAX_REPAIRS:  # the oldest sighting goes
                del self._seen[next(iter(self._seen))]
            return
        period = keys.period_of(busy.key)
        if self._closed or period is None or period in {keys.period_of(k) for k in self._tasks}:
            return
        if time.monotonic() - self._gave_up.get(busy.key, -GIVE_UP_S) < GIVE_UP_S:
            return
        if len(self._tasks) >= MAX_REPAIRS:
            logger.warning("too many torn periods to repair at once; run `rankd rebuild`")
            return
        self._since[busy.key] = time.monotonic()
        task = asyncio.create_task(self._repair(busy.key, *period), name="torn-period-repair")
        self._tasks[busy.key] = task
        task.add_done_callback(lambda _: self._forget(busy.key))

    def _forget(self, key: str) -> None:
        self._tasks.pop(key, None)
        self._since.pop(key, None)

    def describe(self) -> list[str]:
        """For /readyz: the periods being repaired now, and for how long."""
        now = time.monotonic()
        said = [
            f"board {period[0]!r}, {period[1]} {period[2]}: rebuilding after an interrupted"
            f" rebuild ({now - since:.0f}s); its writes answer 503 until then"
            for key, since in sorted(self._since.items())
            if (period := keys.period_of(key)) is not None
        ]
        said += [
            f"board {period[0]!r}, {period[1]} {period[2]}: a rebuild is putting it back;"
            " its writes answer 503 until then"
            for key, at in sorted(self._seen.items())
            if now - at < BUSY_SEEN_S
            and key not in self._since
            and (period := keys.period_of(key)) is not None
        ]
        return said

    async def _repair(self, key: str, board: str, window: str, period: str) -> None:
        for pause in (0.0, *PAUSES_S):
            await asyncio.sleep(pause)
            try:
                if not await self._still_torn(key):
                    return
                logger.warning(
                    "board %r, %s %s: a rebuild stopped midway; rebuilding it",
                    board,
                    window,
                    period,
                )
                await self._rebuild(board, window, period)
                if not await self._still_torn(key):
                    logger.warning("board %r, %s %s: repaired", board, window, period)
                    return
                # rebuilt, yet torn: the rebuild did not load this period (archived, past
                # its retention, or gone from PostgreSQL); trying again changes nothing
                break
            except Exception as exc:
                logger.warning("repair of board %r, %s %s: %r", board, window, period, exc)
        self._gave_up[key] = time.monotonic()
        while len(self._gave_up) > MAX_REPAIRS:
            del self._gave_up[next(iter(self._gave_up))]
        logger.error(
            "board %r, %s %s: not repaired; its writes answer 503 until `rankd rebuild"
            " --board %s` mends it (asked again in %.0f s)",
            board, window, period, board, GIVE_UP_S,
        )  # fmt: skip

    async def close(self) -> None:
        self._closed = True  # nothing new starts while the service stops
        await stop_tasks(list(self._tasks.values()), 5.0)
