"""A league board's placement keys (keys.league): who is in which cohort of a period, each
player's tier, and the players waiting for their tier (services/leagues.py decides)."""

from __future__ import annotations

from collections.abc import Sequence

from rankd.stores.redis import keys
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.scripts import (
    LEAGUE_ADVANCE,
    LEAGUE_COHORT,
    LEAGUE_PLACE,
    LEAGUE_PLACED,
    Call,
)

CHUNK = 2_000  # players (or pairs) a script call or an HSET takes

Placement = tuple[str, str]  # (player, "<tier>:<ordinal>" or "wait")


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _pairs(reply: object) -> list[Placement]:
    flat = [_text(v) for v in reply] if isinstance(reply, list) else []
    return list(zip(flat[::2], flat[1::2], strict=True))


class LeagueKeys:
    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn

    async def place(
        self, board_id: str, asked: Sequence[tuple[str, bool, Sequence[str]]]
    ) -> list[list[str]]:
        """For each (period, whether it is the board's first, players): each player's
        placement (league_place.lua); one round trip."""
        calls: list[Call] = [
            (LEAGUE_PLACE, keys.league(board_id, period), ("1" if first else "0", *players))
            for period, first, players in asked
        ]
        with reachable():
            replies = await self.conn.pipeline(calls)
        return [[_text(s) for s in r] for r in replies]

    async def placed(
        self, board_id: str, period: str, found: Sequence[Placement]
    ) -> list[Placement]:
        """Put back placements (league_placed.lua, idempotent); the placements it made for
        waiting players whose tiers are known by now."""
        made: list[Placement] = []
        with reachable():
            for i in range(0, len(found), CHUNK):
                args = [a for pair in found[i : i + CHUNK] for a in pair]
                reply = await self.conn.call((LEAGUE_PLACED, keys.league(board_id, period), args))
                made += _pairs(reply)
        return made

    async def is_ready(self, board_id: str, period: str) -> bool:
        with reachable():
            return bool(await self.conn.client.exists(keys.league(board_id, period)[4]))

    async def waiting(self, board_id: str, period: str) -> bool:
        with reachable():
            return bool(await self.conn.client.exists(keys.league(board_id, period)[5]))

    async def set_tiers(self, board_id: str, tiers: Sequence[tuple[str, int]]) -> None:
        """Players' tiers as the moves left them (the first tier's are removed: absent is
        the first tier)."""
        key = keys.league(board_id, "-")[0]
        with reachable():
            for i in range(0, len(tiers), CHUNK):
                pipe = self.conn.client.pipeline(transaction=False)
                part = tiers[i : i + CHUNK]
                up: dict[str | bytes, int] = {p: tier for p, tier in part if tier > 0}
                if up:
                    pipe.hset(key, mapping=up)  # type: ignore[arg-type]
                down = [player for player, tier in part if tier == 0]
                if down:
                    pipe.hdel(key, *down)
                await pipe.execute()

    async def advance(self, board_id: str, period: str) -> list[Placement]:
        """Mark the period's tiers known and place its waiting players (league_advance.lua)."""
        with reachable():
            reply = await self.conn.call((LEAGUE_ADVANCE, keys.league(board_id, period), ()))
        return _pairs(reply)

    async def done_waiting(self, board_id: str, period: str) -> None:
        """The waiting players are placed in both stores: their queue goes."""
        with reachable():
            await self.conn.client.delete(*keys.league(board_id, period)[5:7])

    async def cohort(
        self, board_id: str, period: str, size: int, by: tuple[str, ...]
    ) -> tuple[int, int, list[str]] | None:
        """(tier, cohort, members in placement order) of the cohort ``by`` names: ("player",
        id) or ("cohort", tier, cohort); None when the player is not placed."""
        _, members, roster, *_ = keys.league(board_id, period)
        with reachable():
            reply = await self.conn.call((LEAGUE_COHORT, (members, roster), (size, *by)))
        if not reply:
            return None
        return int(_text(reply[0])), int(reply[1]), [_text(m) for m in reply[2:]]

    async def restore(
        self,
        board_id: str,
        tiers: Sequence[tuple[str, int]],
        periods: Sequence[tuple[str, Sequence[Placement], bool]],
    ) -> None:
        """A rebuild's part: the board's tiers, and per (period, placements, tiers known)
        its placements and waiting players, as the durable copy has them."""
        await self.set_tiers(board_id, tiers)
        for period, found, ready in periods:
            if ready:
                with reachable():
                    await self.conn.client.set(keys.league(board_id, period)[4], "1")
            await self.placed(board_id, period, found)

    async def forget_player(self, board_id: str, periods: Sequence[str], player_id: str) -> None:
        """An erased player leaves every period's cohort and the tiers."""
        with reachable():
            for period in periods:
                _, members, roster, _, _, wait, wset = keys.league(board_id, period)
                at = await self.conn.client.hget(members, player_id)
                pipe = self.conn.client.pipeline(transaction=False)
                if at is not None:
                    pipe.hdel(roster, at)
                pipe.hdel(members, player_id)
                pipe.lrem(wait, 0, player_id)
                pipe.srem(wset, player_id)
                await pipe.execute()
            await self.conn.client.hdel(keys.league(board_id, "-")[0], player_id)
