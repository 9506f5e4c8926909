"""The log consumer: a durable pull consumer of the run log shared by every service instance.

Each instance pulls batches from the same durable consumer, applies them (Redis, then the
PostgreSQL copy, see applier.py) and acks only after PostgreSQL commits. A failure leaves
the batch unacked; the log redelivers it after a backoff, a bounded number of times. A
message that can never apply is parked by the applier and acked. Every lag refresh also records
the ack floor in Redis as how far the log is applied (services/rebuild/restart.py). The consumer
also keeps the lag gauges (pending, oldest unacked, parked) that /metrics and /readyz report; the
parked count comes from PostgreSQL, so every instance reports every instance's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rankd import metrics
from rankd.aio import stop_tasks
from rankd.formats import format_time
from rankd.runs import decode_message
from rankd.services.applier import Applier, Outcome
from rankd.services.log_loop import apply_log
from rankd.stores import standings
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.positions import Positions
from rankd.stores.runlog import Durable, LogMessage, LogSubscription, RunLog

logger = logging.getLogger("rankd.consumer")

DURABLE = "rankd-applier"


def progress_every_s(backoff_s: Sequence[float]) -> float:
    """How often a batch still applying is reported to the log: a quarter of its ack wait,
    which JetStream takes from the consumer's first backoff (30 s without one)."""
    return max(0.05, (backoff_s[0] if backoff_s else 30.0) / 4)


@dataclass
class Lag:
    pending: int = 0
    ack_pending: int = 0
    oldest_unacked_s: float = 0.0
    ack_floor: int = 0
    parked: int = 0  # messages in parked_messages, from any instance
    parked_since: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "pending": self.pending,
            "ack_pending": self.ack_pending,
            "oldest_unacked_seconds": round(self.oldest_unacked_s, 3),
            "parked": self.parked,
            "parked_since": self._since(),
        }

    def _since(self) -> str | None:
        since = self.parked_since
        return None if since is None else format_time(int(since.timestamp() * 1000))

    def problems(self, max_lag_s: float) -> list[str]:
        """Why the durable copy is not keeping up, if it is not."""
        found = []
        if self.oldest_unacked_s > max_lag_s:
            found.append(
                f"the PostgreSQL copy is {self.oldest_unacked_s:.0f}s behind the log"
                f" (more than {max_lag_s:g}s)"
            )
        if self.parked:
            since = "" if self.parked_since is None else f" since {self._since()}"
            found.append(
                f"{self.parked} log message(s) parked{since}: they could not apply; see"
                " parked_messages, fix, then `rankd replay --parked`"
            )
        return found


async def applied_through(runlog: RunLog) -> int | None:
    """When (receipt time, ms) the oldest logged run not yet applied by the shared consumer
    was received; None when every logged run has been applied.

    Every run received before that time is in Redis and PostgreSQL. The season job freezes
    a period only once this is past the period's grace, so no accepted run misses its
    archive. Reads the ack floor, which is conservative: runs acked out of order count as
    waiting until everything before them is acked. Raises LogUnavailable when the log
    cannot tell (the job then freezes nothing).
    """
    lag = await runlog.lag(DURABLE)
    if lag.caught_up:
        return None
    if lag.oldest_unacked is None:
        return 0
    _, runs = decode_message(lag.oldest_unacked)
    return min((r.received_at_ms for r in runs), default=0)


