"""Many small periods rebuilt in batches: a query and a round trip per batch, not per
period, the next batch read from PostgreSQL while Redis loads this one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from rankd.boards import BoardConfig
from rankd.periods import PeriodRef
from rankd.stores.postgres import Conn
from rankd.stores.rebuild import small as rebuild_small
from rankd.stores.redis.bulk import SmallPeriod

# A period of at most SMALL_PERIOD entries is loaded in a batch with others: up to
# BATCH_PERIODS periods or BATCH_MEMBERS entries (about 1-2 MB of commands) a round trip.
SMALL_PERIOD = 2_000
BATCH_PERIODS = 1_000
BATCH_MEMBERS = 20_000


def is_small(
    config: BoardConfig,
    ref: PeriodRef,
    sizes: dict[PeriodRef, int],
    banned: dict[PeriodRef, list[str]],
    held: dict[PeriodRef, list[tuple[str, int, int]]],
) -> bool:
    """Whether ``ref`` goes in a batch of small periods: few entries, and nothing that
    needs the one-period path (a sum board's counted runs, banned or held entries)."""
    return (
        sizes.get(ref, 0) <= SMALL_PERIOD
        and config.policy_of(ref.window) != "sum"
        and config.shards == 1
        and not banned.get(ref)
        and not held.get(ref)
    )


class SmallBatches:
    """Small periods gathered into batches; ``load(found)`` loads one batch and returns
    its entries, ``landed(members)`` is told each batch's count once it is in Redis."""

    def __init__(
        self,
        conn: Conn,
        load: Callable[[list[SmallPeriod]], Coroutine[Any, Any, int]],
        landed: Callable[[int], None],
    ) -> None:
        self.conn = conn
        self._load = load
        self._landed = landed
        self._loading: asyncio.Task[int] | None = None
        self._batch: list[tuple[PeriodRef, int]] = []
        self._members = 0

    async def add(self, ref: PeriodRef, start_ms: int, members: int) -> None:
        self._batch.append((ref, start_ms))
        self._members += members
        if len(self._batch) >= BATCH_PERIODS or self._members >= BATCH_MEMBERS:
            await self.flush()

    async def flush(self) -> None:
        if not self._batch:
            return
        found = await rebuild_small.small_periods(self.conn, self._batch)  # while Redis loads
        await self._wait()
        self._loading = asyncio.create_task(self._load(found))
        self._batch, self._members = [], 0

    async def finish(self) -> None:
        await self.flush()
        await self._wait()

    async def cancel(self) -> None:
        """Stop a batch still loading (the rebuild failed or was stopped)."""
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
            await asyncio.gather(self._loading, return_exceptions=True)

    async def _wait(self) -> None:
        if self._loading is not None:
            members, self._loading = await self._loading, None
            self._landed(members)
