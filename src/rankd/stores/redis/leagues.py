"""A league board's placement keys (keys.LeagueKeys): who is in which cohort of a period,
each player's tier, and the players waiting for their tier (services/leagues.py decides)."""

from __future__ import annotations

from collections.abc import Sequence

from rankd.periods import PeriodRef
from rankd.placement import LEAGUE_BUCKETS
from rankd.stores.redis import keys
from rankd.stores.redis.common import name, number
from rankd.stores.redis.connection import RedisConn, is_cluster, reachable
from rankd.stores.redis.scripts import (
    LEAGUE_ADVANCE,
    LEAGUE_COHORT,
    LEAGUE_PLACE,
    LEAGUE_PLACED,
    LEAGUE_READ,
    Call,
    Script,
)

CHUNK = 2_000  # players (or pairs) a script call or a pipeline takes

Placement = tuple[str, str]  # (player, "<tier>:<ordinal>" or "wait:<arrival>")
# (composite, 0-based rank, exact achieved ms or 0) of one player's entry
Held = tuple[int, int, int]
# a cohort read in one call: tier, cohort, members in placement order, their entries and names
CohortRead = tuple[int, int, list[str], list[Held | None], list[str | None]]


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _pairs(reply: object) -> list[Placement]:
    flat = [_text(v) for v in reply] if isinstance(reply, list) else []
    return list(zip(flat[::2], flat[1::2], strict=True))


def _by_ordinal(flat: list[object]) -> tuple[list[str], list[int]]:
    """A roster's (ordinal, member) pairs as its members in placement order, and the
    order (indexes into the pairs) that puts them so."""
    pairs = [(int(_text(o)), _text(m)) for o, m in zip(flat[::2], flat[1::2], strict=True)]
    order = sorted(range(len(pairs)), key=lambda i: pairs[i][0])
    return [pairs[i][1] for i in order], order


