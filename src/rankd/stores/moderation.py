"""PostgreSQL's moderation tables: bans and review holds (migrations/008_moderation.sql).

PostgreSQL is where moderation decisions are kept durably; Redis's :shadow and :pending
keys are derived from them (and rebuilt from them, see services/rebuild.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rankd.periods import PeriodRef
from rankd.stores.postgres import Conn, PostgresStore


async def set_banned(pg: PostgresStore, player_id: str, banned: bool, now_ms: int) -> None:
    """Record a ban or unban; it takes the next ban seq, so every instance's refresh sees it."""
    async with pg.connection() as conn:
        await conn.execute(
            "INSERT INTO bans (player_id, banned, changed_ms) VALUES (%s, %s, %s)"
            " ON CONFLICT (player_id) DO UPDATE SET banned = EXCLUDED.banned,"
            " seq = nextval('ban_seq'), changed_ms = EXCLUDED.changed_ms",
            (player_id, banned, now_ms),
        )


async def bans_since(pg: PostgresStore, seq: int) -> list[tuple[str, bool, int]]:
    """(player, banned, seq) of every ban or unban after ``seq``, oldest first."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT player_id, banned, seq FROM bans WHERE seq > %s ORDER BY seq", (seq,)
        )
        return [(r[0], bool(r[1]), int(r[2])) for r in await cur.fetchall()]


async def player_periods(pg: PostgresStore, player_id: str) -> list[PeriodRef]:
    """Every board period (and segment) where the durable copy holds the player's entry."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT board_id, win, period, segment FROM player_best WHERE player_id = %s",
            (player_id,),
        )
        return [PeriodRef(*r) for r in await cur.fetchall()]


async def banned_in(conn: Conn, ref: PeriodRef) -> list[str]:
    """The banned players holding an entry in one board period (for a rebuild)."""
    cur = await conn.execute(
        "SELECT pb.player_id FROM player_best pb JOIN bans b ON b.player_id = pb.player_id"
        " WHERE b.banned AND pb.board_id = %s AND pb.win = %s AND pb.period = %s"
        " AND pb.segment = %s",
        tuple(ref),
    )
    return [r[0] for r in await cur.fetchall()]


@dataclass(frozen=True, slots=True)
class Hold:
    board_id: str
    run_id: str
    window: str
    period: str
    player_id: str
    score: int
    composite: int
    ended_ms: int
    start_ms: int
    segments: tuple[str, ...]


_HOLD_COLUMNS = (
    "board_id, run_id, win, period, player_id, score, composite, ended_ms, start_ms, segments"
)


def _hold(row: Sequence[object]) -> Hold:
    return Hold(*row[:9], tuple(row[9]))  # type: ignore[arg-type, call-arg]


async def add_holds(conn: Conn, holds: Sequence[Hold], now_ms: int) -> None:
    """Record held runs (a resend or a replay of one changes nothing)."""
    if not holds:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            f"INSERT INTO holds ({_HOLD_COLUMNS}, held_ms)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            [
                (
                    h.board_id,
                    h.run_id,
                    h.window,
                    h.period,
                    h.player_id,
                    h.score,
                    h.composite,
                    h.ended_ms,
                    h.start_ms,
                    list(h.segments),
                    now_ms,
                )
                for h in holds
            ],
        )


async def list_holds(pg: PostgresStore, board_id: str, limit: int) -> list[Hold]:
    """The board's holds waiting for review, oldest first."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            f"SELECT {_HOLD_COLUMNS} FROM holds WHERE board_id = %s AND status = 'pending'"
            " ORDER BY held_ms, run_id, win LIMIT %s",
            (board_id, limit),
        )
        return [_hold(r) for r in await cur.fetchall()]


async def decide(conn: Conn, board_id: str, run_id: str, status: str) -> list[Hold]:
    """Approve or reject a run's pending holds (every window it was held in); returns them
    (none: no such hold waiting)."""
    cur = await conn.execute(
        "UPDATE holds SET status = %s WHERE board_id = %s AND run_id = %s"
        f" AND status = 'pending' RETURNING {_HOLD_COLUMNS}",
        (status, board_id, run_id),
    )
    return [_hold(r) for r in await cur.fetchall()]


async def player_holds(
    conn: Conn, board_id: str, window: str, period: str, player_id: str
) -> list[Hold]:
    """A player's holds waiting for review in one board period."""
    cur = await conn.execute(
        f"SELECT {_HOLD_COLUMNS} FROM holds WHERE board_id = %s AND win = %s AND period = %s"
        " AND player_id = %s AND status = 'pending'",
        (board_id, window, period, player_id),
    )
    return [_hold(r) for r in await cur.fetchall()]


async def held_in(conn: Conn, ref: PeriodRef) -> list[tuple[str, int, int]]:
    """The :pending key of one board period as the holds table has it: each player's best
    held (composite, exact ms). A hold covers its run's segment standings too."""
    cur = await conn.execute(
        "SELECT DISTINCT ON (player_id) player_id, composite, ended_ms FROM holds"
        " WHERE board_id = %s AND win = %s AND period = %s AND status = 'pending'"
        " AND (%s = '' OR %s = ANY(segments))"
        " ORDER BY player_id, composite DESC",
        (ref.board, ref.window, ref.period, ref.segment, ref.segment),
    )
    return [(r[0], int(r[1]), int(r[2])) for r in await cur.fetchall()]


async def decisions(
    conn: Conn, board_id: str, run_ids: Sequence[str]
) -> dict[tuple[str, str], str]:
    """The status of each hold of ``run_ids``: (run id, window) -> 'pending', 'approved' or
    'rejected' (absent: not recorded yet), locked until the transaction ends."""
    cur = await conn.execute(
        "SELECT run_id, win, status FROM holds WHERE board_id = %s AND run_id = ANY(%s)"
        " ORDER BY run_id, win FOR SHARE",
        (board_id, list(run_ids)),
    )
    return {(r[0], r[1]): r[2] for r in await cur.fetchall()}
