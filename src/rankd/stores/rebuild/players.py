"""What a rebuild or a restart restores beside the boards, from the durable copy: players'
names and profile segments, a chunk at a time, and the players changed since a time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from psycopg import AsyncConnection


async def _player_chunks(
    conn: AsyncConnection[Any], sql: str, size: int
) -> AsyncIterator[dict[str, str]]:
    """player_id -> value of ``sql``'s rows, a chunk at a time (a server-side cursor: needs
    a transaction)."""
    async with conn.cursor(name="rankd_players") as cur:
        await cur.execute(sql.encode())
        while rows := await cur.fetchmany(size):
            yield dict(rows)


def name_chunks(conn: AsyncConnection[Any], size: int = 10_000) -> AsyncIterator[dict[str, str]]:
    """Every player's display name."""
    return _player_chunks(conn, "SELECT player_id, name FROM players WHERE name IS NOT NULL", size)


async def players_changed_since(
    conn: AsyncConnection[Any], since_ms: int
) -> list[tuple[str, str, str]]:
    """(player_id, name, segments as JSON text) of players written at or after
    ``since_ms`` (PostgreSQL's clock; ``updated_at`` is set on every write)."""
    cur = await conn.execute(
        "SELECT player_id, name, segments::text FROM players"
        " WHERE updated_at >= to_timestamp(%s / 1000.0)",
        (since_ms,),
    )
    return [(str(p), str(n), str(s)) for p, n, s in await cur.fetchall()]


def profile_segment_chunks(
    conn: AsyncConnection[Any], size: int = 10_000
) -> AsyncIterator[dict[str, str]]:
    """Every player's profile segments, as JSON text."""
    return _player_chunks(
        conn, "SELECT player_id, segments::text FROM players WHERE segments <> '{}'", size
    )