class LeagueKeys:
    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn

    @staticmethod
    def _call(script: Script, board_id: str, period: str, size: int, *args: str | int) -> Call:
        lk = keys.LeagueKeys(board_id)
        return (script, lk.period(period), (lk.tag, period, size, *args))

    async def place(
        self, board_id: str, size: int, asked: Sequence[tuple[str, bool, Sequence[str]]]
    ) -> list[list[str]]:
        """For each (period, whether it is the board's first, players): each player's
        placement (league_place.lua); one round trip."""
        calls = [
            self._call(LEAGUE_PLACE, board_id, period, size, "1" if first else "0", *players)
            for period, first, players in asked
        ]
        with reachable():
            replies = await self.conn.pipeline(calls)
        return [[_text(s) for s in r] for r in replies]

    async def placed(
        self, board_id: str, size: int, period: str, found: Sequence[Placement]
    ) -> list[Placement]:
        """Put back placements (league_placed.lua, idempotent); each player's placement in
        Redis afterwards ("wait:<arrival>" while queued), as the durable copy records it."""
        made: list[Placement] = []
        with reachable():
            for i in range(0, len(found), CHUNK):
                args = [a for pair in found[i : i + CHUNK] for a in pair]
                call = self._call(LEAGUE_PLACED, board_id, period, size, *args)
                made += _pairs(await self.conn.call(call))
        return made

    async def is_ready(self, board_id: str, period: str) -> bool:
        with reachable():
            return bool(await self.conn.client.exists(keys.LeagueKeys(board_id).period(period)[1]))

    async def waiting(self, board_id: str, period: str) -> bool:
        with reachable():
            return bool(await self.conn.client.exists(keys.LeagueKeys(board_id).period(period)[2]))

    async def set_tiers(self, board_id: str, tiers: Sequence[tuple[str, int]]) -> None:
        """Players' tiers as the moves left them (the first tier's are removed: absent is
        the first tier)."""
        lk = keys.LeagueKeys(board_id)
        with reachable():
            for i in range(0, len(tiers), CHUNK):
                pipe = self.conn.client.pipeline(transaction=False)
                for player, tier in tiers[i : i + CHUNK]:
                    if tier > 0:
                        pipe.hset(lk.tiers(player), player, tier)
                    else:
                        pipe.hdel(lk.tiers(player), player)
                await pipe.execute()

    async def advance(self, board_id: str, size: int, period: str) -> list[Placement]:
        """Mark the period's tiers known and place its waiting players (league_advance.lua)."""
        with reachable():
            reply = await self.conn.call(self._call(LEAGUE_ADVANCE, board_id, period, size))
        return _pairs(reply)

    async def is_waiting(self, board_id: str, period: str, player_id: str) -> bool:
        with reachable():
            queue = keys.LeagueKeys(board_id).period(period)[2]
            return await self.conn.client.zscore(queue, player_id) is not None

    async def expire_ready(self, board_id: str, period: str, at_ms: int) -> None:
        with reachable():
            await self.conn.client.pexpireat(keys.LeagueKeys(board_id).period(period)[1], at_ms)

    async def done_waiting(self, board_id: str, period: str) -> None:
        """The waiting players are placed in both stores: their queue goes."""
        with reachable():
            await self.conn.client.delete(*keys.LeagueKeys(board_id).period(period)[2:])

    async def cohort(
        self, board_id: str, period: str, size: int, by: tuple[str, ...]
    ) -> tuple[int, int, list[str]] | None:
        """(tier, cohort, members in placement order) of the cohort ``by`` names: ("player",
        id) or ("cohort", tier, cohort); None when the player is not placed."""
        with reachable():
            reply = await self.conn.call(self._call(LEAGUE_COHORT, board_id, period, size, *by))
        if not reply:
            return None
        members, _ = _by_ordinal(reply[2:])
        return int(_text(reply[0])), int(reply[1]), members

    @property
    def reads_in_one_call(self) -> bool:
        """Whether a cohort and its entries are read in one script call (league_read.lua):
        on one Redis, where keys of different hash tags may meet in a script."""
        return not is_cluster(self.conn.client)

    async def cohort_read(
        self, ref: PeriodRef, size: int, by: tuple[str, ...]
    ) -> CohortRead | None:
        """The cohort ``by`` names (as ``cohort``) with its members' entries on the period's
        one key and their names: one round trip; None when the player is not placed."""
        lk = keys.LeagueKeys(ref.board)
        public = keys.period_keys(*ref).public
        args: list[str | int] = [lk.tag, ref.period, size, *by]
        call: Call = (LEAGUE_READ, (*lk.period(ref.period), public, keys.NAMES), args)
        with reachable():
            reply = await self.conn.call(call)
        if not reply:
            return None
        n = int(reply[2])
        members, order = _by_ordinal(reply[3 : 3 + 2 * n])
        entries = reply[3 + 2 * n : 3 + 5 * n]
        held: list[Held | None] = [
            None
            if entries[3 * i] is None
            else (number(entries[3 * i]), int(entries[3 * i + 1]), int(entries[3 * i + 2]))
            for i in range(n)
        ]
        names = [name(x) for x in reply[3 + 5 * n :]]
        return (
            int(_text(reply[0])),
            int(reply[1]),
            members,
            [held[i] for i in order],
            [names[i] for i in order],
        )

    async def restore(
        self,
        board_id: str,
        size: int,
        tiers: Sequence[tuple[str, int]],
        periods: Sequence[tuple[str, Sequence[Placement], bool]],
    ) -> list[tuple[str, list[Placement]]]:
        """A rebuild's part: the board's tiers, and per (period, placements, tiers known)
        its placements and waiting players, as the durable copy has them; per period, the
        placements Redis holds afterwards (waiting players of a period whose tiers are
        known are placed at once: the durable copy is to record them)."""
        await self.set_tiers(board_id, tiers)
        held: list[tuple[str, list[Placement]]] = []
        for period, found, ready in periods:
            if ready:
                with reachable():
                    await self.conn.client.set(keys.LeagueKeys(board_id).period(period)[1], "1")
            held.append((period, await self.placed(board_id, size, period, found)))
        return held

    async def unlink_period(self, board_id: str, period: str) -> None:
        """An archived period's placements leave Redis with its standings (its cohorts are
        then read from PostgreSQL): every bucket, every cohort's roster, the fill."""
        lk = keys.LeagueKeys(board_id)
        node = self.conn.nodes.for_key(lk.tag)  # one tag: one node, one plain pipeline
        buckets = [f"{lk.tag}:{period}:m:{b}" for b in range(LEAGUE_BUCKETS)]
        with reachable():
            rosters = [k async for k in node.scan_iter(match=f"{lk.tag}:{period}:c:*", count=1000)]
            pipe = node.pipeline(transaction=False)
            pipe.unlink(*lk.period(period))
            for part in (buckets, rosters):
                for i in range(0, len(part), 8192):
                    pipe.unlink(*part[i : i + 8192])
            await pipe.execute()

    async def forget_player(
        self, board_id: str, size: int, periods: Sequence[str], player_id: str
    ) -> None:
        """An erased player leaves every period's cohort and queue, and the tiers."""
        lk = keys.LeagueKeys(board_id)
        with reachable():
            for period in periods:
                members = lk.members(period, player_id)
                # in a pipeline: on a Sentinel group with replica reads, the primary answers
                # (a replica may not hold a placement made a moment ago)
                read = self.conn.client.pipeline(transaction=False)
                read.hget(members, player_id)
                [at] = await read.execute()
                pipe = self.conn.client.pipeline(transaction=False)
                if at is not None:
                    tier, _, ordinal = _text(at).partition(":")
                    pipe.hdel(lk.roster(period, int(tier), int(ordinal) // size), ordinal)
                pipe.hdel(members, player_id)
                pipe.zrem(lk.period(period)[2], player_id)
                await pipe.execute()
            await self.conn.client.hdel(lk.tiers(player_id), player_id)
