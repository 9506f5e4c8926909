"""The durable copy of the boards in PostgreSQL: ``player_best``, ``sum_runs``, parking.

Writes come from the log consumer in batches, sorted by key so concurrent consumers lock rows
in the same order. A ``best`` entry is a conditional max (``ON CONFLICT ... WHERE`` the new
composite is higher, or equal and reached earlier); a ``sum`` entry grows only by runs
whose id is new in ``sum_runs``. Both are idempotent, so a redelivered or replayed message
changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

from rankd.boards import BoardConfig
from rankd.codec import STAMP_EPOCH_MS, STAMP_MAX, STAMP_WIDTH, stamp_offset
from rankd.periods import PeriodRef, parse_period
from rankd.stores.redis_keys import time_bucket
from rankd.stores.redis_loader import SmallPeriod


@dataclass(frozen=True, slots=True)
class BestRow:
    player_id: str
    composite: int
    score: int
    achieved_ms: int
    run_id: str


@dataclass(frozen=True, slots=True)
class SumRun:
    run_id: str
    player_id: str
    score: int
    ended_ms: int
    counted_ms: int = 0  # when it was received, which is when it is first counted


PeriodKey = PeriodRef  # board, window, period, segment ("" for the global standings)


@dataclass
class StandingsBatch:
    """What one consumer batch writes, grouped per board period."""

    best: dict[PeriodKey, dict[str, BestRow]]
    sums: dict[PeriodKey, dict[str, SumRun]]  # by "<player>|<run_id>"
    periods: dict[PeriodKey, int]  # start_ms
    configs: dict[str, BoardConfig]

    @classmethod
    def empty(cls) -> StandingsBatch:
        return cls(defaultdict(dict), defaultdict(dict), {}, {})

    def add_best(self, key: PeriodKey, start_ms: int, row: BestRow) -> None:
        self.periods[key] = start_ms
        held = self.best[key].get(row.player_id)
        if held is None or (row.composite, -stamp_offset(row.achieved_ms)) > (
            held.composite,
            -stamp_offset(held.achieved_ms),
        ):
            self.best[key][row.player_id] = row

    def add_sum(self, key: PeriodKey, start_ms: int, run: SumRun) -> None:
        self.periods[key] = start_ms
        self.sums[key].setdefault(f"{run.player_id}|{run.run_id}", run)

    def __bool__(self) -> bool:
        return bool(self.periods)


async def write(conn: AsyncConnection[Any], batch: StandingsBatch) -> None:
    """Write ``batch`` in the caller's transaction."""
    if batch.periods:
        rows = sorted(batch.periods.items())
        await conn.execute(
            "INSERT INTO periods_seen (board_id, win, period, segment, start_ms)"
            " SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::bigint[])"
            " ON CONFLICT DO NOTHING",
            (
                [k[0] for k, _ in rows],
                [k[1] for k, _ in rows],
                [k[2] for k, _ in rows],
                [k[3] for k, _ in rows],
                [start for _, start in rows],
            ),
        )
    if batch.best:
        await _write_best(conn, batch.best)
    for key in sorted(batch.sums):
        await _write_sums(conn, key, batch.configs[key[0]], list(batch.sums[key].values()))


