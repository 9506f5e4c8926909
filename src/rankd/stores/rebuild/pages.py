"""The durable copy read back into Redis: a rebuild's pages, formatted by PostgreSQL.

PostgreSQL formats a page of members' ZADD arguments (and of exact times' HSET arguments)
in one aggregate, with chr(1) standing in for CR LF, so the loader (redis/bulk.py) sends a
page, not a row, at a time: one period by keyset pages, a sharded period's shards in one
pass (many small periods in two queries: small.py; players' names and profile segments:
players.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from psycopg import AsyncConnection

from rankd.periods import PeriodRef
from rankd.placement import SHARD_TIME_BUCKETS
from rankd.stores.order_sql import entry_member_sql, shard_sql


async def periods(
    conn: AsyncConnection[Any], board_id: str | None, window: str | None, period: str | None
) -> list[tuple[PeriodRef, int]]:
    """Board periods (each segment's standings apart) with entries, and their start (ms),
    optionally narrowed."""
    cur = await conn.execute(
        "SELECT board_id, win, period, segment, start_ms FROM periods_seen"
        " WHERE (%(b)s::text IS NULL OR board_id = %(b)s)"
        "   AND (%(w)s::text IS NULL OR win = %(w)s)"
        "   AND (%(p)s::text IS NULL OR period = %(p)s)"
        " ORDER BY board_id, win, start_ms, segment",
        {"b": board_id, "w": window, "p": period},
    )
    return [(PeriodRef(r[0], r[1], r[2], r[3]), r[4]) for r in await cur.fetchall()]


# Narrows a period's rows to one shard's: ``%(n)s`` = 0 for every row.
SHARD_FILTER = f" AND (%(n)s = 0 OR {shard_sql('player_id')} = %(k)s)"


def resp_fragment(score: str, member: str) -> str:
    """SQL for one member's ZADD arguments in RESP, with chr(1) standing in for CR LF
    (the loader swaps them back for a whole page at once; see rebuild.py)."""
    return (
        f"'$' || octet_length({score}) || chr(1) || {score} || chr(1)"
        f" || '$' || octet_length({member}) || chr(1) || {member} || chr(1)"
    )


def _page_sql(table: str, score: str, member: str, order: tuple[str, str], where: str) -> str:
    """One page of ZADD arguments after a keyset cursor, formatted by PostgreSQL.

    Returns (members, arguments, cursor of the page's last row). PostgreSQL does the
    per-member work in one aggregate, so the client handles a page, not a row, at a time.
    The arguments follow the subquery's order, as PostgreSQL feeds an aggregate; that only
    affects load speed. The cursor does not rely on it: the last row is the one numbered
    ``size`` by the window in the subquery's own order.
    """
    first, second = order
    return (
        f"SELECT count(*), string_agg({resp_fragment(score, member)}, ''),"
        f" max({first}), max({second}) FILTER (WHERE rn = %(size)s)"
        f" FROM (SELECT *, row_number() OVER (ORDER BY {first}, {second}) AS rn"
        f"  FROM {table} WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s"
        f"  AND segment = %(s)s{SHARD_FILTER}"
        f"  AND ({first}, {second}) > (%(c1)s, %(c2)s) {where}"
        f"  ORDER BY {first}, {second} LIMIT %(size)s) page"
    )


# One period's entries in composite order (Redis loads sorted input fastest).
ENTRY_PAGE_SQL = _page_sql(
    "player_best",
    "composite::text",
    entry_member_sql(),
    ("composite", "player_id"),
    "",
)
# A sum period's counted run ids as Redis keeps them, "<player>|<run_id>" -> ended_ms, or
# for a late run (counted more than a horizon after it ended) when it was counted; since a
# time.
_SEEN_AT = "(CASE WHEN ended_ms < counted_ms - %(horizon)s THEN counted_ms ELSE ended_ms END)"
SUM_RUN_PAGE_SQL = _page_sql(
    "sum_runs",
    f"{_SEEN_AT}::text",
    "player_id || '|' || run_id",
    ("player_id", "run_id"),
    f"AND {_SEEN_AT} >= %(since)s",
)


# A period's exact achieved times grouped by the Redis hash that holds them:
# (bucket, members, HSET field/value arguments in RESP with chr(1) for CR LF).
# A shard's hashes are folded (redis/keys.py SHARD_TIME_BUCKETS): ``%(n)s`` > 0 folds.
BUCKET_SQL = f"(CASE WHEN %(n)s = 0 THEN time_bucket ELSE time_bucket %% {SHARD_TIME_BUCKETS} END)"
TIME_GROUPS_SQL = (
    f"SELECT {BUCKET_SQL}, count(*),"
    f" string_agg({resp_fragment('player_id', 'achieved_ms::text')}, '')"
    " FROM player_best"
    " WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s AND segment = %(s)s"
    f"{SHARD_FILTER}"
    " GROUP BY 1"
)


async def time_groups(
    conn: AsyncConnection[Any],
    key: PeriodRef,
    members: int,
    size: int = 2_000,
    shard: tuple[int, int] = (0, 0),
) -> AsyncIterator[tuple[int, int, bytes]]:
    """(bucket, members, arguments) of every exact-times hash of a period of ``members``
    entries (of one shard's: ``shard`` = (k, shards); (0, 0): all). A large period streams
    through a server-side cursor (needs a transaction); a small one costs one query."""
    params = {"b": key[0], "w": key[1], "p": key[2], "s": key[3], "k": shard[0], "n": shard[1]}
    if members <= 20_000:
        cur = await conn.execute(TIME_GROUPS_SQL, params)
        for bucket, count, arguments in await cur.fetchall():
            yield int(bucket), int(count), arguments.encode()
        return
    async with conn.cursor(name="rankd_time_groups") as named:
        await named.execute(TIME_GROUPS_SQL, params)
        while rows := await named.fetchmany(size):
            for bucket, count, arguments in rows:
                yield int(bucket), int(count), arguments.encode()


# One page of a sharded period, in composite order as ENTRY_PAGE_SQL reads it, its ZADD
# arguments grouped per shard: (shard, members, arguments, cursor of the page's last row
# on the group that holds it). One pass over the period feeds every shard.
SHARDED_ENTRY_PAGE_SQL = (
    f"SELECT k, count(*), string_agg({resp_fragment('composite::text', entry_member_sql())},"
    " ''), max(composite) FILTER (WHERE rn = %(size)s),"
    " max(player_id) FILTER (WHERE rn = %(size)s)"
    " FROM (SELECT *, row_number() OVER (ORDER BY composite, player_id) AS rn,"
    f"  {shard_sql('player_id')} AS k"
    "  FROM player_best WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s"
    "  AND segment = %(s)s AND (composite, player_id) > (%(c1)s, %(c2)s)"
    "  ORDER BY composite, player_id LIMIT %(size)s) page GROUP BY k"
)
# A sharded period's exact times per shard and hash bucket.
SHARDED_TIME_GROUPS_SQL = (
    f"SELECT {shard_sql('player_id')} AS k, time_bucket %% {SHARD_TIME_BUCKETS}, count(*),"
    f" string_agg({resp_fragment('player_id', 'achieved_ms::text')}, '')"
    " FROM player_best"
    " WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s AND segment = %(s)s"
    " GROUP BY 1, 2"
)


async def sharded_pages(
    conn: AsyncConnection[Any], key: PeriodRef, shards: int, size: int = 20_000
) -> AsyncIterator[list[tuple[int, int, bytes]]]:
    """A sharded period's pages: [(shard, members, RESP arguments with chr(1) for CR LF)]."""
    params = {"b": key[0], "w": key[1], "p": key[2], "s": key[3], "n": shards}
    async for page in keyset_pages(conn, SHARDED_ENTRY_PAGE_SQL, params, (-1, ""), size):
        yield page


async def keyset_pages(
    conn: AsyncConnection[Any],
    sql: str,
    params: dict[str, Any],
    cursor: tuple[Any, Any],
    size: int,
) -> AsyncIterator[list[tuple[int, int, bytes]]]:
    """Pages of [(shard, members, arguments)] that ``sql`` reads after a keyset cursor
    (``%(c1)s``, ``%(c2)s``: the last page's last composite and player), until a page comes
    back short; shared by the one-stream and the sliced reads."""
    while True:
        cur = await conn.execute(sql, {**params, "c1": cursor[0], "c2": cursor[1], "size": size})
        rows = await cur.fetchall()
        members = sum(int(r[1]) for r in rows)
        if not members:
            return
        yield [(int(r[0]), int(r[1]), r[2].encode()) for r in rows]
        if members < size:
            return
        cursor = next((r[3], r[4]) for r in rows if r[3] is not None)


async def sharded_time_groups(
    conn: AsyncConnection[Any], key: PeriodRef, shards: int, size: int = 2_000
) -> AsyncIterator[tuple[int, int, int, bytes]]:
    """(shard, bucket, members, arguments) of every exact-times hash of a sharded period,
    through a server-side cursor (needs a transaction)."""
    params = {"b": key[0], "w": key[1], "p": key[2], "s": key[3], "n": shards}
    async with conn.cursor(name="rankd_sharded_time_groups") as named:
        await named.execute(SHARDED_TIME_GROUPS_SQL, params)
        while rows := await named.fetchmany(size):
            for shard, bucket, count, arguments in rows:
                yield int(shard), int(bucket), int(count), arguments.encode()


async def pages(
    conn: AsyncConnection[Any],
    sql: str,
    key: PeriodRef,
    start: tuple[Any, Any],
    extra: dict[str, Any] | None = None,
    size: int = 20_000,
    shard: tuple[int, int] = (0, 0),
) -> AsyncIterator[tuple[int, bytes]]:
    """(members, RESP arguments with chr(1) for CR LF) pages of a keyset-paged query, of
    one shard's rows (``shard`` = (k, shards); (0, 0): all)."""
    cursor = start
    while True:
        params = {
            "b": key[0],
            "w": key[1],
            "p": key[2],
            "s": key[3],
            "c1": cursor[0],
            "c2": cursor[1],
            "k": shard[0],
            "n": shard[1],
        }
        cur = await conn.execute(sql, {**params, **(extra or {}), "size": size})
        row = await cur.fetchone()
        if row is None or not row[0]:
            return
        yield int(row[0]), row[1].encode()
        if row[0] < size:
            return
        cursor = (row[2], row[3])


# Deferred readers of one period (a shard of it: ``shard`` = (k, shards)) for the loads
# (stores/redis/staging.py load_period), made at the moment they are needed.


def entry_pages_of(
    conn: AsyncConnection[Any], ref: PeriodRef, shard: tuple[int, int]
) -> Callable[[], AsyncIterator[tuple[int, bytes]]]:
    return lambda: pages(conn, ENTRY_PAGE_SQL, ref, (-1, ""), shard=shard)


def counted_run_pages_of(
    conn: AsyncConnection[Any], ref: PeriodRef, since: int, horizon: int, shard: tuple[int, int]
) -> Callable[[], AsyncIterator[tuple[int, bytes]]]:
    return lambda: pages(
        conn,
        SUM_RUN_PAGE_SQL,
        ref,
        ("", ""),
        {"since": since, "horizon": horizon},
        shard=shard,
    )


def time_groups_of(
    conn: AsyncConnection[Any], ref: PeriodRef, shard: tuple[int, int]
) -> Callable[[int], AsyncIterator[tuple[int, int, bytes]]]:
    return lambda members: time_groups(conn, ref, members, shard=shard)
