"""Many small periods of the durable copy read back in two queries (a rebuild's batches:
services/rebuild/small.py), formatted by PostgreSQL as pages.py formats one period."""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from rankd.periods import PeriodRef
from rankd.stores.order_sql import entry_member_sql
from rankd.stores.rebuild.pages import resp_fragment
from rankd.stores.redis.bulk import SmallPeriod


async def period_sizes(
    conn: AsyncConnection[Any], board_id: str | None, window: str | None, period: str | None
) -> dict[PeriodRef, int]:
    """Entries per period (each segment apart), optionally narrowed: one scan of the
    rebuild index, so the rebuild can load many small periods per round trip."""
    cur = await conn.execute(
        "SELECT board_id, win, period, segment, count(*) FROM player_best"
        " WHERE (%(b)s::text IS NULL OR board_id = %(b)s)"
        "   AND (%(w)s::text IS NULL OR win = %(w)s)"
        "   AND (%(p)s::text IS NULL OR period = %(p)s)"
        " GROUP BY board_id, win, period, segment",
        {"b": board_id, "w": window, "p": period},
    )
    return {PeriodRef(r[0], r[1], r[2], r[3]): int(r[4]) for r in await cur.fetchall()}


# Many small periods in one query: the periods are passed as four arrays; each period's
# entries come back as one ZADD argument list in composite order, its exact times grouped
# per hash bucket (as ENTRY_PAGE_SQL and TIME_GROUPS_SQL do for one period).
_BATCH_JOIN = (
    " FROM player_best e JOIN unnest(%(b)s::text[], %(w)s::text[], %(p)s::text[],"
    " %(s)s::text[]) AS t(b, w, p, s)"
    " ON e.board_id = t.b AND e.win = t.w AND e.period = t.p AND e.segment = t.s"
)
BATCH_ENTRIES_SQL = (
    "SELECT e.board_id, e.win, e.period, e.segment, count(*),"
    f" string_agg({resp_fragment('e.composite::text', entry_member_sql('e.'))}, ''"
    "  ORDER BY e.composite, e.player_id)"
    f"{_BATCH_JOIN} GROUP BY 1, 2, 3, 4"
)
BATCH_TIMES_SQL = (
    "SELECT e.board_id, e.win, e.period, e.segment, e.time_bucket, count(*),"
    f" string_agg({resp_fragment('e.player_id', 'e.achieved_ms::text')}, '')"
    f"{_BATCH_JOIN} GROUP BY 1, 2, 3, 4, 5"
)


async def small_periods(
    conn: AsyncConnection[Any], periods: list[tuple[PeriodRef, int]]
) -> list[SmallPeriod]:
    """The entries and exact times of ``periods`` ((ref, start ms)) in two queries."""
    found = {ref: SmallPeriod(ref, start_ms) for ref, start_ms in periods}
    params = {
        "b": [r[0] for r, _ in periods],
        "w": [r[1] for r, _ in periods],
        "p": [r[2] for r, _ in periods],
        "s": [r[3] for r, _ in periods],
    }
    cur = await conn.execute(BATCH_ENTRIES_SQL, params)
    for board, win, period, segment, count, arguments in await cur.fetchall():
        small = found[PeriodRef(board, win, period, segment)]
        small.members, small.entries = int(count), arguments.encode()
    cur = await conn.execute(BATCH_TIMES_SQL, params)
    for board, win, period, segment, bucket, count, arguments in await cur.fetchall():
        found[PeriodRef(board, win, period, segment)].times.append(
            (int(bucket), int(count), arguments.encode())
        )
    return list(found.values())