async def _write_best(
    conn: AsyncConnection[Any], best: dict[PeriodKey, dict[str, BestRow]]
) -> None:
    """Conditional max of every entry: COPY into a temporary table, then one upsert.

    Array parameters (unnest) cost psycopg a Python call per element, which the consumer's
    profile showed at 10% of the service; COPY rows cost far less. psycopg encodes each row,
    so ids holding tabs, newlines or backslashes (possible in a log message from elsewhere)
    are written as they are.
    """
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS best_in (board_id text, win text, period text,"
        " segment text, player_id text, composite bigint, score bigint, achieved_ms bigint,"
        " run_id text, time_bucket int) ON COMMIT DELETE ROWS"
    )
    async with conn.cursor().copy("COPY best_in FROM STDIN") as copy:
        for (b, w, p, s), entries in best.items():
            for e in entries.values():
                await copy.write_row(
                    (
                        b,
                        w,
                        p,
                        s,
                        e.player_id,
                        e.composite,
                        e.score,
                        e.achieved_ms,
                        e.run_id,
                        time_bucket(e.player_id),
                    )
                )
    # sorted by key, so concurrent consumers lock rows in the same order
    await conn.execute(
        "INSERT INTO player_best (board_id, win, period, segment, player_id, composite, score,"
        " achieved_ms, run_id, time_bucket)"
        " SELECT * FROM best_in ORDER BY board_id, win, period, segment, player_id"
        " ON CONFLICT (board_id, win, period, segment, player_id) DO UPDATE SET"
        "   composite = EXCLUDED.composite, score = EXCLUDED.score,"
        "   achieved_ms = EXCLUDED.achieved_ms, run_id = EXCLUDED.run_id"
        # the better entry: a higher composite, or an equal one reached earlier (Redis's
        # order, lua/lib.lua better; the time clamped as the member's stamp clamps it)
        " WHERE EXCLUDED.composite > player_best.composite"
        "  OR (EXCLUDED.composite = player_best.composite"
        f"   AND {_stamp_offset('EXCLUDED.achieved_ms')}"
        f"    < {_stamp_offset('player_best.achieved_ms')})"
    )


def _stamp_offset(achieved_ms: str) -> str:
    """SQL for codec.stamp_offset."""
    return f"LEAST(GREATEST({achieved_ms} - {STAMP_EPOCH_MS}::bigint, 0), {STAMP_MAX}::bigint)"


async def _write_sums(
    conn: AsyncConnection[Any], key: PeriodKey, board: BoardConfig, runs: Sequence[SumRun]
) -> None:
    runs = sorted(runs, key=lambda r: (r.player_id, r.run_id))
    cur = await conn.execute(
        "INSERT INTO sum_runs"
        " (board_id, win, period, segment, run_id, player_id, score, ended_ms, counted_ms)"
        " SELECT %s, %s, %s, %s, *"
        " FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[])"
        " ON CONFLICT DO NOTHING RETURNING player_id, score, ended_ms",
        (
            *key,
            [r.run_id for r in runs],
            [r.player_id for r in runs],
            [r.score for r in runs],
            [r.ended_ms for r in runs],
            [r.counted_ms for r in runs],
        ),
    )
    totals: dict[str, list[int]] = {}
    for player_id, score, ended_ms in await cur.fetchall():
        held = totals.setdefault(player_id, [0, ended_ms])
        held[0] += score
        held[1] = max(held[1], ended_ms)
    await _add_totals(conn, key, board, totals)


async def count_once(
    conn: AsyncConnection[Any], key: PeriodKey, board: BoardConfig, run: SumRun
) -> tuple[bool, int, bool]:
    """Count ``run`` into a sum entry unless it was counted before (in the caller's
    transaction). Returns (counted now, when it was first counted, whether that count
    changed the entry).

    The submit path and the log consumer may settle the same player's runs at once: a lock
    on the player's entry (until the transaction ends), taken before its row, makes the
    second wait and then see the first's rows. Callers settle in key order, as the
    consumer's batch writes are, so no two transactions wait on each other."""
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
        ("|".join((*key, run.player_id)),),
    )
    cur = await conn.execute(
        "INSERT INTO sum_runs"
        " (board_id, win, period, segment, run_id, player_id, score, ended_ms, counted_ms)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
        (*key, run.run_id, run.player_id, run.score, run.ended_ms, run.counted_ms),
    )
    entry = (
        "SELECT composite, achieved_ms FROM player_best"
        " WHERE board_id = %s AND win = %s AND period = %s"
        " AND segment = %s AND player_id = %s"
    )
    where_run = (
        " WHERE board_id = %s AND win = %s AND period = %s AND segment = %s"
        " AND player_id = %s AND run_id = %s"
    )
    if await cur.fetchone() is not None:
        before = await (await conn.execute(entry, (*key, run.player_id))).fetchone()
        await _add_totals(conn, key, board, {run.player_id: [run.score, run.ended_ms]})
        after = await (await conn.execute(entry, (*key, run.player_id))).fetchone()
        changed = before != after
        if not changed:
            await conn.execute(
                "UPDATE sum_runs SET changed = false" + where_run, (*key, run.player_id, run.run_id)
            )
        await conn.execute(
            "INSERT INTO periods_seen (board_id, win, period, segment, start_ms)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (*key, parse_period(key[1], key[2]).start_ms),
        )
        return True, run.counted_ms, changed
    cur = await conn.execute(
        "SELECT counted_ms, changed FROM sum_runs" + where_run, (*key, run.player_id, run.run_id)
    )
    row = await cur.fetchone()
    return False, int(row[0]) if row else 0, bool(row[1]) if row else False


