"""The durable copy of the boards in PostgreSQL: ``player_best``, ``sum_runs``, parking.

Writes come from the log consumer in batches, sorted by key so concurrent consumers lock rows
in the same order. A ``best`` entry is a conditional max (``ON CONFLICT ... WHERE`` the new
composite is higher, or equal and reached earlier); a ``sum`` entry grows only by runs
whose id is new in ``sum_runs``. Both are idempotent, so a redelivered or replayed message
changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection

from rankd.boards import BoardConfig
from rankd.codec import stamp_offset
from rankd.periods import DAY_MS, ROLLING, PeriodRef, start_ms_of
from rankd.placement import time_bucket
from rankd.stores import rolling
from rankd.stores.order_sql import better_where_sql

# member_sql, shard_sql, ENTRY_PAGE_SQL and pages are named here too for the tests
# (test_standings.py, test_sharded.py, test_ties.py); they live in order_sql.py and
# rebuild/pages.py.
from rankd.stores.order_sql import member_sql as member_sql
from rankd.stores.order_sql import shard_sql as shard_sql
from rankd.stores.rebuild.pages import ENTRY_PAGE_SQL as ENTRY_PAGE_SQL
from rankd.stores.rebuild.pages import pages as pages


@dataclass(frozen=True, slots=True)
class BestRow:
    player_id: str
    composite: int
    score: int
    achieved_ms: int
    run_id: str
    metadata: str | None = None  # the run's metadata JSON


@dataclass(frozen=True, slots=True)
class SumRun:
    run_id: str
    player_id: str
    score: int
    ended_ms: int
    counted_ms: int = 0  # when it was received, which is when it is first counted
    metadata: str | None = None  # the run's metadata JSON: the entry's if it is the latest


PeriodKey = PeriodRef  # board, window, period, segment ("" for the global standings)


def _better(row: BestRow, held: BestRow | None) -> bool:
    """Whether ``row`` ranks before ``held``: a higher composite, or an equal one reached
    earlier (lua/lib.lua better)."""
    return held is None or (row.composite, -stamp_offset(row.achieved_ms)) > (
        held.composite,
        -stamp_offset(held.achieved_ms),
    )


@dataclass
class StandingsBatch:
    """What one consumer batch writes, grouped per board period."""

    best: dict[PeriodKey, dict[str, BestRow]]
    latest: dict[PeriodKey, dict[str, BestRow]]  # a latest window's: the run held
    sums: dict[PeriodKey, dict[str, SumRun]]  # by "<player>|<run_id>"
    periods: dict[PeriodKey, int]  # start_ms
    configs: dict[str, BoardConfig]
    # a rolling window's entries per day as well (stores/rolling.py): (key, day) -> best
    days: dict[tuple[PeriodKey, int], dict[str, BestRow]] = field(
        default_factory=lambda: defaultdict(dict)
    )

    @classmethod
    def empty(cls) -> StandingsBatch:
        return cls(defaultdict(dict), defaultdict(dict), defaultdict(dict), {}, {})

    def add_best(self, key: PeriodKey, start_ms: int, row: BestRow) -> None:
        self.periods[key] = start_ms
        if key.window == ROLLING:
            day = self.days[(key, row.achieved_ms // DAY_MS)]
            if _better(row, day.get(row.player_id)):
                day[row.player_id] = row
        if _better(row, self.best[key].get(row.player_id)):
            self.best[key][row.player_id] = row

    def add_latest(self, key: PeriodKey, start_ms: int, row: BestRow) -> None:
        """A latest window's entry: the run with the latest end, then the greater run id
        (byte order, as lua/submit_latest.lua compares them)."""
        self.periods[key] = start_ms
        held = self.latest[key].get(row.player_id)
        if held is None or (row.achieved_ms, row.run_id.encode()) > (
            held.achieved_ms,
            held.run_id.encode(),
        ):
            self.latest[key][row.player_id] = row

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
    if batch.days:
        await rolling.write_days(conn, batch.days)
    if batch.latest:
        await _write_best(conn, batch.latest, latest=True)
    for key in sorted(batch.sums):
        await _write_sums(conn, key, batch.configs[key[0]], list(batch.sums[key].values()))


async def _write_best(
    conn: AsyncConnection[Any], best: dict[PeriodKey, dict[str, BestRow]], *, latest: bool = False
) -> None:
    """Conditional max of every entry: COPY into a temporary table, then one upsert. The
    max of a ``latest`` window's entries is the run with the latest end (then the greater
    run id, in byte order: COLLATE "C"), not the best composite.

    Array parameters (unnest) cost psycopg a Python call per element, which the consumer's
    profile showed at 10% of the service; COPY rows cost far less. psycopg encodes each row,
    so ids holding tabs, newlines or backslashes (possible in a log message from elsewhere)
    are written as they are.
    """
    table = "latest_in" if latest else "best_in"  # one each: a batch may write both
    await conn.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {table} (board_id text, win text, period text,"
        " segment text, player_id text, composite bigint, score bigint, achieved_ms bigint,"
        " run_id text, time_bucket int, metadata text) ON COMMIT DELETE ROWS"
    )
    async with conn.cursor().copy(f"COPY {table} FROM STDIN") as copy:
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
                        e.metadata,
                    )
                )
    # sorted by key, so concurrent consumers lock rows in the same order
    await conn.execute(
        "INSERT INTO player_best (board_id, win, period, segment, player_id, composite, score,"
        " achieved_ms, run_id, time_bucket, metadata)"
        f" SELECT * FROM {table} ORDER BY board_id, win, period, segment, player_id"
        " ON CONFLICT (board_id, win, period, segment, player_id) DO UPDATE SET"
        "   composite = EXCLUDED.composite, score = EXCLUDED.score,"
        "   achieved_ms = EXCLUDED.achieved_ms, run_id = EXCLUDED.run_id,"
        "   metadata = EXCLUDED.metadata" + (_LATER if latest else _BETTER)
    )


_BETTER = better_where_sql("player_best")
# the later run (lua/lib.lua later)
_LATER = (
    ' WHERE (EXCLUDED.achieved_ms, EXCLUDED.run_id COLLATE "C")'
    '  > (player_best.achieved_ms, player_best.run_id COLLATE "C")'
)


async def _write_sums(
    conn: AsyncConnection[Any], key: PeriodKey, board: BoardConfig, runs: Sequence[SumRun]
) -> None:
    runs = sorted(runs, key=lambda r: (r.player_id, r.run_id))
    cur = await conn.execute(
        "INSERT INTO sum_runs"
        " (board_id, win, period, segment, run_id, player_id, score, ended_ms, counted_ms)"
        " SELECT %s, %s, %s, %s, *"
        " FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[])"
        " ON CONFLICT DO NOTHING RETURNING player_id, run_id, score, ended_ms",
        (
            *key,
            [r.run_id for r in runs],
            [r.player_id for r in runs],
            [r.score for r in runs],
            [r.ended_ms for r in runs],
            [r.counted_ms for r in runs],
        ),
    )
    metadata = {(r.player_id, r.run_id): r.metadata for r in runs if r.metadata}
    totals: dict[str, Total] = {}
    for player_id, run_id, score, ended_ms in await cur.fetchall():
        held = totals.setdefault(player_id, Total(0, ended_ms))
        held.score += score
        # the latest counted run's metadata (or none), as Redis keeps it
        if ended_ms >= held.at:
            held.at, held.metadata = ended_ms, metadata.get((player_id, run_id))
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
        total = Total(run.score, run.ended_ms, run.metadata)
        await _add_totals(conn, key, board, {run.player_id: total})
        after = await (await conn.execute(entry, (*key, run.player_id))).fetchone()
        changed = before != after
        if not changed:
            await conn.execute(
                "UPDATE sum_runs SET changed = false" + where_run, (*key, run.player_id, run.run_id)
            )
        await conn.execute(
            "INSERT INTO periods_seen (board_id, win, period, segment, start_ms)"
            " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            (*key, start_ms_of(key[1], key[2])),
        )
        return True, run.counted_ms, changed
    cur = await conn.execute(
        "SELECT counted_ms, changed FROM sum_runs" + where_run, (*key, run.player_id, run.run_id)
    )
    row = await cur.fetchone()
    return False, int(row[0]) if row else 0, bool(row[1]) if row else False


@dataclass(slots=True)
class Total:
    """A player's newly counted runs in one sum period: their scores added, the latest end
    and that run's metadata."""

    score: int
    at: int
    metadata: str | None = None


