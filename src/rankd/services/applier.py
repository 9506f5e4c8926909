"""Applies logged runs to Redis and PostgreSQL, idempotently.

Used by the log consumer and by ``rankd replay``. For a batch of log messages it runs the
same Lua scripts the submit path ran (a max, or a sum keyed by run id, so a second
application changes nothing) and writes the durable copy, all inside one PostgreSQL
transaction that holds the apply lock in shared mode (see stores/standings.py). A message
that can never apply (malformed, unknown board) is parked, not retried.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from nats.aio.msg import Msg

from rankd import metrics
from rankd.boards import BoardConfig
from rankd.errors import BoardNotFound
from rankd.periods import PeriodRef
from rankd.plan import Target, plan
from rankd.runs import decode_message
from rankd.services import late_sums
from rankd.services.registry import BoardRegistry
from rankd.stores import standings
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis_store import RedisStore
from rankd.stores.standings import BestRow, StandingsBatch, SumRun

log = logging.getLogger("rankd.applier")


@dataclass(frozen=True, slots=True)
class LogMessage:
    seq: int
    subject: str
    data: bytes


def log_messages(msgs: Sequence[Msg]) -> list[LogMessage]:
    """JetStream messages as the applier takes them (consumer and replay alike)."""
    return [LogMessage(int(m.metadata.sequence.stream), m.subject, m.data) for m in msgs]


@dataclass
class Outcome:
    applied: list[int] = field(default_factory=list)
    parked: list[int] = field(default_factory=list)


def _collect(batch: StandingsBatch, board_id: str, targets: list[Target]) -> None:
    """Add what the durable copy must hold for ``targets`` (closed ones hold nothing; late
    ones were counted by late_sums.settle)."""
    for t in targets:
        if t.disposition in ("closed", "late"):
            continue
        key = PeriodRef(board_id, t.window, t.period.id, t.segment)
        r = t.run
        if t.composite is not None:
            best = BestRow(r.player_id, t.composite, r.score, r.ended_at_ms, r.run_id)
            batch.add_best(key, t.period.start_ms, best)
        else:
            run = SumRun(r.run_id, r.player_id, r.score, r.ended_at_ms, r.received_at_ms)
            batch.add_sum(key, t.period.start_ms, run)


class Applier:
    def __init__(self, boards: BoardRegistry, store: RedisStore, pg: PostgresStore) -> None:
        self.boards = boards
        self.store = store
        self.pg = pg

    async def _plan(
        self, messages: list[LogMessage], now_ms: int, outcome: Outcome
    ) -> tuple[dict[str, BoardConfig], dict[str, list[list[Target]]], list[tuple[LogMessage, str]]]:
        """Decode and plan every message; ones that can never apply go to ``unusable``."""
        configs: dict[str, BoardConfig] = {}
        plans: dict[str, list[list[Target]]] = defaultdict(list)
        unusable: list[tuple[LogMessage, str]] = []
        for message in messages:
            try:
                board_id, runs = decode_message(message.data)
                if board_id not in configs:
                    configs[board_id] = await self.boards.get(board_id)
                # a run the board cannot hold (CodecError is a ValueError) parks the message
                message_plans = [plan(configs[board_id], run, now_ms) for run in runs]
            except (ValueError, BoardNotFound) as exc:
                unusable.append((message, str(exc)))
                continue
            plans[board_id].extend(message_plans)
            outcome.applied.append(message.seq)
        return configs, plans, unusable

    async def apply(self, messages: list[LogMessage]) -> Outcome:
        """Apply ``messages``; raises on a transient failure (nothing acked, retry later)."""
        outcome = Outcome()
        now_ms = int(time.time() * 1000)
        configs, plans, unusable = await self._plan(messages, now_ms, outcome)
        batch = StandingsBatch.empty()
        batch.configs.update(configs)
        async with self.pg.apply_lock(exclusive=False) as conn:
            for board_id, board_plans in plans.items():
                config = configs[board_id]
                await self.store.apply(config, board_plans)
                targets = [t for p in board_plans for t in p]
                late = [t for t in targets if t.disposition == "late"]
                await late_sums.settle(self.pg, self.store, config, late, now_ms, conn)
                _collect(batch, board_id, targets)
            await standings.write(conn, batch)
            for message, reason in unusable:
                await standings.park(conn, message.seq, message.subject, reason, message.data)
                outcome.parked.append(message.seq)
        for message, reason in unusable:
            metrics.MESSAGES_PARKED.inc()
            log.error("parked log message %s (%s): %s", message.seq, message.subject, reason)
        metrics.RUNS_APPLIED.inc(sum(len(p) for p in plans.values()))
        return outcome