async def _add_totals(
    conn: AsyncConnection[Any], key: PeriodKey, board: BoardConfig, totals: dict[str, list[int]]
) -> None:
    """Add newly counted runs' (score, latest end) per player to their sum entries."""
    if not totals:
        return
    players = sorted(totals)
    codec = board.codecs[key[1]]
    start = parse_period(key[1], key[2]).start_ms

    def composite(total: str, at: str) -> str:
        """The codec's packing in SQL (see codec.py): score part over reversed time units."""
        score_key = f"(%(max)s - {total})" if board.order == "asc" else f"({total})"
        return f"{score_key} * %(mult)s + (%(mult)s - 1 - ({at} - %(start)s) / %(res)s)"

    # New totals saturate at max_score; the time is the latest counted run's.
    new_total = "LEAST(player_best.score + EXCLUDED.score, %(max)s)"
    new_at = "GREATEST(player_best.achieved_ms, EXCLUDED.achieved_ms)"
    await conn.execute(
        "INSERT INTO player_best (board_id, win, period, segment, player_id, composite, score,"
        " achieved_ms, run_id, time_bucket)"
        f" SELECT %(b)s, %(w)s, %(p)s, %(s)s, u.player,"
        f"  {composite('LEAST(u.total, %(max)s)', 'u.at')}, LEAST(u.total, %(max)s), u.at, '',"
        "  u.bucket"
        " FROM unnest(%(players)s::text[], %(totals)s::bigint[], %(ats)s::bigint[],"
        "  %(buckets)s::int[]) AS u(player, total, at, bucket)"
        " ON CONFLICT (board_id, win, period, segment, player_id) DO UPDATE SET"
        f"  score = {new_total}, achieved_ms = {new_at},"
        f"  composite = {composite(new_total, new_at)}",
        {
            "b": key[0],
            "w": key[1],
            "p": key[2],
            "s": key[3],
            "players": players,
            "totals": [totals[p][0] for p in players],
            "ats": [totals[p][1] for p in players],
            "buckets": [time_bucket(p) for p in players],
            "max": board.max_score,
            "mult": 1 << codec.time_bits,
            "start": start,
            "res": codec.resolution_ms,
        },
    )


async def park(
    conn: AsyncConnection[Any], stream_seq: int, subject: str, reason: str, payload: bytes
) -> None:
    """Keep a message that cannot apply, with why; parked again, it keeps the latest why."""
    await conn.execute(
        "INSERT INTO parked_messages (stream_seq, subject, reason, payload)"
        " VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (stream_seq) DO UPDATE SET reason = EXCLUDED.reason",
        (stream_seq, subject, reason[:500].replace("\x00", "\\x00"), payload),
    )


async def parked(
    conn: AsyncConnection[Any], after_seq: int, limit: int
) -> list[tuple[int, str, bytes]]:
    """(stream_seq, subject, payload) of parked messages after ``after_seq``, in order."""
    cur = await conn.execute(
        "SELECT stream_seq, subject, payload FROM parked_messages WHERE stream_seq > %s"
        " ORDER BY stream_seq LIMIT %s",
        (after_seq, limit),
    )
    return [(int(r[0]), str(r[1]), bytes(r[2])) for r in await cur.fetchall()]


async def unpark(conn: AsyncConnection[Any], stream_seqs: Sequence[int]) -> None:
    """Forget parked messages that have applied since."""
    await conn.execute(
        "DELETE FROM parked_messages WHERE stream_seq = ANY(%s)", (list(stream_seqs),)
    )


async def parked_summary(conn: AsyncConnection[Any]) -> tuple[int, datetime | None]:
    """How many messages are parked, and since when (the oldest one's parking time)."""
    cur = await conn.execute("SELECT count(*), min(parked_at) FROM parked_messages")
    row = await cur.fetchone()
    return (0, None) if row is None else (int(row[0]), row[1])


