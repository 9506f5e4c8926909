"""PostgreSQL's moderation tables: bans and review holds (migrations/008_moderation.sql).

PostgreSQL is where moderation decisions are kept durably; Redis's :shadow and :pending
keys are derived from them (and rebuilt from them, see services/rebuild/).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from rankd.periods import PeriodRef
from rankd.stores.postgres import ANY_IDS_UNPREPARED, Conn, PostgresStore


async def set_banned(
    pg: PostgresStore, player_id: str, banned: bool, now_ms: int, reason: str | None = None
) -> None:
    """Record a ban (with its reason, if any) or unban; it takes the next ban seq, so every
    instance's refresh sees it."""
    async with pg.connection() as conn:
        await conn.execute(
            "INSERT INTO bans (player_id, banned, changed_ms, reason) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (player_id) DO UPDATE SET banned = EXCLUDED.banned,"
            " seq = nextval('ban_seq'), changed_ms = EXCLUDED.changed_ms,"
            " reason = EXCLUDED.reason",
            (player_id, banned, now_ms, reason),
        )


async def bans_since(pg: PostgresStore, seq: int) -> list[tuple[str, bool, int]]:
    """(player, banned, seq) of every ban or unban after ``seq``, oldest first."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT player_id, banned, seq FROM bans WHERE seq > %s ORDER BY seq", (seq,)
        )
        return [(r[0], bool(r[1]), int(r[2])) for r in await cur.fetchall()]


async def list_bans(
    pg: PostgresStore, limit: int, after_seq: int | None
) -> list[tuple[str, int, int, str | None]]:
    """(player, banned at ms, ban seq, reason) of the players banned now, newest ban first,
    after the ban seq ``after_seq`` (a page's cursor) if given."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT player_id, changed_ms, seq, reason FROM bans WHERE banned"
            " AND (%(after)s::bigint IS NULL OR seq < %(after)s) ORDER BY seq DESC LIMIT %(n)s",
            {"after": after_seq, "n": limit},
        )
        return [(r[0], int(r[1]), int(r[2]), r[3]) for r in await cur.fetchall()]


async def is_banned(pg: PostgresStore, player_id: str) -> bool:
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT EXISTS (SELECT 1 FROM bans WHERE player_id = %s AND banned)", (player_id,)
        )
        row = await cur.fetchone()
    return bool(row and row[0])


