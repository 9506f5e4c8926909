"""Applies logged runs to Redis and PostgreSQL, idempotently.

Used by the log consumer and by ``rankd replay``. For a batch of log messages it runs the
same Lua scripts the submit path ran (a max, or a sum keyed by run id, so a second
application changes nothing) and writes the durable copy, all inside one PostgreSQL
transaction that holds the apply lock in shared mode (see stores/standings.py).

A message that can never apply is parked (kept in PostgreSQL with its payload and the
error, for ``rankd replay --parked``), not retried: one that cannot be decoded or planned
(malformed, unknown board, a run the board cannot hold) at once; one whose batch fails in
the stores is found by applying the batch in halves until it fails on its own. A failure
of the stores themselves (``is_transient``) parks nothing: the batch is raised back to the
log, which delivers it again.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from rankd import metrics
from rankd.boards import BoardConfig
from rankd.errors import BoardNotFound, is_transient
from rankd.formats import clip, is_board_id
from rankd.periods import PeriodRef
from rankd.plan import Target, Visibility, plan
from rankd.runs import decode_batch
from rankd.services.leagues import Leagues, carried_placements
from rankd.services.moderation import Moderation
from rankd.services.rebuild.repairs import busy_in
from rankd.services.registry import BoardRegistry
from rankd.services.tournaments import counted_runs, readmit
from rankd.services.write_pipeline import WritePipeline
from rankd.stores import corrections, deletions, fingerprints, standings
from rankd.stores import tournaments as tournaments_db
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.redis.leagues import LeagueKeys
from rankd.stores.redis.marks import Marks
from rankd.stores.redis.reads import Reads
from rankd.stores.redis.tournaments import TournamentKeys
from rankd.stores.redis.writes import Writes
from rankd.stores.runlog import LogMessage
from rankd.stores.standings import BestRow, StandingsBatch, SumRun

logger = logging.getLogger("rankd.applier")


@dataclass
class Outcome:
    applied: list[int] = field(default_factory=list)
    parked: list[int] = field(default_factory=list)
    # not applied yet: their board's period refuses writes for now (a rebuild's lease, or
    # a torn period being repaired); not to be acked, so the log delivers them again
    deferred: list[int] = field(default_factory=list)

    def extend(self, other: Outcome) -> Outcome:
        self.applied += other.applied
        self.parked += other.parked
        self.deferred += other.deferred
        return self


def _board_of(message: LogMessage) -> str | None:
    """The board a log message's runs are for; None for one that cannot be decoded."""
    try:
        return decode_batch(message.data)[0]
    except (ValueError, ArithmeticError):
        return None


def _collect(batch: StandingsBatch, board_id: str, targets: list[Target]) -> None:
    """Add what the durable copy must hold for ``targets`` (closed ones hold nothing; late
    ones were counted by late_sums.settle)."""
    for t in targets:
        if t.disposition in ("closed", "late", "not_open", "refused") or t.side == "pending":
            continue  # a held run enters the durable copy when approved
        key = PeriodRef(board_id, t.window, t.period.id, t.segment)
        r = t.run
        if t.composite is not None:
            meta = r.metadata or None
            best = BestRow(r.player_id, t.composite, r.score, r.ended_at_ms, r.run_id, meta)
            if t.operation == "latest":
                batch.add_latest(key, t.period.start_ms, best)
            else:
                batch.add_best(key, t.period.start_ms, best)
        else:
            run = SumRun(
                r.run_id, r.player_id, r.score, r.ended_at_ms, r.received_at_ms, r.metadata or None
            )
            batch.add_sum(key, t.period.start_ms, run)


