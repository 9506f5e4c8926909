"""Shadow bans and review holds: who must not show on the public boards, and where their
entries go instead.

Bans. PostgreSQL's ``bans`` table is the truth; every instance keeps the set of banned
players in memory, refreshed from the rows changed since the last ban seq it saw (every
``refresh_s``; an instance's own bans at once). A banned player's runs are written to each
period's ``:shadow`` key instead of the public one (the submit scripts read their rank in
the player's own view, so the answer looks like anyone's). Banning moves their entries from
the public keys to ``:shadow`` in every period where the durable copy has one (once the log
consumer has applied what was logged before the ban: the call waits up to half a second
for that) and in every board's live periods; unbanning moves them back, the better entry
(or, on a sum board, the total of both) kept. The sweep runs again once the other
instances have surely refreshed (``settle_s``) and the consumer has caught up, so a run
written by an instance that did not know yet is moved too. Every submit script also moves
the player's entry out of the side they must not be on, so any later write of theirs
heals what a sweep missed.

Holds. On a board with ``hold_top`` K, a run that would enter the top K of a window (and
raise the player's public entry) is held in that window before it is logged: it carries
the windows in the log, so the consumer and a replay hold it alike. Held targets go to the
``:pending`` key and to the ``holds`` table instead of ``player_best``; approving publishes
the run (a max with the public entry, in the durable copy and in Redis), rejecting drops
it, and the row keeps the decision, so a later application of the logged run follows it.

The write pipeline (services/write_pipeline.py) takes moderation as an input: a
``Visibility`` snapshot when it plans (plan.py routes a banned player's targets to
:shadow), and the review decisions through ``follow_decisions``, which returns new targets.
After a ban's sweep or a hold decision, ``invalidations`` tells this process's readers.

Memory: the ban set holds one entry per banned player (about 100 bytes each), grown only
by admins, never by a client's requests."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from types import MappingProxyType

from rankd.aio import keep_task, stop_tasks, wait_or_stop
from rankd.boards import BoardConfig
from rankd.errors import HoldNotFound
from rankd.formats import clip
from rankd.periods import PeriodRef
from rankd.plan import Target, Visibility, plan
from rankd.runs import Run
from rankd.services import live_periods
from rankd.services.invalidation import Invalidations
from rankd.services.registry import BoardRegistry
from rankd.stores import corrections, standings
from rankd.stores import moderation as db
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.redis.moves import Moves
from rankd.stores.redis.profiles import Profiles
from rankd.stores.standings import BestRow, StandingsBatch

logger = logging.getLogger("rankd.moderation")

MAX_SWEEP_TASKS = 64  # pending second sweeps per process; beyond it a ban sweeps at once
# how long a ban's first and second sweeps wait for the consumer to apply earlier runs
FIRST_SWEEP_WAIT_S = 0.5
CATCH_UP_S = 5.0
# how long a hold decision or a ban's own sweep waits for the apply lock (a rebuild holds
# it) before a 503
LOCK_WAIT_S = 5.0


def _now_ms() -> int:
    return int(time.time() * 1000)


class BanList:
    """This instance's copy of who is banned: a snapshot (``visibility``) replaced, never
    changed, when a refresh finds changed rows, so a write holds one view throughout."""

    def __init__(self, pg: PostgresStore) -> None:
        self.pg = pg
        self.visibility = Visibility()
        self.seq = 0
        # the entries admins removed (stores/corrections.py), refreshed the same way: a few
        # dozen bytes each, kept for good (replays need them); corrections are rare
        self.removal_seq = 0

    @property
    def banned(self) -> frozenset[str]:
        return self.visibility.banned

    def __contains__(self, player_id: str) -> bool:
        return player_id in self.visibility.banned

    async def refresh(self) -> None:
        rows = await db.bans_since(self.pg, self.seq)
        removals = await corrections.removals_since(self.pg, self.removal_seq)
        if not rows and not removals:
            return
        banned = set(self.visibility.banned)
        for player_id, is_banned, seq in rows:
            if is_banned:
                banned.add(player_id)
            else:
                banned.discard(player_id)
            self.seq = max(self.seq, seq)
        removed = dict(self.visibility.removed)
        for key, removal, seq in removals:
            removed[key] = removal  # rows are renewed in seq order: the last one holds
            self.removal_seq = max(self.removal_seq, seq)
        self.visibility = Visibility(frozenset(banned), MappingProxyType(removed))

    async def run_forever(self, interval_s: float, stop: asyncio.Event) -> None:
        while not await wait_or_stop(stop, interval_s):
            try:
                await self.refresh()
            except Exception as exc:  # PostgreSQL down: keep the last copy, try again
                logger.warning("ban refresh: %s: %s", type(exc).__name__, exc)


class Moderation:
    def __init__(
        self,
        moves: Moves,
        profiles: Profiles,
        pg: PostgresStore,
        boards: BoardRegistry,
        *,
        settle_s: float = 0.6,
        applied_through: Callable[[], Awaitable[int | None]] | None = None,
        invalidations: Invalidations | None = None,
    ) -> None:
        self.moves = moves
        self.profiles = profiles
        self.pg = pg
        self.boards = boards
        self.bans = BanList(pg)
        self.settle_s = settle_s
        # when the oldest logged run not yet applied by the consumer was received (None:
        # all applied); see services/consumer.py
        self.applied_through = applied_through
        # told after a ban's sweep and a hold decision (the reader drops its top lists)
        self.invalidations = invalidations if invalidations is not None else Invalidations()
        self._later: set[asyncio.Task[None]] = set()

    # the write path

    def visibility(self) -> Visibility:
        """Who is banned now, as this instance knows (a snapshot: plan.py's input)."""
        return self.bans.visibility

    async def decide_holds(self, board: BoardConfig, runs: Sequence[Run]) -> list[Run]:
        """``runs``, each carrying the windows where it would enter the top ``hold_top`` and
        raise the player's public entry (before logging: the log carries the decision); a
        run whose windows change is a new Run, the others are returned as they came."""
        if board.hold_top <= 0:
            return list(runs)
        held: dict[int, tuple[str, ...]] = {}  # by position in runs
        candidates: list[tuple[int, Run, Target]] = []
        for i, run in enumerate(runs):
            if run.player_id in self.bans.banned:
                continue  # already hidden on :shadow
            held[i] = ()
            for t in plan(board, run):
                # only best windows hold: a sum or latest entry is not a high score to check
                if t.segment == "" and t.applies and t.operation == "best":
                    candidates.append((i, run, t))
        if candidates:
            await self._held_windows(board, candidates, held)
        return [
            replace(run, held=held[i]) if i in held and held[i] != run.held else run
            for i, run in enumerate(runs)
        ]

    async def _held_windows(
        self,
        board: BoardConfig,
        candidates: list[tuple[int, Run, Target]],
        held: dict[int, tuple[str, ...]],
    ) -> None:
        """Fill ``held`` (by run position) with the candidates' windows that are held."""
        checks = await self.moves.standing_checks(
            [
                (PeriodRef(board.board_id, t.window, t.period.id), run.player_id, t.composite)
                for _, run, t in candidates
                if t.composite is not None
            ]
        )
        for (i, _, t), (above, current) in zip(candidates, checks, strict=True):
            assert t.composite is not None
            if above < board.hold_top and (current is None or t.composite > current):
                held[i] = (*held[i], t.window)
        # a run held before stays held where it was, whatever the board says now: the
        # decision made on it (or still to make) is followed (follow_decisions), so a
        # resent rejected run is never published by being sent again
        run_ids = [r.run_id for _, r, _ in candidates]
        async with self.pg.connection() as conn:
            before = await db.held_windows(conn, board.board_id, run_ids)
        for i, run, t in candidates:
            if t.window in before.get(run.run_id, ()) and t.window not in held[i]:
                held[i] = (*held[i], t.window)

    async def follow_decisions(
        self, conn: Conn, board: BoardConfig, plans: list[list[Target]]
    ) -> list[list[Target]]:
        """For the submit path, the log consumer and replays, inside their transaction on
        ``conn``: ``plans`` with each held target following its review. One whose hold was
        approved since is applied publicly; one rejected is not applied at all (closed);
        one still waiting (or not recorded yet) stays on :pending and is recorded. The hold
        rows stay locked until that transaction ends, so a decision made meanwhile waits
        and settles :pending after this apply, never before it. Plans without a held target
        are returned as they came."""
        held = [t for p in plans for t in p if t.side == "pending"]
        if not held:
            return plans
        await db.add_holds(conn, _holds(board, plans), _now_ms())
        status = await db.decisions(conn, board.board_id, [t.run.run_id for t in held])
        banned = self.bans.banned  # as it is now, after the queries (as the sweeps see it)

        def follow(t: Target) -> Target:
            if t.side != "pending":
                return t
            decision, player_id, score = status.get(
                (t.run.run_id, t.window), ("pending", t.run.player_id, t.run.score)
            )
            if (player_id, score) != (t.run.player_id, t.run.score):
                # the run id was held for other content (a reuse the run-id registry no
                # longer remembers): this run was never reviewed, so it counts nowhere
                return replace(t, disposition="closed")
            if decision == "approved":
                return replace(t, side="shadow" if t.run.player_id in banned else "public")
            if decision == "rejected":
                return replace(t, disposition="closed")
            return t

        return [[follow(t) for t in p] if any(t.side == "pending" for t in p) else p for p in plans]

    # bans

    async def ban(self, player_id: str, banned: bool, reason: str | None = None) -> None:
        """Ban (or unban) a player; their entries have moved when this returns, and move
        again once every instance and the log consumer have surely caught up."""
        at_ms = _now_ms()
        await db.set_banned(self.pg, player_id, banned, at_ms, reason)
        await self.bans.refresh()
        # the durable copy lists every period they have an entry in once the consumer has
        # applied the runs logged before now (segments a run named itself included)
        await self.caught_up(at_ms, FIRST_SWEEP_WAIT_S)
        await self.sweep(player_id, banned)
        if len(self._later) < MAX_SWEEP_TASKS:
            work = self._sweep_later(player_id, banned, at_ms)
            keep_task(self._later, work, name=f"ban-sweep-{player_id}")
        else:
            await self._sweep_later(player_id, banned, at_ms)
        self.invalidations.publish()  # this process's next read shows the move at once

    async def close(self) -> list[str]:
        """Stop second sweeps still waiting (a ban's own sweep has run; the consumer's
        second applies heal what a missed one would have moved)."""
        return await stop_tasks(list(self._later), 1.0)

    async def _sweep_later(self, player_id: str, banned: bool, at_ms: int) -> None:
        await asyncio.sleep(self.settle_s)
        try:
            await self.caught_up(at_ms, CATCH_UP_S)
            if (player_id in self.bans.banned) == banned:  # not reversed meanwhile
                await self.sweep(player_id, banned, wait_s=None)  # in the background
                self.invalidations.publish()  # what it moved shows too (live streams)
        except Exception as exc:
            logger.warning("second sweep for %s: %s: %s", player_id, type(exc).__name__, exc)

    async def caught_up(self, at_ms: int, timeout_s: float) -> bool:
        """Wait (at most ``timeout_s``) until the consumer has applied every run received
        before ``at_ms``; whether it has."""
        if self.applied_through is None:
            return True
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            oldest = await self.applied_through()
            if oldest is None or oldest > at_ms:
                return True
            await asyncio.sleep(0.05)
        return False

    async def sweep(self, player_id: str, banned: bool, wait_s: float | None = LOCK_WAIT_S) -> int:
        """Move the player's entries to :shadow (``banned``) or back to the public keys, in
        every period where the durable copy has them and in every board's live periods.
        Under the shared apply lock (waiting ``wait_s`` at most; None: as long as needed),
        as a consumer batch: a rebuild, or a resharding's build of a new layout, has the
        ban in its snapshot or meets these moves after its swap, never half way."""
        async with self.pg.apply_lock(exclusive=False, lock_timeout_s=wait_s, stalled="barrier"):
            return await self._sweep(player_id, banned)

    async def _sweep(self, player_id: str, banned: bool) -> int:
        refs = set(await db.player_periods(self.pg, player_id))
        configs = {b.board_id: b for b in await self.boards.list()}
        refs |= await self.live_refs(player_id, configs.values())
        source, dest = ("public", "shadow") if banned else ("shadow", "public")
        moved = 0
        by_board: dict[str, list[PeriodRef]] = {}
        for ref in refs:
            by_board.setdefault(ref.board, []).append(ref)
        for board_id, board_refs in by_board.items():
            config = configs.get(board_id)
            if config is None:
                continue
            moved += await self.moves.move_entries(
                config, [(ref, source, dest, [player_id]) for ref in sorted(board_refs)]
            )
        return moved

    async def live_refs(self, player_id: str, boards: Iterable[BoardConfig]) -> set[PeriodRef]:
        return await live_periods.player_refs(self.profiles, player_id, boards)

    # holds

    async def list_holds(self, board: BoardConfig, limit: int = 1000) -> list[db.Hold]:
        return await db.list_holds(self.pg, board.board_id, limit)

    async def decide(self, board: BoardConfig, run_id: str, approve: bool) -> None:
        """Approve (publish) or reject a held run; HoldNotFound if none waits. Under the
        shared apply lock, as a consumer batch: a rebuild (or a resharding's build of a
        new layout) has the decision in its snapshot or sees its moves after its swap."""
        # kept if stalled: cut off before its commit, a rebuild's swap would drop its moves
        async with self.pg.apply_lock(exclusive=False, lock_timeout_s=LOCK_WAIT_S, stalled="keep"):
            await self._decide(board, run_id, approve)

    async def _decide(self, board: BoardConfig, run_id: str, approve: bool) -> None:
        async with self.pg.connection() as conn, conn.transaction():
            holds = await db.decide(
                conn, board.board_id, run_id, "approved" if approve else "rejected"
            )
            if not holds:
                raise HoldNotFound(
                    f"no run {clip(run_id)!r} is waiting for review on board {board.board_id!r}"
                )
            if approve:
                batch = StandingsBatch.empty()
                for h in holds:
                    for segment in ("", *h.segments):
                        key = PeriodRef(board.board_id, h.window, h.period, segment)
                        row = BestRow(
                            h.player_id, h.composite, h.score, h.ended_ms, h.run_id, h.metadata
                        )
                        batch.add_best(key, h.start_ms, row)
                await standings.write(conn, batch)
            remaining = {
                (h.window, h.period): await db.player_holds(
                    conn, board.board_id, h.window, h.period, h.player_id
                )
                for h in holds
            }
        side = "shadow" if holds[0].player_id in self.bans.banned else "public"
        await self.moves.settle_holds(
            board,
            [
                (
                    PeriodRef(board.board_id, h.window, h.period, segment),
                    h,
                    approve,
                    side,
                    [
                        (r.composite, r.ended_ms)
                        for r in remaining[(h.window, h.period)]
                        if segment == "" or segment in r.segments
                    ],
                )
                for h in holds
                for segment in ("", *h.segments)
            ],
        )
        self.invalidations.publish()


def _holds(board: BoardConfig, plans: Sequence[Sequence[Target]]) -> list[db.Hold]:
    holds = []
    for targets in plans:
        segments = tuple(t.segment for t in targets if t.segment)
        for t in targets:
            if t.side == "pending" and t.segment == "" and t.composite is not None:
                r = t.run
                window_segments = tuple(
                    s
                    for s in segments
                    if any(x.segment == s and x.window == t.window for x in targets)
                )
                holds.append(
                    db.Hold(
                        board.board_id,
                        r.run_id,
                        t.window,
                        t.period.id,
                        r.player_id,
                        r.score,
                        t.composite,
                        r.ended_at_ms,
                        t.period.start_ms,
                        tuple(dict.fromkeys(window_segments)),
                        r.metadata or None,
                    )
                )
    return holds
