"""PostgreSQL's record of the Redis nodes instances have written to (services/node_writers.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from rankd.stores.postgres import PostgresStore


async def note(pg: PostgresStore, node: str, now_ms: int) -> None:
    """``node`` took writes of this instance as of ``now_ms``."""
    async with pg.connection() as conn:
        await conn.execute(
            "INSERT INTO redis_writers (node, noted_ms) VALUES (%s, %s) ON CONFLICT (node)"
            " DO UPDATE SET noted_ms = greatest(redis_writers.noted_ms, excluded.noted_ms)",
            (node, now_ms),
        )


async def quiet(pg: PostgresStore, current: str, before_ms: int) -> list[str]:
    """The nodes other than ``current`` nobody has said they write to since ``before_ms``."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT node FROM redis_writers WHERE node <> %s AND noted_ms < %s ORDER BY node",
            (current, before_ms),
        )
        return [str(r[0]) for r in await cur.fetchall()]


@contextlib.asynccontextmanager
async def claim(pg: PostgresStore, node: str, before_ms: int) -> AsyncIterator[bool]:
    """Whether this instance holds ``node``'s row (still quiet since ``before_ms``, and no
    other instance on it); the row goes when the block ends without an error. An instance
    that dies meanwhile leaves it, with its lock, to the next one."""
    async with pg.connection() as conn, conn.transaction():
        cur = await conn.execute(
            "SELECT 1 FROM redis_writers WHERE node = %s AND noted_ms < %s FOR UPDATE SKIP LOCKED",
            (node, before_ms),
        )
        mine = await cur.fetchone() is not None
        yield mine
        if mine:
            await conn.execute("DELETE FROM redis_writers WHERE node = %s", (node,))