class Quiet:
    """Exceptions a background loop carries on past, logged: each kind once (a warning) until
    the work succeeds again, so stale lag gauges are noticed without a flood of lines."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.seen: set[str] = set()

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            kind = type(exc).__name__
            if kind not in self.seen:
                self.seen.add(kind)
                logger.warning(
                    "%s failed (again quietly until it works): %s: %s", self.what, kind, exc
                )
            else:
                logger.debug("%s failed: %s: %s", self.what, kind, exc)
        else:
            self.seen.clear()


class LogConsumer:
    def __init__(
        self,
        runlog: RunLog,
        applier: Applier,
        pg: PostgresStore,
        positions: Positions,
        durable: Durable,
        *,
        batch: int = 100,
        lag_refresh_s: float = 2.0,
    ) -> None:
        self.runlog = runlog
        self.applier = applier
        self.pg = pg
        self.positions = positions
        # what the background loops swallow, logged once per kind (see Quiet)
        self._quiet = {
            "close": Quiet("log consumer: closing its subscription"),
            "parked": Quiet("log consumer: counting parked runs"),
            "lag": Quiet("log consumer: refreshing the lag gauges and log position"),
        }
        self.durable = durable
        self.batch = batch
        self.lag_refresh_s = lag_refresh_s
        self.lag = Lag()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._run(), name="log-consumer"),
            asyncio.create_task(self._watch_lag(), name="log-consumer-lag"),
        ]

    async def stop(self, timeout_s: float = 5.0) -> list[str]:
        """Stop the consumer's tasks, waiting at most ``timeout_s``; the names of any that
        did not stop."""
        self._stopping.set()
        stuck = await stop_tasks(self._tasks, timeout_s)
        self._tasks.clear()
        return stuck

    async def _run(self) -> None:
        retry_s = 0.5

        def applied(_messages: list[LogMessage], _outcome: Outcome) -> None:
            nonlocal retry_s
            retry_s = 0.5

        sub: LogSubscription | None = None
        try:
            while not self._stopping.is_set():
                try:
                    if sub is None:
                        sub = await self.runlog.subscribe(self.durable)
                    await apply_log(
                        sub,
                        self.applier,
                        batch=self.batch,
                        fetch_timeout_s=1.0,
                        stop=self._stopping,
                        on_batch=applied,
                        progress_every_s=progress_every_s(self.durable.backoff_s),
                    )
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    logger.warning(
                        "log consumer: %s: %s; retrying in %.1fs", type(exc).__name__, exc, retry_s
                    )
                    await asyncio.sleep(retry_s)
                    # short: the consumer is what readiness waits for after an outage
                    retry_s = min(retry_s * 2, 2.0)
        finally:
            if sub is not None:
                with self._quiet["close"]():
                    await sub.close()

    async def refresh_lag(self) -> Lag:
        state = await self.runlog.lag(self.durable.name)
        lag = Lag(
            pending=state.pending,
            ack_pending=state.ack_pending,
            ack_floor=state.ack_floor,
            parked=self.lag.parked,
            parked_since=self.lag.parked_since,
        )
        if state.oldest_unacked is not None:
            with contextlib.suppress(ValueError):
                _, runs = decode_message(state.oldest_unacked)
                if runs:
                    lag.oldest_unacked_s = max(0.0, time.time() - runs[0].received_at_ms / 1000)
        # PostgreSQL down: keep the last count (/readyz names PostgreSQL down anyway)
        with self._quiet["parked"]():
            async with self.pg.pool.connection(timeout=2) as conn:
                lag.parked, lag.parked_since = await standings.parked_summary(conn)
        self.lag = lag
        metrics.PARKED.set(lag.parked)
        metrics.CONSUMER_PENDING.set(lag.pending)
        metrics.CONSUMER_ACK_PENDING.set(lag.ack_pending)
        metrics.CONSUMER_OLDEST_UNACKED.set(lag.oldest_unacked_s)
        return lag

    async def record_position(self, ack_floor: int) -> None:
        """Record in Redis that the log is applied through ``ack_floor``: every message up
        to it was applied to Redis before it was acked, so a restarted Redis that kept
        this record needs only the log after it (services/rebuild/restart.py)."""
        if ack_floor > 0:
            replies = await self.positions.record_position(ack_floor, int(time.time() * 1000))
            if -1 in replies:
                logger.debug("log position %d not recorded: Redis is not verified", ack_floor)

    async def _watch_lag(self) -> None:
        while not self._stopping.is_set():
            with self._quiet["lag"]():
                lag = await self.refresh_lag()
                await self.record_position(lag.ack_floor)
            await asyncio.sleep(self.lag_refresh_s)