async def segments_seen(
    conn: AsyncConnection[Any], board_id: str, window: str, period: str, limit: int
) -> list[str]:
    """The segments ("dim:value") of a board period that ever held an entry in the durable
    copy, at most ``limit`` of them (by the primary key's index)."""
    cur = await conn.execute(
        "SELECT segment FROM periods_seen WHERE board_id = %s AND win = %s AND period = %s"
        " AND segment <> '' ORDER BY segment LIMIT %s",
        (board_id, window, period, limit),
    )
    return [r[0] for r in await cur.fetchall()]


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


def shard_sql(player: str) -> str:
    """SQL for a player's shard on a board of ``%(n)s`` shards, as redis_keys.shard_of
    computes it (the first 4 bytes of the id's MD5, big-endian, modulo the shards)."""
    return f"(('x' || left(md5({player}), 8))::bit(32)::bigint %% %(n)s)"


# Narrows a period's rows to one shard's: ``%(n)s`` = 0 for every row.
SHARD_FILTER = f" AND (%(n)s = 0 OR {shard_sql('player_id')} = %(k)s)"


def _resp_fragment(score: str, member: str) -> str:
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
        f"SELECT count(*), string_agg({_resp_fragment(score, member)}, ''),"
        f" max({first}), max({second}) FILTER (WHERE rn = %(size)s)"
        f" FROM (SELECT *, row_number() OVER (ORDER BY {first}, {second}) AS rn"
        f"  FROM {table} WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s"
        f"  AND segment = %(s)s{SHARD_FILTER}"
        f"  AND ({first}, {second}) > (%(c1)s, %(c2)s) {where}"
        f"  ORDER BY {first}, {second} LIMIT %(size)s) page"
    )


def member_sql(player: str, achieved_ms: str) -> str:
    """SQL for an entry's sorted-set member, as codec.member builds it: the reversed,
    clamped time in base 64 (chr(48)..chr(111)), STAMP_WIDTH characters, then the id."""
    value = f"({STAMP_MAX}::bigint - {_stamp_offset(achieved_ms)})"
    digits = " || ".join(
        f"chr(48 + (({value} >> {6 * i}) & 63)::int)" for i in range(STAMP_WIDTH - 1, -1, -1)
    )
    return f"({digits} || {player})"


def redis_order_sql(player: str, achieved_ms: str, composite: str) -> str:
    """SQL ORDER BY terms for Redis's order of a period's entries, best first (equal
    composites: members in descending byte order)."""
    return f'{composite} DESC, {member_sql(player, achieved_ms)} COLLATE "C" DESC'


def entry_member_sql(alias: str = "") -> str:
    """SQL for an entry's sorted-set member as the submit scripts write it, for a row of
    player_best (``alias``: its table alias with the dot). The one-period pages and the
    batched small periods both load members from here, so they cannot differ."""
    return member_sql(f"{alias}player_id", f"{alias}achieved_ms")


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
# A shard's hashes are folded (redis_keys.SHARD_TIME_BUCKETS): ``%(n)s`` > 0 folds.
_BUCKET = "(CASE WHEN %(n)s = 0 THEN time_bucket ELSE time_bucket %% 4093 END)"
TIME_GROUPS_SQL = (
    f"SELECT {_BUCKET}, count(*),"
    f" string_agg({_resp_fragment('player_id', 'achieved_ms::text')}, '')"
    " FROM player_best"
    " WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s AND segment = %(s)s"
    f"{SHARD_FILTER}"
    " GROUP BY 1"
)


async def time_groups(
    conn: AsyncConnection[Any],
    key: PeriodKey,
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
    f"SELECT k, count(*), string_agg({_resp_fragment('composite::text', entry_member_sql())},"
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
    f"SELECT {shard_sql('player_id')} AS k, time_bucket %% 4093, count(*),"
    f" string_agg({_resp_fragment('player_id', 'achieved_ms::text')}, '')"
    " FROM player_best"
    " WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s AND segment = %(s)s"
    " GROUP BY 1, 2"
)