async def _add_totals(
    conn: AsyncConnection[Any], key: PeriodKey, board: BoardConfig, totals: dict[str, Total]
) -> None:
    """Add newly counted runs' (score, latest end) per player to their sum entries; an
    entry takes the metadata of its latest counted run."""
    if not totals:
        return
    players = sorted(totals)
    codec = board.codecs[key[1]]
    start = start_ms_of(key[1], key[2])

    def composite(total: str, at: str) -> str:
        """The codec's packing in SQL (see codec.py): score part over reversed time units."""
        score_key = f"(%(max)s - {total})" if board.order == "asc" else f"({total})"
        return f"{score_key} * %(mult)s + (%(mult)s - 1 - ({at} - %(start)s) / %(res)s)"

    # New totals saturate at max_score; the time is the latest counted run's.
    new_total = "LEAST(player_best.score + EXCLUDED.score, %(max)s)"
    new_at = "GREATEST(player_best.achieved_ms, EXCLUDED.achieved_ms)"
    await conn.execute(
        "INSERT INTO player_best (board_id, win, period, segment, player_id, composite, score,"
        " achieved_ms, run_id, time_bucket, metadata)"
        f" SELECT %(b)s, %(w)s, %(p)s, %(s)s, u.player,"
        f"  {composite('LEAST(u.total, %(max)s)', 'u.at')}, LEAST(u.total, %(max)s), u.at, '',"
        "  u.bucket, u.meta"
        " FROM unnest(%(players)s::text[], %(totals)s::bigint[], %(ats)s::bigint[],"
        "  %(buckets)s::int[], %(metas)s::text[]) AS u(player, total, at, bucket, meta)"
        " ON CONFLICT (board_id, win, period, segment, player_id) DO UPDATE SET"
        f"  score = {new_total}, achieved_ms = {new_at},"
        f"  composite = {composite(new_total, new_at)},"
        # Redis's rule (lua/submit_sum.lua): a run at or after the latest brings its own
        "  metadata = CASE WHEN EXCLUDED.achieved_ms >= player_best.achieved_ms"
        "   THEN EXCLUDED.metadata ELSE player_best.metadata END",
        {
            "b": key[0],
            "w": key[1],
            "p": key[2],
            "s": key[3],
            "players": players,
            "totals": [totals[p].score for p in players],
            "ats": [totals[p].at for p in players],
            "metas": [totals[p].metadata for p in players],
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