async def player_periods(pg: PostgresStore, player_id: str) -> list[PeriodRef]:
    """Every board period (and segment) where the durable copy holds the player's entry."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT board_id, win, period, segment FROM player_best WHERE player_id = %s",
            (player_id,),
        )
        return [PeriodRef(*r) for r in await cur.fetchall()]


async def banned_entries(conn: Conn, board_id: str | None) -> dict[PeriodRef, list[str]]:
    """The banned players holding an entry, by board period (for a rebuild: one query for
    all its periods; bans are few)."""
    cur = await conn.execute(
        "SELECT pb.board_id, pb.win, pb.period, pb.segment, pb.player_id"
        " FROM bans b JOIN player_best pb ON pb.player_id = b.player_id"
        " WHERE b.banned AND (%(b)s::text IS NULL OR pb.board_id = %(b)s)",
        {"b": board_id},
    )
    found: dict[PeriodRef, list[str]] = {}
    for row in await cur.fetchall():
        found.setdefault(PeriodRef(*row[:4]), []).append(row[4])
    return found


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
    metadata: str | None = None  # the run's metadata JSON


_HOLD_COLUMNS = (
    "board_id, run_id, win, period, player_id, score, composite, ended_ms, start_ms, segments,"
    " metadata"
)


def _hold(row: Sequence[object]) -> Hold:
    return Hold(*row[:9], tuple(row[9]), row[10])  # type: ignore[arg-type, call-arg]


async def add_holds(conn: Conn, holds: Sequence[Hold], now_ms: int) -> None:
    """Record held runs (a resend or a replay of one changes nothing)."""
    if not holds:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            f"INSERT INTO holds ({_HOLD_COLUMNS}, held_ms)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
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
                    h.metadata,
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
        "UPDATE holds SET status = %s, decided_ms = %s WHERE board_id = %s AND run_id = %s"
        f" AND status = 'pending' RETURNING {_HOLD_COLUMNS}",
        (status, int(time.time() * 1000), board_id, run_id),
    )
    return [_hold(r) for r in await cur.fetchall()]


async def changed_since(conn: Conn, since_ms: int) -> list[str]:
    """What PostgreSQL changed outside the log since ``since_ms`` and wrote to Redis only
    afterwards: bans, hold decisions, board deletions, erasures (one line each kind found,
    for logs and /readyz)."""
    found = []
    for what, sql in (
        ("a ban or unban", "SELECT 1 FROM bans WHERE changed_ms >= %s LIMIT 1"),
        ("a hold decision", "SELECT 1 FROM holds WHERE decided_ms >= %s LIMIT 1"),
        ("a board deletion", "SELECT 1 FROM deleted_boards WHERE deleted_ms >= %s LIMIT 1"),
        ("a player erasure", "SELECT 1 FROM erasures WHERE erased_ms >= %s LIMIT 1"),
    ):
        cur = await conn.execute(sql, (since_ms,))
        if await cur.fetchone() is not None:
            found.append(what)
    return found


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


async def held_entries(
    conn: Conn, board_id: str | None
) -> dict[PeriodRef, list[tuple[str, int, int]]]:
    """The :pending keys as the holds table has them, by board period (global and each
    segment a hold covers): each player's best held (composite, exact ms)."""
    cur = await conn.execute(
        "SELECT board_id, win, period, player_id, composite, ended_ms, segments FROM holds"
        " WHERE status = 'pending' AND (%(b)s::text IS NULL OR board_id = %(b)s)",
        {"b": board_id},
    )
    best: dict[tuple[PeriodRef, str], tuple[int, int]] = {}
    for board, win, period, player, composite, ended_ms, segments in await cur.fetchall():
        for segment in ("", *segments):
            key = (PeriodRef(board, win, period, segment), player)
            if key not in best or composite > best[key][0]:
                best[key] = (int(composite), int(ended_ms))
    found: dict[PeriodRef, list[tuple[str, int, int]]] = {}
    for (ref, player), (composite, ended_ms) in best.items():
        found.setdefault(ref, []).append((player, composite, ended_ms))
    return found


async def held_windows(conn: Conn, board_id: str, run_ids: Sequence[str]) -> dict[str, set[str]]:
    """The windows each of ``run_ids`` was ever held in on the board."""
    cur = await conn.execute(
        "SELECT run_id, win FROM holds WHERE board_id = %s AND run_id = ANY(%s)",
        (board_id, list(set(run_ids))),
        prepare=ANY_IDS_UNPREPARED,
    )
    found: dict[str, set[str]] = {}
    for run_id, win in await cur.fetchall():
        found.setdefault(run_id, set()).add(win)
    return found


async def decisions(
    conn: Conn, board_id: str, run_ids: Sequence[str]
) -> dict[tuple[str, str], tuple[str, str, int]]:
    """The status of each hold of ``run_ids``: (run id, window) -> ('pending', 'approved' or
    'rejected', the held run's player, its score) (absent: not recorded yet), locked until
    the transaction ends."""
    cur = await conn.execute(
        "SELECT run_id, win, status, player_id, score FROM holds"
        " WHERE board_id = %s AND run_id = ANY(%s) ORDER BY run_id, win FOR SHARE",
        (board_id, list(run_ids)),
        prepare=ANY_IDS_UNPREPARED,
    )
    return {(r[0], r[1]): (r[2], r[3], int(r[4])) for r in await cur.fetchall()}