class Applier:
    """See the module docstring; the write itself is the submit path's pipeline
    (services/write_pipeline.py). With marks trusted (the log consumer), Redis is written
    only for runs the submit path did not apply: a submitter that died between the log's ack
    and its Redis pipeline, or a board rebuilt since. Then the consumer never writes a run
    to Redis before its submitter does, so the submitter's answer (``improved``) is right
    with any number of processes, and each run costs Redis one script call per target, not
    two."""

    def __init__(
        self,
        boards: BoardRegistry,
        writes: Writes,
        marks: Marks,
        reads: Reads,
        pg: PostgresStore,
        moderation: Moderation,
        *,
        mark_wait_s: float | None = None,
        run_memory_s: float = 86_400.0,
        heal: Callable[[list[tuple[str, str, str]]], None] | None = None,
        defer_busy: bool = False,
        on_busy: Callable[[BaseException], None] | None = None,
    ) -> None:
        """``mark_wait_s`` (the log consumer's): trust the submit path's marks, skipping
        the Redis writes of targets it marked as applied, and wait up to this long for the
        marks of runs received that recently (their submitter may not have applied them
        yet). None (replays): apply everything to Redis."""
        self.boards = boards
        self.writes = writes
        self.marks = marks
        self.reads = reads
        self.pg = pg
        self.moderation = moderation
        self.pipeline = WritePipeline(writes, marks, reads, pg, moderation)
        self.tournament_keys = TournamentKeys(writes.conn)
        self.leagues = Leagues(LeagueKeys(writes.conn), pg)
        self.mark_wait_ms = None if mark_wait_s is None else int(mark_wait_s * 1000)
        # how long a run id's first content is binding (services/run_ids.py)
        self.run_memory_ms = int(run_memory_s * 1000)
        # told the (board, window, period)s of runs applied nowhere for a run-id conflict:
        # their submitter may have written them to Redis, which is then rebuilt from
        # PostgreSQL (runtime.py), so the two agree again
        self.heal = heal
        # the log consumer's: a batch that meets one board's busy period (PeriodBusy)
        # applies the other boards' messages and leaves that board's to come again, so one
        # board's trouble never holds up the rest; replays raise instead
        self.defer_busy = defer_busy
        # told of each such failure (a torn period is then repaired: services/rebuild/repairs.py)
        self.on_busy = on_busy

    async def _config(
        self, configs: dict[str, BoardConfig], board_id: str, generation: int
    ) -> BoardConfig | None:
        """The config of the board incarnation ``generation``; None when that incarnation
        was deleted (its runs are skipped, not parked); BoardNotFound for a board that
        never existed. Generation 0 (a message logged before generations, e.g. by an
        instance not upgraded yet) is the current incarnation; _still_wanted decides its
        runs by their receipt time."""
        config = configs.get(board_id)
        if config is None or config.generation < generation:
            try:
                config = await self.boards.get(board_id, recent_unknown_ok=False)
                if config.generation < generation:  # a cached config of an older one
                    config = await self.boards.reload(board_id)
            except BoardNotFound:
                deleted = await deletions.deleted_generation(self.pg, board_id)
                if deleted is not None and generation <= deleted:
                    return None
                raise
            configs[board_id] = config
        return config if generation in (0, config.generation) else None

    async def _plan(
        self, messages: list[LogMessage], now_ms: int, seen: Visibility, outcome: Outcome
    ) -> tuple[
        dict[str, BoardConfig],
        dict[str, list[tuple[int, int, list[Target]]]],
        list[tuple[LogMessage, str]],
    ]:
        """Decode and plan every message; ones that can never apply go to ``unusable``.
        Each run's plan comes with its message's sequence and board generation."""
        configs: dict[str, BoardConfig] = {}
        plans: dict[str, list[tuple[int, int, list[Target]]]] = defaultdict(list)
        unusable: list[tuple[LogMessage, str]] = []
        for message in messages:
            try:
                board_id, generation, runs = decode_batch(message.data)
                if message.stored_ms:
                    for run in runs:
                        run.logged_ms = message.stored_ms
                if not is_board_id(board_id):
                    raise ValueError(f"{board_id!r} is not a board id")
                config = await self._config(configs, board_id, generation)
                # a run the board cannot hold (CodecError is a ValueError) parks the message
                message_plans = (
                    [] if config is None else self.pipeline.plan(config, runs, now_ms, seen=seen)
                )
            except (ValueError, ArithmeticError, BoardNotFound) as exc:
                unusable.append((message, str(exc)))
                continue
            plans[board_id].extend((message.seq, generation, p) for p in message_plans)
            outcome.applied.append(message.seq)
        return configs, plans, unusable

    async def _still_wanted(
        self,
        conn: Conn,
        configs: dict[str, BoardConfig],
        plans: dict[str, list[tuple[int, int, list[Target]]]],
        now_ms: int,
        seen: Visibility,
    ) -> dict[str, list[list[Target]]]:
        """The plans to apply, asked inside the batch's transaction (under the shared apply
        lock, which a board deletion or an erasure takes exclusively, so neither can slip
        between this check and the batch's writes): runs of a deleted board incarnation
        (generation 0: received before its deletion), and runs of an erased player logged
        before the erasure, are dropped. Runs planned with a cached config of another
        incarnation or layout, or while this instance knew other bans than now (``seen``: the
        snapshot they were planned with; the batch may have waited for the lock), are
        planned again with the current ones."""
        boards = await deletions.current_generations(conn, plans)
        players = {p[0].run.player_id for entries in plans.values() for _, _, p in entries if p}
        first_seq = min((seq for entries in plans.values() for seq, _, _ in entries), default=0)
        erased = await deletions.erased_through(conn, players, first_seq)
        # an entry removed since this instance last looked (services/corrections.py): the
        # removal committed before this batch took the lock, so its runs see it
        if await corrections.last_removal(conn) > self.moderation.bans.removal_seq:
            await self.moderation.bans.refresh()
        now_seen = self.moderation.visibility()
        wanted: dict[str, list[list[Target]]] = {}
        for board_id, entries in plans.items():
            if board_id not in boards:
                continue  # deleted since it was planned
            current, deleted_ms, layout = boards[board_id]
            # another incarnation, or a resharding moved on since this config was cached (its
            # builds take the apply lock exclusively: a batch never meets one half done)
            stale = configs[board_id].generation != current
            stale = stale or configs[board_id].layout_key != layout
            if stale:
                configs[board_id] = await self.boards.reload(board_id)
            if stale or now_seen is not seen:
                config = configs[board_id]
                entries = [
                    (seq, g, plan(config, p[0].run, now_ms, now_seen)) for seq, g, p in entries if p
                ]
            kept = [
                p
                for seq, generation, p in entries
                if p
                and (
                    generation == current
                    or (generation == 0 and p[0].run.received_at_ms > (deleted_ms or 0))
                )
                and seq > erased.get(p[0].run.player_id, -1)
            ]
            if kept:
                wanted[board_id] = kept
        return wanted

    async def apply(self, messages: list[LogMessage]) -> Outcome:
        """Apply ``messages``, parking those that can never apply; all are then done with.

        Raises only on a transient failure (see ``is_transient``): nothing more is parked,
        the caller acks nothing and the log delivers the batch again. Any other failure of
        the batch is narrowed down by halves (k bad messages in n cost about 2k log2 n
        tries); a message that fails alone is parked with the error. Applying is
        idempotent, so halves that applied before a later failure apply again harmlessly
        on redelivery.
        """
        if not messages:
            return Outcome()
        try:
            return await self._apply_together(messages)
        except Exception as exc:
            busy = busy_in(exc)
            if busy is not None and self.on_busy is not None:
                self.on_busy(busy)
            if busy is not None and self.defer_busy:
                return await self._without(messages, busy.board_id, exc)
            if is_transient(exc):
                raise
            failure = exc
        if len(messages) > 1:
            logger.warning(
                "a batch of %d log messages failed (%s: %s); applying it in halves",
                len(messages),
                type(failure).__name__,
                failure,
            )
        return await self._isolate(messages, failure)

    async def _without(
        self, messages: list[LogMessage], board_id: str, failure: Exception
    ) -> Outcome:
        """Apply the messages not of ``board_id``; defer its own. Raises ``failure`` when
        every message is that board's (the consumer backs off, then fetches again)."""
        ours = [_board_of(m) == board_id for m in messages]
        mine = [m for m, own in zip(messages, ours, strict=True) if own]
        others = [m for m, own in zip(messages, ours, strict=True) if not own]
        if not others or not mine:  # (none of its own: the error is not theirs to defer)
            raise failure
        logger.info(
            "board %s refuses writes for now (%s); %d of its log messages wait, %d others apply",
            board_id, failure, len(mine), len(others),
        )  # fmt: skip
        outcome = await self.apply(others)
        outcome.deferred += [m.seq for m in mine]
        return outcome

    async def _isolate(self, messages: list[LogMessage], failure: Exception) -> Outcome:
        """``messages`` failed together with ``failure``: apply them in halves, down to
        single messages; park each that fails alone."""
        if len(messages) == 1:
            return await self._park_failed(messages[0], failure)
        outcome = Outcome()
        half = len(messages) // 2
        for part in (messages[:half], messages[half:]):
            try:
                outcome.extend(await self._apply_together(part))
            except Exception as exc:
                if is_transient(exc):
                    raise
                outcome.extend(await self._isolate(part, exc))
        return outcome

    async def _park_failed(self, message: LogMessage, exc: Exception) -> Outcome:
        reason = f"{type(exc).__name__}: {exc}"
        async with self.pg.connection() as conn:
            await standings.park(conn, message.seq, message.subject, reason, message.data)
        metrics.MESSAGES_PARKED.inc()
        logger.error("parked log message %s (%s): %s", message.seq, message.subject, reason)
        return Outcome(parked=[message.seq])

    async def _first_content(
        self,
        conn: Conn,
        board_id: str,
        board_plans: list[list[Target]],
        conflicted: set[tuple[str, str, str]],
    ) -> list[list[Target]]:
        """The plans of runs whose id is not recorded with other content (first writer
        wins, in log order; see services/run_ids.py). The submit path refused such runs
        before logging them; one here means Redis lost the claim of the first."""
        runs = [p[0].run for p in board_plans]
        conflicts = await fingerprints.record(conn, board_id, runs, self.run_memory_ms)
        if not any(conflicts):
            return board_plans
        skipped = [r.run_id for r, c in zip(runs, conflicts, strict=True) if c]
        metrics.CONFLICTS_SKIPPED.inc(len(skipped))
        logger.warning(
            "board %s: %d logged run(s) reuse a run_id with other content and apply nowhere"
            " (first: %s)",
            board_id,
            len(skipped),
            clip(skipped[0]),
        )
        for p, c in zip(board_plans, conflicts, strict=True):
            if c:
                conflicted.update((board_id, t.window, t.period.id) for t in p if t.applies)
        return [p for p, c in zip(board_plans, conflicts, strict=True) if not c]

    async def _apply_together(self, messages: list[LogMessage]) -> Outcome:
        """Apply ``messages`` in one transaction, parking the ones that cannot be planned."""
        outcome = Outcome()
        now_ms = int(time.time() * 1000)
        seen = self.moderation.visibility()
        configs, planned, unusable = await self._plan(messages, now_ms, seen, outcome)
        batch = StandingsBatch.empty()
        tries: list[tournaments_db.Try] = []  # runs scheduled occurrences counted
        conflicted: set[tuple[str, str, str]] = set()
        async with self.pg.apply_lock(exclusive=False) as conn:
            plans = await self._still_wanted(conn, configs, planned, now_ms, seen)
            batch.configs.update(configs)
            # boards in id order: fingerprint rows are locked per board, so two consumers
            # never wait on each other crosswise
            for board_id, all_plans in sorted(plans.items()):
                config = configs[board_id]
                board_plans = await self._first_content(conn, board_id, all_plans, conflicted)
                written = await self.pipeline.write(
                    config, board_plans, now_ms, conn=conn, mark_wait_ms=self.mark_wait_ms
                )
                _collect(batch, board_id, [t for p in written.plans for t in p])
                if config.admits:
                    tries += counted_runs(board_id, written.plans)
                if config.league is not None:  # under the lock, like the admission below
                    placed = carried_placements(config, written.plans)
                    await self.leagues.apply(conn, config, placed)
            await standings.write(conn, batch)
            await tournaments_db.add_tries(conn, tries)
            # under the lock: an erasure (which takes it exclusively) cannot run in between
            await readmit(self.tournament_keys, tries)
            for message, reason in unusable:
                await standings.park(conn, message.seq, message.subject, reason, message.data)
                outcome.parked.append(message.seq)
        for message, reason in unusable:
            metrics.MESSAGES_PARKED.inc()
            logger.error("parked log message %s (%s): %s", message.seq, message.subject, reason)
        metrics.RUNS_APPLIED.inc(sum(len(p) for p in plans.values()))
        if conflicted and self.heal is not None:
            self.heal(sorted(conflicted))
        return outcome
