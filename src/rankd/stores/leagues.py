"""PostgreSQL's side of league boards (migrations/020): placements, tiers, the moves each
frozen period made and the history they leave (services/leagues.py)."""

from __future__ import annotations

from collections.abc import Sequence

from rankd.leagues import League
from rankd.stores.postgres import Conn

# (board, period, player, tier, ordinal) of a placement; for a waiting player, tier -1 and
# their arrival as the ordinal (kept in league_waiting)
Member = tuple[str, str, str, int, int]
# (period, tier, cohort, rank or None, moved) of a frozen period, for one player
HistoryRow = tuple[str, int, int, int | None, str]


async def add_members(conn: Conn, rows: Sequence[Member]) -> None:
    """Record placements, and players waiting (tier -1) with their arrival, in the caller's
    transaction: the first of a player's in a period stays, so a replay changes nothing."""
    placed = sorted({r for r in rows if r[3] >= 0})
    waiting = sorted({(b, p, player, n) for b, p, player, tier, n in rows if tier < 0})
    if placed:
        await conn.execute(
            "INSERT INTO league_members (board_id, period, player_id, tier, ordinal)"
            " SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::int[], %s::int[])"
            " ON CONFLICT DO NOTHING",
            tuple([r[i] for r in placed] for i in range(5)),
        )
    if waiting:
        await conn.execute(
            "INSERT INTO league_waiting (board_id, period, player_id, arrival)"
            " SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::int[])"
            " ON CONFLICT DO NOTHING",
            tuple([r[i] for r in waiting] for i in range(4)),
        )


async def make_moves(
    conn: Conn,
    board_id: str,
    league: League,
    period: str,
    start_ms: int,
    archive_id: int,
    now_ms: int,
) -> None:
    """The frozen period's moves, in the transaction that archived its standings (``archive
    id``): each member's rank in their cohort by the archive's public ranks (a banned
    player has none, so never takes a promotion place), the move it makes (leagues.py's
    rule, written again in SQL), the tiers it leaves. Exactly once: the archive is."""
    params = {
        "b": board_id,
        "p": period,
        "a": archive_id,
        "size": league.cohort_size,
        "promote": league.promote,
        "relegate": league.relegate,
        "last": league.last_tier,
    }
    await conn.execute(
        "WITH m AS ("
        "  SELECT lm.player_id, lm.tier, lm.ordinal / %(size)s AS cohort, e.rank AS arank"
        "  FROM league_members lm"
        "  LEFT JOIN archive_entries e ON e.archive_id = %(a)s AND e.player_id = lm.player_id"
        "  WHERE lm.board_id = %(b)s AND lm.period = %(p)s"
        "), r AS ("
        "  SELECT player_id, tier, cohort,"
        "   CASE WHEN arank IS NULL THEN NULL ELSE row_number() OVER"
        "    (PARTITION BY tier, cohort ORDER BY arank NULLS LAST) END AS rank,"
        "   count(arank) OVER (PARTITION BY tier, cohort) AS n"
        "  FROM m"
        "), z AS ("
        "  SELECT *, CASE WHEN tier >= %(last)s THEN 0 ELSE LEAST(%(promote)s, n) END AS up"
        "  FROM r"
        ")"
        " INSERT INTO league_history (board_id, period, player_id, tier, cohort, rank, moved)"
        " SELECT %(b)s, %(p)s, player_id, tier, cohort, rank,"
        "  CASE WHEN rank IS NULL THEN 'stay' WHEN rank <= up THEN 'up'"
        "   WHEN tier > 0 AND rank > n - %(relegate)s THEN 'down' ELSE 'stay' END"
        " FROM z ON CONFLICT DO NOTHING",
        params,
    )
    await conn.execute(
        "INSERT INTO league_tiers (board_id, player_id, tier)"
        " SELECT board_id, player_id, tier + CASE moved WHEN 'up' THEN 1 ELSE -1 END"
        " FROM league_history WHERE board_id = %(b)s AND period = %(p)s AND moved <> 'stay'"
        " ON CONFLICT (board_id, player_id) DO UPDATE SET tier = EXCLUDED.tier",
        params,
    )
    await record_moved(conn, board_id, period, start_ms, now_ms, pushed=False)


async def record_moved(
    conn: Conn, board_id: str, period: str, start_ms: int, now_ms: int, *, pushed: bool
) -> None:
    await conn.execute(
        "INSERT INTO league_moves (board_id, period, start_ms, moved_ms, pushed)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (board_id, period, start_ms, now_ms, pushed),
    )


async def is_moved(conn: Conn, board_id: str, period: str) -> bool:
    cur = await conn.execute(
        "SELECT 1 FROM league_moves WHERE board_id = %s AND period = %s", (board_id, period)
    )
    return await cur.fetchone() is not None


async def has_members(conn: Conn, board_id: str, period: str) -> bool:
    cur = await conn.execute(
        "SELECT 1 FROM league_members WHERE board_id = %s AND period = %s LIMIT 1",
        (board_id, period),
    )
    return await cur.fetchone() is not None


async def unpushed(conn: Conn, board_id: str) -> list[str]:
    """The moved periods whose tiers Redis does not have yet, oldest first."""
    cur = await conn.execute(
        "SELECT period FROM league_moves WHERE board_id = %s AND NOT pushed ORDER BY start_ms",
        (board_id,),
    )
    return [str(r[0]) for r in await cur.fetchall()]


