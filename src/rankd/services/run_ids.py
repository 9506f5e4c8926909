"""The run-id registry: a run_id resent with other content is refused, never logged.

The log's truth is first writer wins: the first send of a run id on a board fixes its
player, score and ended_at; a later send with another player or score, or with another
ended_at when both sends carried one, is refused with 409 ``run_conflict`` for as long as
the registry remembers the run. Two places keep it:

- Redis (the fast path): per board, hashes bucketed by receipt time, run_id -> fingerprint,
  in the board's hash tag (run_ids.lua). Every submit checks and claims its runs in one
  call *before* logging them, so conflicting content never enters the log and an accepted
  resend carries exactly the first send's content (a resend without ended_at takes the
  first send's, given or defaulted). A bucket is ``memory_s / 4`` long and expires
  ``memory_s`` after it ends: a run is remembered at least ``memory_s`` and at most
  1.25 times ``memory_s`` after its first receipt (24 to 30 hours by default).
- PostgreSQL (the durable side): the log consumer records each run id's first logged
  content in ``run_fingerprints`` and applies nowhere a run whose id is recorded with
  another player or score first received less than ``memory_s`` before it (log order
  decides, so every consumer and replay decides alike). Redis remembers at least as long,
  so whatever Redis let through, PostgreSQL takes too, and the stores agree.

A Redis that lost the registry (flushed, restarted, failed over) lacks the board's armed
marker (a rebuild after a restart removes the markers of every board): the next submit to
the board restores its registry from ``run_fingerprints`` and the log's tail that the
consumer has not applied yet, then arms it, before claiming anything. A restored entry
compares ended_at as the first claim did: the log does not say whether the first send
carried one, but a defaulted ended_at is the receipt time to the millisecond.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from rankd import metrics
from rankd.errors import RunConflict
from rankd.formats import clip
from rankd.runs import Run, decode_message
from rankd.stores import fingerprints
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.admission import Admission
from rankd.stores.runlog import RunLog

logger = logging.getLogger("rankd.run_ids")

# Restoring reads the log from the consumer's ack floor: at most this many messages a fetch.
_TAIL_FETCH = 1000


def conflict_message(run_id: str) -> str:
    return (
        f"run_id {clip(run_id)!r} was already sent on this board with another player_id,"
        " score or ended_at; send a new run_id for a new run"
    )


class RunIds:
    def __init__(
        self,
        store: Admission,
        pg: PostgresStore,
        runlog: RunLog,
        *,
        memory_s: float = 86_400.0,
        durable: str = "rankd-applier",
    ) -> None:
        self.store = store
        self.pg = pg
        self.runlog = runlog
        self.memory_ms = int(memory_s * 1000)
        self.bucket_ms = max(1, self.memory_ms // 4)
        self.durable = durable
        self._restoring: dict[str, asyncio.Lock] = {}

    def buckets(self, now_ms: int) -> list[int]:
        """The buckets a run received at ``now_ms`` is looked up in, the current first."""
        current = now_ms // self.bucket_ms
        return [current - k for k in range(5)]  # 4 buckets make memory_s, plus the current

    def expire_at_s(self, bucket: int) -> int:
        return ((bucket + 1) * self.bucket_ms + self.memory_ms) // 1000 + 1

    async def claim(self, board_id: str, runs: Sequence[Run]) -> list[RunConflict | None]:
        """Check and claim ``runs`` (one receipt time); per run, a conflict or None. An
        accepted run takes the ended_at its run id was first logged with."""
        if not runs:
            return []
        now_ms = runs[0].received_at_ms
        buckets = self.buckets(now_ms)
        fields = [(r.run_id, r.player_id, r.score, r.ended_at_ms, r.ended_given) for r in runs]
        for _ in range(3):
            reply = await self.store.claim_run_ids(
                board_id, buckets, self.expire_at_s(buckets[0]), fields
            )
            if reply is not None:
                break
            await self.restore(board_id)
        else:
            raise AssertionError("the run-id registry did not stay armed")  # pragma: no cover
        out: list[RunConflict | None] = []
        for run, ended in zip(runs, reply, strict=True):
            if ended < 0:
                out.append(RunConflict(conflict_message(run.run_id)))
                metrics.RUN_CONFLICTS.inc()
            else:
                run.ended_at_ms = ended
                out.append(None)
        return out

    async def restore(self, board_id: str) -> int:
        """Refill the board's registry from PostgreSQL and the log's unapplied tail, then
        arm it. One restore per board at a time in this process; another instance's
        concurrent restore writes the same entries."""
        lock = self._restoring.setdefault(board_id, asyncio.Lock())
        async with lock:
            now_ms = int(time.time() * 1000)
            since = now_ms - self.memory_ms - self.bucket_ms
            entries: dict[str, tuple[int, str]] = {}  # run_id -> (received ms, fingerprint)
            # the tail first read, then PostgreSQL: a message the consumer applies between
            # the two reads is in one of them
            tail = await self._tail(board_id)
            async with self.pg.connection() as conn:
                for run_id, player, score, ended, received in await fingerprints.since(
                    conn, board_id, since
                ):
                    fingerprint = _fingerprint(player, score, ended, received)
                    entries.setdefault(run_id, (received, fingerprint))
            for run in tail:
                fingerprint = _fingerprint(
                    run.player_id, run.score, run.ended_at_ms, run.received_at_ms
                )
                entries.setdefault(run.run_id, (run.received_at_ms, fingerprint))
            by_bucket: dict[int, tuple[int, dict[str, str]]] = {}
            for run_id, (received, fingerprint) in entries.items():
                bucket = received // self.bucket_ms
                expire = self.expire_at_s(bucket)
                if expire * 1000 <= now_ms:
                    continue
                by_bucket.setdefault(bucket, (expire, {}))[1][run_id] = fingerprint
            await self.store.restore_run_ids(board_id, by_bucket)
            logger.info("restored the run-id registry of %s: %d runs", board_id, len(entries))
            return len(entries)

    async def _tail(self, board_id: str) -> list[Run]:
        """The board's runs in the log after the consumer's ack floor, in log order."""
        lag = await self.runlog.lag(self.durable)
        last = await self.runlog.last_sequence()
        if last <= lag.ack_floor:
            return []
        runs: list[Run] = []
        sub = await self.runlog.read_from(lag.ack_floor + 1)
        try:
            seen = lag.ack_floor
            while seen < last:
                messages = await sub.fetch(_TAIL_FETCH, 2.0)
                if not messages:
                    break
                for m in messages:
                    seen = max(seen, m.seq)
                    try:
                        board, message_runs = decode_message(m.data)
                    except ValueError:
                        continue  # parked by the consumer; it never applies
                    if board == board_id:
                        runs += message_runs
                await sub.ack(messages)
        finally:
            await sub.close()
        return runs


def _fingerprint(player_id: str, score: int, ended_ms: int, received_ms: int) -> str:
    # Whether the first send carried ended_at is not logged, but a defaulted one is its
    # receipt time to the ms: another ended_at marks one the client sent, compared as the
    # first claim compared it (a client's ended_at equal to its receipt ms is taken for a
    # default and not compared; either way a resend is logged with the first's ended_at)
    given = "0" if ended_ms == received_ms else "1"
    return f"{player_id}\t{score}\t{ended_ms}\t{given}"
