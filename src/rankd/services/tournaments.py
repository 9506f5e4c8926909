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
both back in Redis. A run the log refuses after Redis counted it gives its attempt (and an
entrant's place it took) back (``undo``); if the append's outcome is unknown and the run was
logged after all, the log consumer counts it again. A join PostgreSQL refuses after Redis
took it keeps its place until the next rebuild.
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

# per occurrence, the (player, run id, "counted" or "entered") an admit call counted
Admitted = list[tuple[str, list[tuple[str, str, str]]]]


class Tournaments:
    def __init__(self, keys: TournamentKeys, pg: PostgresStore) -> None:
        self.keys = keys
        self.pg = pg

    async def admit(self, board: BoardConfig, runs: Sequence[Run]) -> tuple[list[Run], Admitted]:
        """``runs``, each that its occurrence does not count carrying why, and what this
        call counted (for ``undo`` if the runs are then not logged)."""
        if not board.admits or SCHEDULED not in board.windows:
            return list(runs), []
        asked: dict[str, list[int]] = {}
        for i, run in enumerate(runs):
            period = board.period_at(SCHEDULED, run.ended_at_ms)
            if period is None or board.period_status(period, run.received_at_ms) == "closed":
                continue  # not_open or closed: nothing to admit
            asked.setdefault(period.id, []).append(i)
        if not asked:
            return list(runs), []
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
        taken: Admitted = []
        for pid, idx, found in zip(asked, asked.values(), statuses, strict=True):
            new = [(out[i].player_id, out[i].run_id, s) for i, s in zip(idx, found, strict=True)]
            taken.append((pid, [n for n in new if n[2] in ("counted", "entered")]))
            for i, status in zip(idx, found, strict=True):
                refused = "" if status in ("ok", "counted", "entered") else status
                if refused != out[i].refused:
                    out[i] = replace(out[i], refused=refused)
        return out, taken

    async def undo(self, board: BoardConfig, taken: Admitted) -> None:
        """The runs ``admit`` counted were not logged: their attempts and places go back."""
        await self.keys.unadmit(board.board_id, taken)

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
        if board.period_status(period, now) == "closed" or period.end_ms <= now:
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
        # not "expired": an occurrence gone from Redis keeps no admission keys there
        if t.window == SCHEDULED and not t.segment and t.disposition == "apply"
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
    conn: Conn,
    keys: TournamentKeys,
    todo: Sequence[tuple[PeriodRef, int, BoardConfig]],
    board_id: str | None,
    window: str | None = None,
    period: str | None = None,
) -> None:
    """A rebuild's part: the admission keys of the scheduled occurrences it restores, and
    of those with joins and no runs yet, as narrowed (``board_id``, ``window``, ``period``)."""
    occurrences = {
        (ref.board, ref.period)
        for ref, _, config in todo
        if ref.window == SCHEDULED and not ref.segment and config.admits
    }
    if window in (None, SCHEDULED):
        with_joins = await db.joined_occurrences(conn, board_id)
        occurrences |= {(b, p) for b, p in with_joins if period in (None, p)}
    for board, occurrence in sorted(occurrences):
        players, tries = await db.admitted(conn, board, occurrence)
        await keys.admitted(board, occurrence, players, tries)
