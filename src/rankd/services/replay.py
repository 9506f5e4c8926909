"""Re-apply the log to Redis and PostgreSQL from a sequence number (``rankd replay``), or
the parked messages once whatever kept them from applying is fixed (``--parked``).

Every application is idempotent (a max, or a sum keyed by run id), so replaying any part of
the log, any number of times, leaves the boards as they were.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rankd.services.applier import Applier, Outcome
from rankd.services.log_loop import apply_log
from rankd.stores import standings
from rankd.stores.postgres import PostgresStore
from rankd.stores.runlog import LogMessage, RunLog


@dataclass
class ReplayReport:
    messages: int = 0
    parked: int = 0
    last_sequence: int = 0
    seconds: float = 0.0


async def replay(
    runlog: RunLog,
    applier: Applier,
    from_sequence: int = 1,
    progress: Callable[[int], None] | None = None,
    *,
    batch: int = 1000,
) -> ReplayReport:
    started = time.perf_counter()
    report = ReplayReport(last_sequence=await runlog.last_sequence())
    if from_sequence > report.last_sequence:
        return report

    def count(messages: list[LogMessage], outcome: Outcome) -> None:
        report.messages += len(messages)
        report.parked += len(outcome.parked)
        if progress is not None:
            progress(len(messages))

    async def more_to_come(seen: int) -> bool:
        found = await runlog.received_at(max(seen + 1, from_sequence))
        return found is not None and found[0] <= report.last_sequence

    sub = await runlog.read_from(from_sequence)
    try:
        await apply_log(
            sub,
            applier,
            batch=batch,
            fetch_timeout_s=2.0,
            until=report.last_sequence,
            on_batch=count,
            progress_every_s=10.0,  # the private reader's ack wait is JetStream's 30 s
            more_to_come=more_to_come,
        )
    finally:
        await sub.close()
    report.seconds = time.perf_counter() - started
    return report


@dataclass
class ParkedReport:
    messages: int = 0  # parked messages tried
    applied: int = 0  # applied now, so no longer parked
    still_parked: int = 0  # failed again; parked with the new error
    seconds: float = 0.0


async def replay_parked(
    applier: Applier,
    pg: PostgresStore,
    progress: Callable[[int], None] | None = None,
    *,
    batch: int = 1000,
) -> ParkedReport:
    """Apply every parked message again through the applier; forget the ones that apply.

    One that still fails is parked again by the applier, with the new error. A transient
    failure stops the replay with the rest still parked (nothing is lost; run it again).
    """
    started = time.perf_counter()
    report = ParkedReport()
    after = 0
    while True:
        async with pg.pool.connection() as conn:
            rows = await standings.parked(conn, after, batch)
        if not rows:
            break
        outcome = await applier.apply([LogMessage(*row) for row in rows])
        async with pg.pool.connection() as conn:
            await standings.unpark(conn, outcome.applied)
        report.messages += len(rows)
        report.applied += len(outcome.applied)
        report.still_parked += len(outcome.parked)
        after = rows[-1][0]
        if progress is not None:
            progress(len(rows))
    report.seconds = time.perf_counter() - started
    return report