async def sharded_pages(
    conn: AsyncConnection[Any], key: PeriodKey, shards: int, size: int = 20_000
) -> AsyncIterator[list[tuple[int, int, bytes]]]:
    """A sharded period's pages: [(shard, members, RESP arguments with chr(1) for CR LF)]."""
    cursor: tuple[Any, Any] = (-1, "")
    while True:
        params = {"b": key[0], "w": key[1], "p": key[2], "s": key[3], "n": shards}
        cur = await conn.execute(
            SHARDED_ENTRY_PAGE_SQL, {**params, "c1": cursor[0], "c2": cursor[1], "size": size}
        )
        rows = await cur.fetchall()
        members = sum(int(r[1]) for r in rows)
        if not members:
            return
        yield [(int(r[0]), int(r[1]), r[2].encode()) for r in rows]
        if members < size:
            return
        cursor = next((r[3], r[4]) for r in rows if r[3] is not None)


async def sharded_time_groups(
    conn: AsyncConnection[Any], key: PeriodKey, shards: int, size: int = 2_000
) -> AsyncIterator[tuple[int, int, int, bytes]]:
    """(shard, bucket, members, arguments) of every exact-times hash of a sharded period,
    through a server-side cursor (needs a transaction)."""
    params = {"b": key[0], "w": key[1], "p": key[2], "s": key[3], "n": shards}
    async with conn.cursor(name="rankd_sharded_time_groups") as named:
        await named.execute(SHARDED_TIME_GROUPS_SQL, params)
        while rows := await named.fetchmany(size):
            for shard, bucket, count, arguments in rows:
                yield int(shard), int(bucket), int(count), arguments.encode()


# A slice of a period, composite in [lo, hi], for the parallel rebuild (services/
# parallel_rebuild.py): its pages as SHARDED_ENTRY_PAGE_SQL reads them (shard 0 for every
# row when ``%(n)s`` = 0, an unsharded period), and its exact times per shard and bucket.
_SLICE_SHARD = f"CASE WHEN %(n)s = 0 THEN 0 ELSE {shard_sql('player_id')} END"
_SLICE_WHERE = (
    " WHERE board_id = %(b)s AND win = %(w)s AND period = %(p)s AND segment = %(s)s"
    " AND composite BETWEEN %(lo)s AND %(hi)s"
)
SLICE_ENTRY_PAGE_SQL = (
    f"SELECT k, count(*), string_agg({_resp_fragment('composite::text', entry_member_sql())},"
    " ''), max(composite) FILTER (WHERE rn = %(size)s),"
    " max(player_id) FILTER (WHERE rn = %(size)s)"
    " FROM (SELECT *, row_number() OVER (ORDER BY composite, player_id) AS rn,"
    f"  {_SLICE_SHARD} AS k FROM player_best{_SLICE_WHERE}"
    "  AND (composite, player_id) > (%(c1)s, %(c2)s)"
    "  ORDER BY composite, player_id LIMIT %(size)s) page GROUP BY k"
)
SLICE_TIME_GROUPS_SQL = (
    f"SELECT {_SLICE_SHARD} AS k, {_BUCKET}, count(*),"
    f" string_agg({_resp_fragment('player_id', 'achieved_ms::text')}, '')"
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
    cursor: tuple[Any, Any] = (bounds[0], "")
    params = {"b": key[0], "w": key[1], "p": key[2], "s": key[3], "n": shards}
    params |= {"lo": bounds[0], "hi": bounds[1], "size": size}
    while True:
        cur = await conn.execute(SLICE_ENTRY_PAGE_SQL, {**params, "c1": cursor[0], "c2": cursor[1]})
        rows = await cur.fetchall()
        members = sum(int(r[1]) for r in rows)
        if not members:
            return
        yield [(int(r[0]), int(r[1]), r[2].encode()) for r in rows]
        if members < size:
            return
        cursor = next((r[3], r[4]) for r in rows if r[3] is not None)


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
    f" string_agg({_resp_fragment('e.composite::text', entry_member_sql('e.'))}, ''"
    "  ORDER BY e.composite, e.player_id)"
    f"{_BATCH_JOIN} GROUP BY 1, 2, 3, 4"
)
BATCH_TIMES_SQL = (
    "SELECT e.board_id, e.win, e.period, e.segment, e.time_bucket, count(*),"
    f" string_agg({_resp_fragment('e.player_id', 'e.achieved_ms::text')}, '')"
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


async def pages(
    conn: AsyncConnection[Any],
    sql: str,
    key: PeriodKey,
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
