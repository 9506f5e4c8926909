"""Deleting a board: its keys dropped in steps, and the marker that it is being deleted."""

from __future__ import annotations

from typing import Any

from rankd.stores.redis import keys
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.marks import PeriodsIndex


class BoardKeys:
    """A board's keys as a whole."""

    def __init__(self, conn: RedisConn, index: PeriodsIndex) -> None:
        self.conn = conn
        self.index = index

    async def drop_board_keys(self, board_id: str, batch: int = 500) -> int:
        """Remove every key of a board: SCAN in steps, UNLINK a batch at a time (freed off
        Redis's main thread), so even a huge board never blocks Redis for long."""
        removed = 0
        for pattern in keys.board_patterns(board_id):
            found: list[Any] = []
            with reachable():
                async for key in self.conn.client.scan_iter(match=pattern, count=1000):
                    found.append(key)
                    if len(found) >= batch:
                        removed += int(await self.conn.client.unlink(*found))
                        found.clear()
                if found:
                    removed += int(await self.conn.client.unlink(*found))
        self.index.forget()
        return removed

    async def set_deleting(self, board_id: str, seconds: int) -> None:
        with reachable():
            if seconds > 0:
                await self.conn.client.set(keys.deleting(board_id), 1, ex=seconds)
            else:
                await self.conn.client.delete(keys.deleting(board_id))

    async def is_deleting(self, board_id: str) -> bool:
        with reachable():
            return bool(await self.conn.client.exists(keys.deleting(board_id)))
