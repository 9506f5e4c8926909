"""PostgreSQL's side of scheduled boards' admission (migrations/018): joins and counted runs."""

from __future__ import annotations

from collections.abc import Sequence

from rankd.stores.postgres import Conn

# (board, occurrence, player, run id) of a run an occurrence counted
Try = tuple[str, str, str, str]


async def add_entrant(conn: Conn, board_id: str, period: str, player_id: str, now_ms: int) -> None:
    await conn.execute(
        "INSERT INTO tournament_entrants (board_id, period, player_id, joined_ms)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (board_id, period, player_id, now_ms),
    )


async def add_tries(conn: Conn, tries: Sequence[Try]) -> None:
    """Record counted runs (in the caller's transaction; a replay's repeat changes nothing)."""
    if not tries:
        return
    rows = sorted(set(tries))
    await conn.execute(
        "INSERT INTO tournament_tries (board_id, period, player_id, run_id)"
        " SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[])"
        " ON CONFLICT DO NOTHING",
        tuple([r[i] for r in rows] for i in range(4)),
    )


async def joined_occurrences(conn: Conn, board_id: str | None) -> set[tuple[str, str]]:
    """(board, occurrence) of every join recorded (of one board, or all)."""
    cur = await conn.execute(
        "SELECT DISTINCT board_id, period FROM tournament_entrants"
        " WHERE %(b)s::text IS NULL OR board_id = %(b)s",
        {"b": board_id},
    )
    return {(str(b), str(p)) for b, p in await cur.fetchall()}


async def admitted(
    conn: Conn, board_id: str, period: str
) -> tuple[list[str], list[tuple[str, str]]]:
    """An occurrence's joined players and counted (player, run id)s."""
    cur = await conn.execute(
        "SELECT player_id FROM tournament_entrants WHERE board_id = %s AND period = %s",
        (board_id, period),
    )
    joined = [str(r[0]) for r in await cur.fetchall()]
    cur = await conn.execute(
        "SELECT player_id, run_id FROM tournament_tries WHERE board_id = %s AND period = %s",
        (board_id, period),
    )
    return joined, [(str(p), str(r)) for p, r in await cur.fetchall()]
