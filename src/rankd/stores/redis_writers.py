"""PostgreSQL's record of the Redis nodes instances have written to (services/node_writers.py).
Times are PostgreSQL's own clock, so instances' clock skew cannot make a node look quiet."""

from __future__ import annotations

from rankd.stores.postgres import NOW_MS, Conn, PostgresStore


async def note(pg: PostgresStore, node: str) -> None:
    """``node`` takes writes of this instance now."""
    async with pg.connection() as conn:
        await conn.execute(
            f"INSERT INTO redis_writers (node, noted_ms) VALUES (%s, {NOW_MS})"
            " ON CONFLICT (node) DO UPDATE SET noted_ms = excluded.noted_ms",
            (node,),
        )


async def quiet(pg: PostgresStore, current: str, quiet_s: float) -> list[str]:
    """The nodes other than ``current`` nobody has noted for ``quiet_s``."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            f"SELECT node FROM redis_writers WHERE node <> %s AND noted_ms < {NOW_MS} - %s"
            " ORDER BY node",
            (current, int(quiet_s * 1000)),
        )
        return [str(r[0]) for r in await cur.fetchall()]


async def still_quiet(conn: Conn, node: str, quiet_s: float) -> bool:
    cur = await conn.execute(
        f"SELECT 1 FROM redis_writers WHERE node = %s AND noted_ms < {NOW_MS} - %s",
        (node, int(quiet_s * 1000)),
    )
    return await cur.fetchone() is not None


async def drop(conn: Conn, node: str, quiet_s: float) -> None:
    """Forget ``node``, unless an instance noted it meanwhile (it writes there again)."""
    await conn.execute(
        f"DELETE FROM redis_writers WHERE node = %s AND noted_ms < {NOW_MS} - %s",
        (node, int(quiet_s * 1000)),
    )
