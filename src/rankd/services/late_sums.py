"""Late runs on a sum board's all-time window: counted once, however late they arrive.

Redis remembers a sum period's counted run ids only for a horizon (``sum_horizon_ms``, kept
three horizons long), which bounds its memory. For a run older than that, PostgreSQL
decides: inserting it into ``sum_runs`` either succeeds (new: its total is raised in the same
transaction) or conflicts (counted before). Redis then takes the count when the run is new,
or when it was first counted within two horizons (Redis may not have taken it yet, say the
service died between the two writes; if it has, the id is still in Redis and the script
counts nothing). The submit path and the log consumer settle late runs alike, so whichever
comes first counts the run and the other changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rankd.boards import BoardConfig
from rankd.errors import Deadlock
from rankd.periods import PeriodRef
from rankd.plan import Reply, Target, recently_counted
from rankd.stores import standings
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.redis.reads import Reads
from rankd.stores.redis.writes import Writes
from rankd.stores.standings import SumRun

# How long the submit path waits for a player's count lock (standings.count_once) once it
# holds the apply lock (for which it waits 2 s: a rebuild holds that one for long). The log
# consumer may hold a count lock for its whole batch, which can wait up to its mark wait
# (consumer_mark_wait_s, 2 s) for the submit path's marks on other boards before its
# commit: a 2 s wait here turned that into a rare 503 under load.
COUNT_LOCK_WAIT_MS = 8_000
# The submit path's own transaction may meet the log consumer's batch writing the same
# player's entry (a run within the horizon, counted without the count lock) and the same
# periods_seen row in the other order: PostgreSQL ends one of the two as a deadlock. The
# consumer retries its batch anyway; the submit tries its transaction again, this often.
DEADLOCK_TRIES = 3


async def settle(
    pg: PostgresStore,
    writes: Writes,
    reads: Reads,
    board: BoardConfig,
    targets: Sequence[Target],
    now_ms: int,
    conn: Conn | None = None,
) -> list[Reply | None]:
    """Settle ``targets`` (all ``late``); their replies, in their order (None: no entry
    to report). With ``conn``, the PostgreSQL writes join the caller's transaction (which
    holds the apply lock)."""
    if not targets:
        return []
    order = sorted(
        range(len(targets)),
        key=lambda i: (
            targets[i].window,
            targets[i].period.id,
            targets[i].segment,
            targets[i].run.player_id,
        ),
    )
    ordered = [targets[i] for i in order]
    if conn is None:
        for attempt in range(1, DEADLOCK_TRIES + 1):
            try:
                async with (
                    pg.request_slot(),
                    pg.apply_lock(exclusive=False, lock_timeout_s=2.0) as own,
                ):
                    await own.execute(f"SET LOCAL lock_timeout = '{COUNT_LOCK_WAIT_MS}ms'")
                    decided = await _count(own, board, ordered)
                break
            except Deadlock:
                # PostgreSQL rolled the whole transaction back: trying again is safe
                if attempt == DEADLOCK_TRIES:
                    raise
    else:
        decided = await _count(conn, board, ordered)
    send: list[tuple[int, Target]] = []  # (position in targets, the target as counted)
    replies: list[Reply | None] = [None] * len(targets)
    # improved, where Redis's own answer may not tell: this submission was counted first
    # in PostgreSQL (same receipt time) by the log consumer, or by this call while the
    # consumer, waiting on the count lock, wrote that same count to Redis between this
    # call's commit and its Redis write (the script then answers counted 3). Redis saw
    # the change on the other path; PostgreSQL's view of whether that count changed the
    # entry is the one left. The consumer's is exact (it applies the log in order); the
    # submit path's may miss a run within the horizon still on its way through the log.
    # Only the first copy of a run in one batch claims it.
    first_count: dict[int, tuple[bool, bool]] = {}  # position: (counted now, changed)
    claimed: set[tuple[str, str, str, str, str]] = set()
    for i, (new, counted_ms, changed) in zip(order, decided, strict=True):
        target = targets[i]
        run = target.run
        copy = (target.window, target.period.id, target.segment, run.player_id, run.run_id)
        if counted_ms == run.received_at_ms and copy not in claimed:
            first_count[i] = (new, changed)
        claimed.add(copy)
        if new or recently_counted(board, counted_ms, now_ms):
            send.append((i, replace(target, counted_ms=counted_ms or now_ms)))
    if send:
        sent = await writes.apply(board, [[t] for _, t in send], ranked=True)
        # a resharding's other layout too (the script counts a run once there as well)
        await writes.apply_other(board, [[t] for _, t in send], consumer=conn is not None)
        for (i, _), [reply] in zip(send, sent, strict=True):
            if reply is not None:
                improved, rank, stored, counted, achieved, *before = reply
                if i in first_count:
                    new, changed = first_count[i]
                    if not new or counted == 3:
                        improved = int(changed)
                replies[i] = (improved, rank, stored, counted, achieved, *before)  # type: ignore[assignment]
    for i in order:
        if replies[i] is None:
            # counted long ago: Redis holds the total already; report the entry as it is
            target = targets[i]
            ref = PeriodRef(board.board_id, target.window, target.period.id, target.segment)
            held, _ = await reads.entry(ref, target.run.player_id)
            if held is not None:
                composite, rank0, achieved_ms = held
                # unchanged by this call: before is as after
                replies[i] = (
                    0,
                    rank0 + 1,
                    composite,
                    1,
                    achieved_ms,
                    rank0 + 1,
                    composite,
                    achieved_ms,
                )
    return replies


async def _count(
    conn: Conn, board: BoardConfig, targets: Sequence[Target]
) -> list[tuple[bool, int, bool]]:
    decided = []
    for t in targets:
        key = PeriodRef(board.board_id, t.window, t.period.id, t.segment)
        r = t.run
        run = SumRun(
            r.run_id, r.player_id, r.score, r.ended_at_ms, r.received_at_ms, r.metadata or None
        )
        decided.append(await standings.count_once(conn, key, board, run))
    return decided
