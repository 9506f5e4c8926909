"""PostgreSQL's side of removing one player's entry from one board period (an admin's
correction, migrations/014_entry_removals.sql): the removal recorded, and everything the
durable copy holds of that entry deleted."""

from __future__ import annotations

from rankd.periods import ROLLING, PeriodRef
from rankd.stores.deletions import close_up
from rankd.stores.postgres import Conn, PostgresStore

# A removal's key: (board, window, period, player); its value: the removal's time (ms) and
# the board incarnation (generation) it holds for.
RemovalKey = tuple[str, str, str, str]


async def removals_since(
    pg: PostgresStore, seq: int
) -> list[tuple[RemovalKey, tuple[int, int], int]]:
    """(key, (removed ms, generation), seq) of every removal recorded or renewed after
    ``seq``."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT board_id, win, period, player_id, removed_ms, generation, seq"
            " FROM entry_removals WHERE seq > %s ORDER BY seq",
            (seq,),
        )
        return [
            ((r[0], r[1], r[2], r[3]), (int(r[4]), int(r[5])), int(r[6]))
            for r in await cur.fetchall()
        ]


async def last_removal(conn: Conn) -> int:
    """The newest removal's seq (0: none): the consumer's check that its copy is current."""
    cur = await conn.execute("SELECT coalesce(max(seq), 0) FROM entry_removals")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def has_entry(conn: Conn, key: RemovalKey) -> bool:
    """Whether the durable copy holds the entry, or a run of it waiting for review."""
    cur = await conn.execute(
        "SELECT EXISTS (SELECT 1 FROM player_best WHERE board_id = %(b)s AND win = %(w)s"
        " AND period = %(p)s AND player_id = %(u)s)"
        " OR EXISTS (SELECT 1 FROM holds WHERE board_id = %(b)s AND win = %(w)s"
        " AND period = %(p)s AND player_id = %(u)s AND status = 'pending')"
        " OR EXISTS (SELECT 1 FROM archive_entries e JOIN period_archives a USING (archive_id)"
        " WHERE a.board_id = %(b)s AND a.win = %(w)s AND a.period = %(p)s"
        " AND e.player_id = %(u)s)",
        {"b": key[0], "w": key[1], "p": key[2], "u": key[3]},
    )
    row = await cur.fetchone()
    return bool(row and row[0])


async def remove_entry(
    conn: Conn, key: RemovalKey, removed_ms: int, generation: int
) -> set[PeriodRef]:
    """Record the removal and delete the entry (every segment's), its counted runs, its runs
    waiting for review and its archived rows (the ranks behind close up). Returns the
    period's standings (global and segments) that held it. Run in a transaction holding the
    apply lock exclusively, so no consumer batch is half applied meanwhile."""
    board, window, period, player = key
    args = {"b": board, "w": window, "p": period, "u": player}
    await conn.execute(
        "INSERT INTO entry_removals (board_id, win, period, player_id, removed_ms, generation)"
        " VALUES (%(b)s, %(w)s, %(p)s, %(u)s, %(t)s, %(g)s) ON CONFLICT (board_id, win, period,"
        " player_id) DO UPDATE SET removed_ms = GREATEST(entry_removals.removed_ms,"
        " EXCLUDED.removed_ms), generation = EXCLUDED.generation, seq = nextval('removal_seq')",
        {**args, "t": removed_ms, "g": generation},
    )
    where = "board_id = %(b)s AND win = %(w)s AND period = %(p)s AND player_id = %(u)s"
    cur = await conn.execute(f"DELETE FROM player_best WHERE {where} RETURNING segment", args)
    refs = {PeriodRef(board, window, period, r[0]) for r in await cur.fetchall()}
    await conn.execute(f"DELETE FROM sum_runs WHERE {where}", args)
    if window == ROLLING:  # its days too, or the next roll would bring the entry back
        await conn.execute(
            "DELETE FROM rolling_days WHERE board_id = %(b)s AND player_id = %(u)s", args
        )
    cur = await conn.execute(
        f"DELETE FROM holds WHERE {where} AND status = 'pending' RETURNING segments", args
    )
    for (segments,) in await cur.fetchall():
        refs |= {PeriodRef(board, window, period, s) for s in ("", *segments)}
    cur = await conn.execute(
        "DELETE FROM archive_entries e USING period_archives a"
        " WHERE a.board_id = %(b)s AND a.win = %(w)s AND a.period = %(p)s"
        " AND e.archive_id = a.archive_id AND e.player_id = %(u)s"
        " RETURNING e.archive_id, e.rank, a.segment",
        args,
    )
    for archive_id, rank, segment in await cur.fetchall():
        refs.add(PeriodRef(board, window, period, segment))
        await close_up(conn, archive_id, rank)
    return refs


async def close_period(conn: Conn, board_id: str, window: str, period: str, at_ms: int) -> None:
    """Record an early close (a period closed before keeps its first time)."""
    await conn.execute(
        "INSERT INTO period_closes (board_id, win, period, closed_ms) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (board_id, win, period) DO NOTHING",
        (board_id, window, period, at_ms),
    )