async def movers(conn: Conn, board_id: str, period: str) -> list[tuple[str, int]]:
    """(player, tier now) of every player the period moved."""
    cur = await conn.execute(
        "SELECT h.player_id, COALESCE(t.tier, 0) FROM league_history h"
        " LEFT JOIN league_tiers t ON t.board_id = h.board_id AND t.player_id = h.player_id"
        " WHERE h.board_id = %s AND h.period = %s AND h.moved <> 'stay'",
        (board_id, period),
    )
    return [(str(p), int(t)) for p, t in await cur.fetchall()]


async def mark_pushed(conn: Conn, board_id: str, period: str) -> None:
    await conn.execute(
        "UPDATE league_moves SET pushed = true WHERE board_id = %s AND period = %s",
        (board_id, period),
    )


async def tiers(conn: Conn, board_id: str) -> list[tuple[str, int]]:
    cur = await conn.execute(
        "SELECT player_id, tier FROM league_tiers WHERE board_id = %s", (board_id,)
    )
    return [(str(p), int(t)) for p, t in await cur.fetchall()]


async def tier_of(conn: Conn, board_id: str, player_id: str) -> int:
    cur = await conn.execute(
        "SELECT tier FROM league_tiers WHERE board_id = %s AND player_id = %s",
        (board_id, player_id),
    )
    row = await cur.fetchone()
    return 0 if row is None else int(row[0])


async def placements(conn: Conn, board_id: str, period: str) -> list[tuple[str, str]]:
    """The period's placements, then its players still waiting for their tier as
    "wait:<arrival>", in the order they came: what a rebuild puts back."""
    cur = await conn.execute(
        "SELECT player_id, tier || ':' || ordinal FROM league_members"
        " WHERE board_id = %s AND period = %s ORDER BY tier, ordinal",
        (board_id, period),
    )
    found = [(str(p), str(at)) for p, at in await cur.fetchall()]
    cur = await conn.execute(
        "SELECT w.player_id, w.arrival FROM league_waiting w"
        " WHERE w.board_id = %(b)s AND w.period = %(p)s AND NOT EXISTS (SELECT 1"
        "  FROM league_members lm WHERE lm.board_id = %(b)s AND lm.period = %(p)s"
        "  AND lm.player_id = w.player_id)"
        " ORDER BY w.arrival",
        {"b": board_id, "p": period},
    )
    return found + [(str(p), f"wait:{n}") for p, n in await cur.fetchall()]


async def member_periods(conn: Conn, board_id: str, window: str) -> list[str]:
    """The league window's periods with runs (placed or waiting players) or placements, but
    for those archived (their cohorts are read from here)."""
    cur = await conn.execute(
        "SELECT period FROM (SELECT DISTINCT period FROM league_members WHERE board_id = %(b)s"
        "  UNION SELECT period FROM periods_seen WHERE board_id = %(b)s AND win = %(w)s"
        "   AND segment = '') p"
        " WHERE NOT EXISTS (SELECT 1 FROM period_archives a WHERE a.board_id = %(b)s"
        "  AND a.win = %(w)s AND a.period = p.period AND a.segment = ''"
        "  AND a.archived_ms IS NOT NULL)",
        {"b": board_id, "w": window},
    )
    return sorted(str(r[0]) for r in await cur.fetchall())


async def cohort_members(
    conn: Conn, board_id: str, period: str, size: int, by: tuple[str, ...]
) -> tuple[int, int, list[str]] | None:
    """(tier, cohort, members in placement order) as league_cohort.lua finds them in Redis,
    from the placements kept here: for a period that has left Redis."""
    if by[0] == "player":
        cur = await conn.execute(
            "SELECT tier, ordinal FROM league_members"
            " WHERE board_id = %s AND period = %s AND player_id = %s",
            (board_id, period, by[1]),
        )
        row = await cur.fetchone()
        if row is None:
            return None
        tier, cohort = int(row[0]), int(row[1]) // size
    else:
        tier, cohort = int(by[1]), int(by[2])
    cur = await conn.execute(
        "SELECT player_id FROM league_members WHERE board_id = %s AND period = %s"
        " AND tier = %s AND ordinal >= %s AND ordinal < %s ORDER BY ordinal",
        (board_id, period, tier, cohort * size, (cohort + 1) * size),
    )
    return tier, cohort, [str(r[0]) for r in await cur.fetchall()]


async def history(conn: Conn, board_id: str, player_id: str) -> list[HistoryRow]:
    """The player's frozen periods, newest first."""
    cur = await conn.execute(
        "SELECT h.period, h.tier, h.cohort, h.rank, h.moved FROM league_history h"
        " JOIN league_moves m ON m.board_id = h.board_id AND m.period = h.period"
        " WHERE h.board_id = %s AND h.player_id = %s ORDER BY m.start_ms DESC",
        (board_id, player_id),
    )
    return [
        (str(p), int(t), int(c), None if r is None else int(r), str(m))
        for p, t, c, r, m in await cur.fetchall()
    ]


async def forget_player(conn: Conn, player_id: str) -> list[tuple[str, str]]:
    """An erasure's part (in its transaction): the player's rows on every league board; the
    (board, period)s they were placed in, for Redis's side."""
    cur = await conn.execute(
        "DELETE FROM league_members WHERE player_id = %s RETURNING board_id, period", (player_id,)
    )
    placed = [(str(b), str(p)) for b, p in await cur.fetchall()]
    await conn.execute("DELETE FROM league_waiting WHERE player_id = %s", (player_id,))
    await conn.execute("DELETE FROM league_tiers WHERE player_id = %s", (player_id,))
    await conn.execute("DELETE FROM league_history WHERE player_id = %s", (player_id,))
    return placed
