"""Board configs: stored in PostgreSQL, served from a short-lived in-process cache."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout
from redis.asyncio import Redis

from rankd import keys
from rankd.boards import BoardConfig, apply_changes, changed_immutable
from rankd.errors import BoardImmutableField, BoardNotFound, Unavailable
from rankd.periods import WINDOWS
from rankd.stores.postgres import PostgresStore

# A request that must wait for a config waits this long at most for PostgreSQL.
LOAD_TIMEOUT_S = 2.0


class BoardRegistry:
    """Known boards are served from cache at once; an expired entry is refreshed by one
    background task, so PostgreSQL (down, or slow) never stalls a submit or a read."""

    def __init__(self, pg: PostgresStore, redis: Redis, ttl_s: float) -> None:
        self.pg = pg
        self.redis = redis
        self.ttl_s = ttl_s
        self._cache: dict[str, tuple[float, BoardConfig]] = {}
        self._refreshing: dict[str, asyncio.Task[None]] = {}

    async def get(self, board_id: str) -> BoardConfig:
        """The board's config; BoardNotFound if there is no such board."""
        hit = self._cache.get(board_id)
        if hit is not None:
            if time.monotonic() - hit[0] >= self.ttl_s and board_id not in self._refreshing:
                task = asyncio.create_task(self._refresh(board_id))
                self._refreshing[board_id] = task
                task.add_done_callback(lambda _: self._refreshing.pop(board_id, None))
            return hit[1]
        try:
            config = await self.pg.get_board(board_id, timeout_s=LOAD_TIMEOUT_S)
        except (psycopg.Error, PoolTimeout) as exc:
            raise Unavailable("board configs cannot be loaded right now; retry shortly") from exc
        if config is None:
            raise BoardNotFound(f"board {board_id!r} does not exist; create it with PUT first")
        self._cache[board_id] = (time.monotonic(), config)
        return config

    async def _refresh(self, board_id: str) -> None:
        try:
            config = await self.pg.get_board(board_id, timeout_s=LOAD_TIMEOUT_S)
        except (psycopg.Error, PoolTimeout):
            # keep serving the stale config; try again in about a second
            held = self._cache.get(board_id)
            if held is not None:
                self._cache[board_id] = (time.monotonic() - self.ttl_s + 1.0, held[1])
            return
        if config is None:
            self._cache.pop(board_id, None)
        else:
            self._cache[board_id] = (time.monotonic(), config)

    async def list(self) -> list[BoardConfig]:
        return await self.pg.list_boards()

    async def has_runs(self, config: BoardConfig) -> bool:
        """Whether any window, current or dropped from the config, ever took a run."""
        index_keys = [keys.periods_index(config.board_id, w) for w in WINDOWS]
        if await self.redis.exists(*index_keys):
            return True
        return await self.pg.board_has_periods(config.board_id)

    async def put(self, board_id: str, body: Any) -> tuple[BoardConfig, bool]:
        """Create or update; omitted fields keep their values. Returns (config, created)."""
        current = await self.pg.get_board(board_id)
        new = apply_changes(board_id, current, body)
        if current is not None:
            changed = changed_immutable(current, new)
            if changed and await self.has_runs(current):
                raise BoardImmutableField(
                    f"{', '.join(changed)} cannot change on a board that has runs; "
                    "create a new board instead"
                )
        stored, created = await self.pg.put_board(new)
        self._cache[board_id] = (time.monotonic(), stored)
        return stored, created
