"""League boards (CONTRACT v1.3 "Leagues"; the rules are rankd/leagues.py).

Placement is decided before a run is logged, in one Redis script per period
(lua/league_place.lua): a player's first run of a period takes the next place of their
tier, and the run carries the placement (``Run.league``) into the log, so the log consumer,
a replay and a rebuild all place everyone where the submit path did. The tiers of a period
are those the previous period's moves left, so until that period is frozen and its moves
made (its grace over) a new player waits, queued in arrival order; the season job then
places the queue in order (``advance``) and writes those placements to PostgreSQL itself.

The moves are made in the transaction that freezes the period (``make_moves``, from the
archive's public ranks, so a banned player never takes a promotion place): exactly once,
whichever instance freezes it and wherever it crashed before. Redis then learns the tiers
they left (``advance``; a pass that died in between is finished by the next).

Reads find the cohort in Redis (lua/league_cohort.lua) and rank its members with the group
read friends lists use, so bans, holds, own views and archived periods act as on any read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rankd.boards import BoardConfig
from rankd.errors import InvalidRequest
from rankd.leagues import MAX_OPEN_PERIODS, League
from rankd.periods import Period, previous
from rankd.plan import Target
from rankd.results import FriendEntry
from rankd.runs import Run
from rankd.services.answers import entry_of
from rankd.services.reads import Reader
from rankd.services.scope import Scope
from rankd.services.standings.live import KeyStandings
from rankd.stores import leagues as db
from rankd.stores.postgres import Conn, PostgresStore
from rankd.stores.redis.leagues import LeagueKeys, Placement

logger = logging.getLogger("rankd.leagues")

# how long a period's "tiers known" flag outlives its grace (no placement comes after that;
# a period with runs loses it sooner, when it is archived)
READY_KEPT_MS = 86_400_000
# (period, player, placement, whether the period is in Redis) a logged run carries
Carried = tuple[str, str, str, bool]


def league_of(board: BoardConfig) -> League:
    if board.league is None:
        raise InvalidRequest(f"board {board.board_id!r} is not a league (it has no league field)")
    return board.league


def is_first(board: BoardConfig, period: Period) -> bool:
    """Whether ``period`` holds the board's creation: no earlier period has league moves,
    so its tiers are known at once."""
    if board.created_at is None:
        return False
    created_ms = int(board.created_at.timestamp() * 1000)
    return period.start_ms <= created_ms < period.end_ms


def open_periods(board: BoardConfig, window: str, now_ms: int) -> list[Period]:
    """The league window's periods still taking runs at ``now_ms`` (the current one and
    those within their grace), oldest first; at most MAX_OPEN_PERIODS."""
    period = board.period_at(window, now_ms)
    assert period is not None
    found = [period]
    while len(found) < MAX_OPEN_PERIODS:
        period = previous(period)
        if board.period_status(period, now_ms) == "closed":
            break
        found.append(period)
    return found[::-1]


def members_of(board_id: str, found: Sequence[Placement], period: str) -> list[db.Member]:
    """Rows of placements ("<tier>:<ordinal>") and of waiting players ("wait:<n>": tier -1)."""
    rows: list[db.Member] = []
    for player, at in found:
        tier, _, number = at.partition(":")
        rows.append((board_id, period, player, -1 if tier == "wait" else int(tier), int(number)))
    return rows


def carried_placements(board: BoardConfig, plans: Sequence[Sequence[Target]]) -> list[Carried]:
    """The placements logged runs carry, as the log consumer applies them."""
    league = board.league
    if league is None:
        return []
    return [
        (t.period.id, t.run.player_id, t.run.league, t.disposition != "expired")
        for p in plans
        for t in p
        # not "closed": such a run was refused there before logging, and placed no one
        if t.window == league.window
        and not t.segment
        and t.run.league
        and t.disposition in ("apply", "expired")
    ]


class Leagues:
    def __init__(self, keys: LeagueKeys, pg: PostgresStore) -> None:
        self.keys = keys
        self.pg = pg

    # -- the write path

    async def place(self, board: BoardConfig, runs: Sequence[Run]) -> list[Run]:
        """``runs``, each that its league period counts carrying its player's placement."""
        league = board.league
        if league is None:
            return list(runs)
        asked: dict[str, list[int]] = {}
        periods: dict[str, Period] = {}
        for i, run in enumerate(runs):
            period = board.period_at(league.window, run.ended_at_ms)
            if period is None or board.period_status(period, run.received_at_ms) == "closed":
                continue  # the run counts nowhere in the league: it places no one
            asked.setdefault(period.id, []).append(i)
            periods[period.id] = period
        if not asked:
            return list(runs)
        replies = await self.keys.place(
            board.board_id,
            league.cohort_size,
            [
                (pid, is_first(board, periods[pid]), [runs[i].player_id for i in idx])
                for pid, idx in asked.items()
            ],
        )
        out = list(runs)
        for idx, found in zip(asked.values(), replies, strict=True):
            for i, at in zip(idx, found, strict=True):
                out[i] = replace(out[i], league=at)
        return out

    async def apply(self, conn: Conn, board: BoardConfig, carried: Sequence[Carried]) -> None:
        """The log consumer's part, in its transaction: Redis gets the placements back
        (the submit path put most there already), PostgreSQL records them, or the place
        Redis made anew: for a waiting player whose tiers are known by now, or one whose
        place another took after a rebuild (league_placed.lua)."""
        board_id, size = board.board_id, league_of(board).cohort_size
        by_period: dict[tuple[str, bool], list[Placement]] = {}
        for period, player, at, live in carried:
            by_period.setdefault((period, live), []).append((player, at))
        rows: list[db.Member] = []
        for (period, live), found in by_period.items():
            # a period that has left Redis (archived) takes the placements here only; else
            # the place Redis holds afterwards (a wait placed, a place taken meanwhile)
            held = await self.keys.placed(board_id, size, period, found) if live else found
            rows += members_of(board_id, held, period)
        await db.add_members(conn, rows)

    # -- the season job

    async def advance(
        self, conn: Conn, board: BoardConfig, now_ms: int, settled: Callable[[Period], bool]
    ) -> bool:
        """Bring Redis up to the moves made: the tiers of every moved period, then, for each
        period still taking runs, its tiers known and its waiting players placed once the
        period before it is moved (or had no one and is ``settled``: closed, and every run
        received in time applied). True if it did anything."""
        league = board.league
        if league is None:
            return False
        did = await self._push_tiers(conn, board)
        for period in open_periods(board, league.window, now_ms):
            did = await self._advance(conn, board, period, now_ms, settled) == "advanced" or did
        return did

    async def ready_to_freeze(
        self, conn: Conn, board: BoardConfig, period: Period, now_ms: int
    ) -> bool:
        """Whether a league period may be frozen now: its players are all placed (those who
        waited for its tiers too, placed here if the period before is moved). Called by
        the season job just before the freeze, after the periods before it froze."""
        await self._push_tiers(conn, board)
        return await self._advance(conn, board, period, now_ms, lambda _: True) != "blocked"

    async def _push_tiers(self, conn: Conn, board: BoardConfig) -> bool:
        did = False
        for moved in await db.unpushed(conn, board.board_id):
            await self.keys.set_tiers(board.board_id, await db.movers(conn, board.board_id, moved))
            await db.mark_pushed(conn, board.board_id, moved)
            did = True
        return did

    async def _advance(
        self,
        conn: Conn,
        board: BoardConfig,
        period: Period,
        now_ms: int,
        settled: Callable[[Period], bool],
    ) -> str:
        """ "ready" (its tiers known, no one waiting), "advanced" (made so now), or "blocked"
        (the period before is not moved yet)."""
        board_id = board.board_id
        if await self.keys.is_ready(board_id, period.id):
            if not await self.keys.waiting(board_id, period.id):
                return "ready"
        else:
            before = previous(period)
            if not await db.is_moved(conn, board_id, before.id):
                if await db.has_members(conn, board_id, before.id) or not settled(before):
                    return "blocked"  # its moves come with its freeze
                await db.record_moved(
                    conn, board_id, before.id, before.start_ms, now_ms, pushed=True
                )
        placed = await self.keys.advance(board_id, league_of(board).cohort_size, period.id)
        await db.add_members(conn, members_of(board_id, placed, period.id))
        await self.keys.done_waiting(board_id, period.id)
        closes = board.closes_at_ms(period)
        if closes is not None:  # a period without runs is never archived: its flag expires
            await self.keys.expire_ready(board_id, period.id, closes + READY_KEPT_MS)
        if placed:
            logger.info(
                "league %s %s: %d waiting player(s) placed", board_id, period.id, len(placed)
            )
        return "advanced"

    async def restore(self, conn: Conn, board: BoardConfig) -> None:
        """A rebuild's part: the board's tiers and every period's placements as the durable
        copy has them (players who were waiting queue again, in their entries' order)."""
        league = board.league
        if league is None:
            return
        periods: list[tuple[str, Sequence[Placement], bool]] = []
        for period in await db.member_periods(conn, board.board_id, league.window):
            found = await db.placements(conn, board.board_id, period)
            ready = any(not at.startswith("wait") for _, at in found)
            periods.append((period, found, ready))
        tiers = await db.tiers(conn, board.board_id)
        held = await self.keys.restore(board.board_id, league.cohort_size, tiers, periods)
        async with conn.transaction():
            for period, placed in held:  # waiting players placed now are recorded too
                await db.add_members(conn, members_of(board.board_id, placed, period))

    # -- reads

    async def read(
        self, reader: Reader, scope: Scope, by: tuple[str, ...], viewer: str | None
    ) -> tuple[int, int, list[FriendEntry]] | None:
        """(tier, cohort, its entries ranked among themselves) of the cohort ``by`` names
        (("player", id) or ("cohort", tier, number)); None when the player is not placed.

        On one Redis, a live unsharded period's public read is one round trip (the cohort,
        its members' entries and names: lua/league_read.lua). Elsewhere (a cluster, shards,
        an own view, the archive) the cohort's members are found, then ranked by the group
        read friends lists use, so bans, holds, own views and archives act as on any read."""
        size = league_of(scope.board).cohort_size
        if viewer is None and self.keys.reads_in_one_call:
            source = await reader.standings(scope)
            if isinstance(source, KeyStandings):
                reader.check_restored(scope)
                got = await self.keys.cohort_read(scope.ref, size, by)
                if got is None:
                    return None
                tier, number, members, held, names = got
                rows = source.grouped(members, held, names)
                # an empty live read of a closed period may have left Redis: asked below
                if rows or not members or not reader.is_closed(scope):
                    entries: list[FriendEntry] = [
                        {**entry_of(row), "position": i} for i, row in enumerate(rows, start=1)
                    ]
                    return tier, number, entries
        if await reader.from_archive(scope):  # its placements left Redis with it
            async with self.pg.connection() as conn:
                found = await db.cohort_members(
                    conn, scope.board.board_id, scope.period.id, size, by
                )
        else:
            found = await self.keys.cohort(scope.board.board_id, scope.period.id, size, by)
        if found is None:
            return None
        tier, number, members = found
        if not members:
            return tier, number, []
        ranked = await reader.friends(scope, members[0], members[1:], viewer)
        return tier, number, ranked["entries"]

    def unseen(self, board: BoardConfig, player_id: str) -> dict[str, Any]:
        """The history of a player never seen: the first tier, nothing frozen."""
        league = league_of(board)
        return {
            "board_id": board.board_id,
            "player_id": player_id,
            "tier": league.tiers[0],
            "history": [],
        }

    async def history(self, board: BoardConfig, player_id: str) -> dict[str, Any]:
        league = league_of(board)
        async with self.pg.connection() as conn:
            tier = await db.tier_of(conn, board.board_id, player_id)
            rows = await db.history(conn, board.board_id, player_id)
        return {
            "board_id": board.board_id,
            "player_id": player_id,
            "tier": league.tiers[tier],
            "history": [
                {
                    "period": period,
                    "tier": league.tiers[t],
                    "cohort": league.cohort_id(t, c),
                    "rank": rank,
                    "moved": moved,
                }
                for period, t, c, rank, moved in rows
            ],
        }
