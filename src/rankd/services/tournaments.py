"""Scheduled boards' admission (CONTRACT v1.3): joining an occurrence, a cap on its
entrants, a cap on a player's counted runs.

Decided before a run is logged, in one Redis script per occurrence (lua/admit.lua), so
concurrent submits and joins never exceed a cap: a run that its occurrence does not count
carries why (``Run.refused``: not_joined, full, attempts_exhausted) into the log, and every
path that applies it (the submit path, the log consumer, a replay) decides the same. A
counted run's id is remembered, so an identical resend never uses another attempt. Without
join_required, a player's first counted run makes them an entrant.

Joins are answered once they are in Redis and PostgreSQL (``tournament_entrants``); counted
runs reach PostgreSQL through the log consumer (``tournament_tries``), and a rebuild puts
both back in Redis. A run or join refused by PostgreSQL or the log after Redis admitted it
keeps its place in Redis until the next rebuild (a resend uses no second attempt).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from rankd.boards import BoardConfig
from rankd.errors import BoardFull, NotOpen
from rankd.periods import Period, PeriodError, PeriodRef
from rankd.plan import Target
from rankd.runs import Run
from rankd.schedules import SCHEDULED
from rankd.stores import tournaments as db
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.redis.tournaments import TournamentKeys


class Tournaments:
    def __init__(self, keys: TournamentKeys, pg: PostgresStore) -> None:
        self.keys = keys
        self.pg = pg

    async def admit(self, board: BoardConfig, runs: Sequence[Run]) -> list[Run]:
        """``runs``, each that its occurrence does not count carrying why."""
        if not board.admits or SCHEDULED not in board.windows:
            return list(runs)
        asked: dict[str, list[int]] = {}
        for i, run in enumerate(runs):
            period = board.period_at(SCHEDULED, run.ended_at_ms)
            if period is None or board.period_status(period, run.received_at_ms) == "closed":
                continue  # not_open or closed: nothing to admit
            asked.setdefault(period.id, []).append(i)
        if not asked:
            return list(runs)
        rules = (board.join_required, board.max_entrants, board.max_attempts)
        statuses = await self.keys.admit(
            board.board_id,
            rules,
            [
                (pid, [(runs[i].player_id, runs[i].run_id) for i in idx])
                for pid, idx in asked.items()
            ],
        )
        out = list(runs)
        for idx, found in zip(asked.values(), statuses, strict=True):
            for i, status in zip(idx, found, strict=True):
                refused = "" if status == "ok" else status
                if refused != out[i].refused:
                    out[i] = replace(out[i], refused=refused)
        return out

    async def join(self, board: BoardConfig, player_id: str, period_id: str | None) -> Period:
        """Join the open occurrence (or ``period_id``, an open or upcoming one); the
        occurrence joined. NotOpen when there is none to join, BoardFull when it is full."""
        now = int(time.time() * 1000)
        if board.schedule is None:
            raise NotOpen(f"board {board.board_id!r} has no schedule to join")
        if period_id is None:
            period = board.schedule.occurrence_at(now)
            if period is None:
                raise NotOpen("no occurrence is open now; name an upcoming one with period=")
        else:
            try:
                period = board.period_of(SCHEDULED, period_id)
            except PeriodError as exc:
                raise NotOpen(str(exc)) from exc
            if period.end_ms <= now:
                raise NotOpen(f"occurrence {period.id} has ended")
        if not await self.keys.join(board.board_id, period.id, player_id, board.max_entrants):
            raise BoardFull(f"occurrence {period.id} has its {board.max_entrants} entrants")
        async with self.pg.connection() as conn:
            await db.add_entrant(conn, board.board_id, period.id, player_id, now)
        return period


def counted_runs(board_id: str, plans: Sequence[Sequence[Target]]) -> list[db.Try]:
    """The runs a scheduled board's occurrences counted (admitted before logging), as the
    log consumer applies them."""
    return [
        (board_id, t.period.id, t.run.player_id, t.run.run_id)
        for p in plans
        for t in p
        if t.window == SCHEDULED and not t.segment and t.disposition in ("apply", "expired")
    ]


async def readmit(keys: TournamentKeys, tries: Sequence[db.Try]) -> None:
    """Put counted runs back in the occurrences' admission keys (idempotent: the submit
    path put most there already), so a Redis that lost them, or a replay, agrees."""
    by_period: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for board_id, period, player, run_id in tries:
        by_period.setdefault((board_id, period), []).append((player, run_id))
    for (board_id, period), runs in by_period.items():
        await keys.admitted(board_id, period, (), runs)


async def restore_admission(
    conn: Conn, keys: TournamentKeys, todo: Sequence[tuple[PeriodRef, int, BoardConfig]]
) -> None:
    """A rebuild's part: the admission keys of the scheduled occurrences it restores."""
    for ref, _, config in todo:
        if ref.window == SCHEDULED and not ref.segment and config.admits:
            joined, tries = await db.admitted(conn, ref.board, ref.period)
            await keys.admitted(ref.board, ref.period, joined, tries)
