"""A large period cut into composite slices, read back by several streams at once
(services/rebuild/parallel.py): each slice's pages and exact times, in the shapes
rebuild/pages.py gives one stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from psycopg import AsyncConnection

from rankd.periods import PeriodRef
from rankd.stores.order_sql import entry_member_sql, shard_sql
from rankd.stores.rebuild.pages import BUCKET_SQL, keyset_pages, resp_fragment

PeriodKey = PeriodRef

# A slice of a period, composite in [lo, hi], for the parallel rebuild (services/
# rebuild/parallel.py): its pages as SHARDED_ENTRY_PAGE_SQL reads them (shard 0 for every
# row when ``%(n)s`` = 0, an unsharded period), and its exact times per shard and bucket.
_SLICE_SHARD = f"CASE WHEN %(n)s = 0 THEN 0 ELSE {shard_sql('player_id')} END"
_SLICE_WHERE = (
    " WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s AND segment = %(s)s"
    " AND composite BETWEEN %(lo)s AND %(hi)s"
)
SLICE_ENTRY_PAGE_SQL = (
    f"SELECT k, count(*), string_agg({resp_fragment('composite::text', entry_member_sql())},"
    " ''), max(composite) FILTER (WHERE rn = %(size)s),"
    " max(player_id) FILTER (WHERE rn = %(size)s)"
    " FROM (SELECT *, row_number() OVER (ORDER BY composite, player_id) AS rn,"
    f"  {_SLICE_SHARD} AS k FROM player_best{_SLICE_WHERE}"
    "  AND (composite, player_id) > (%(c1)s, %(c2)s)"
    "  ORDER BY composite, player_id LIMIT %(size)s) page GROUP BY k"
)
SLICE_TIME_GROUPS_SQL = (
    f"SELECT {_SLICE_SHARD} AS k, {BUCKET_SQL}, count(*),"
    f" string_agg({resp_fragment('player_id', 'achieved_ms::text')}, '')"
    f" FROM player_best{_SLICE_WHERE} GROUP BY 1, 2"
)
COMPOSITE_MIN, COMPOSITE_MAX = -(2**63), 2**63 - 1
SAMPLE_ROWS = 20_000  # rows of the whole table sampled to cut a period into slices


async def composite_slices(
    conn: AsyncConnection[Any], key: PeriodKey, slices: int
) -> list[tuple[int, int]]:
    """Up to ``slices`` composite ranges [lo, hi] that cover a period with about as many
    entries each, cut at the quantiles of a page sample of the table (TABLESAMPLE SYSTEM,
    about SAMPLE_ROWS rows: cheap at any size). Too few sampled entries of the period:
    fewer ranges (one covers everything). Uneven ranges cost speed, never entries."""
    if slices <= 1:
        return slice_bounds([], 1)
    # the table's rows: its statistics, or (never analyzed) its size at ~40 rows a page
    cur = await conn.execute(
        "SELECT greatest(reltuples, pg_relation_size(oid) / 8192 * 40) FROM pg_class"
        " WHERE oid = 'player_best'::regclass"
    )
    row = await cur.fetchone()
    table_rows = max(float(row[0]) if row else 0.0, 1.0)
    percent = min(100.0, max(0.0001, 100.0 * SAMPLE_ROWS / table_rows))
    cur = await conn.execute(
        f"SELECT composite FROM player_best TABLESAMPLE SYSTEM ({percent:.6f})"
        " WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s AND segment = %(s)s",
        {"b": key[0], "w": key[1], "p": key[2], "s": key[3]},
    )
    return slice_bounds([int(r[0]) for r in await cur.fetchall()], slices)


def slice_bounds(sample: list[int], slices: int) -> list[tuple[int, int]]:
    """Composite ranges [lo, hi] cut at ``sample``'s quantiles, at most ``slices``, with
    at least 8 sampled values each; together they cover every bigint exactly once."""
    sample = sorted(sample)
    slices = min(slices, len(sample) // 8)
    cuts = sorted({sample[len(sample) * i // slices] for i in range(1, slices)})
    cuts = [c for c in cuts if c > sample[0]]  # none below the lowest: an empty slice
    lows = [COMPOSITE_MIN, *cuts]
    highs = [c - 1 for c in cuts] + [COMPOSITE_MAX]
    return list(zip(lows, highs, strict=True))


async def slice_pages(
    conn: AsyncConnection[Any],
    key: PeriodKey,
    shards: int,
    bounds: tuple[int, int],
    size: int = 20_000,
) -> AsyncIterator[list[tuple[int, int, bytes]]]:
    """A period slice's pages: [(shard, members, RESP arguments with chr(1) for CR LF)],
    shard 0 for an unsharded period (``shards`` 0)."""
    params = {"b": key[0], "w": key[1], "p": key[2], "s": key[3], "n": shards}
    params |= {"lo": bounds[0], "hi": bounds[1]}
    async for page in keyset_pages(conn, SLICE_ENTRY_PAGE_SQL, params, (bounds[0], ""), size):
        yield page


async def slice_time_groups(
    conn: AsyncConnection[Any],
    key: PeriodKey,
    shards: int,
    bounds: tuple[int, int],
    size: int = 2_000,
) -> AsyncIterator[tuple[int, int, int, bytes]]:
    """(shard, bucket, members, arguments) of a period slice's exact times, through a
    server-side cursor (needs a transaction). A bucket's fields may come in several
    slices' groups: each is an HSET of its own fields."""
    params = {"b": key[0], "w": key[1], "p": key[2], "s": key[3], "n": shards}
    params |= {"lo": bounds[0], "hi": bounds[1]}
    async with conn.cursor(name="rankd_slice_time_groups") as named:
        await named.execute(SLICE_TIME_GROUPS_SQL, params)
        while rows := await named.fetchmany(size):
            for shard, bucket, count, arguments in rows:
                yield int(shard), int(bucket), int(count), arguments.encode()
