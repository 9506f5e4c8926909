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
from dataclasses import dataclass, field

from rankd import metrics
from rankd.boards import BoardConfig
from rankd.errors import BoardNotFound
from rankd.runs import decode_message
from rankd.services.registry import BoardRegistry
from rankd.services.submit import Submitter, Target, plan
from rankd.stores import standings
from rankd.stores.postgres import PostgresStore
from rankd.stores.runlog import LogMessage
from rankd.stores.standings import BestRow, StandingsBatch, SumRun

log = logging.getLogger("rankd.applier")


@dataclass
class Outcome:
    applied: list[int] = field(default_factory=list)
    parked: list[int] = field(default_factory=list)


def _collect(batch: StandingsBatch, board_id: str, targets: list[Target]) -> None:
    """Add what the durable copy must hold for ``targets`` (closed ones hold nothing)."""
    for t in targets:
        if t.disposition == "closed":
            continue
        key = (board_id, t.window, t.period.id)
        r = t.run
        if t.composite is not None:
            best = BestRow(r.player_id, t.composite, r.score, r.ended_at_ms, r.run_id)
            batch.add_best(key, t.period.start_ms, best)
        else:
            batch.add_sum(
                key, t.period.start_ms, SumRun(r.run_id, r.player_id, r.score, r.ended_at_ms)
            )


class Applier:
    def __init__(self, boards: BoardRegistry, submitter: Submitter, pg: PostgresStore) -> None:
        self.boards = boards
        self.submitter = submitter
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
        async with self.pg.pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (standings.APPLY_LOCK,))
            for board_id, board_plans in plans.items():
                await self.submitter.run_plans(configs[board_id], board_plans)
                _collect(batch, board_id, [t for p in board_plans for t in p])
            await standings.write(conn, batch)
            for message, reason in unusable:
                await standings.park(conn, message.seq, message.subject, reason, message.data)
                outcome.parked.append(message.seq)
        for message, reason in unusable:
            metrics.MESSAGES_PARKED.inc()
            log.error("parked log message %s (%s): %s", message.seq, message.subject, reason)
        metrics.RUNS_APPLIED.inc(sum(len(p) for p in plans.values()))
        return outcome
