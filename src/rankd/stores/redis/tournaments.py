"""A scheduled board's admission keys (keys.tournament): who joined an occurrence, which runs
it counted, how many per player (services/tournaments.py decides with them)."""

from __future__ import annotations

from collections.abc import Sequence

from rankd.stores.redis import keys
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.scripts import ADMIT, ADMITTED, JOIN, UNADMIT, Call

CHUNK = 2_000  # (player, run) pairs a script call takes


class TournamentKeys:
    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn

    async def admit(
        self,
        board_id: str,
        rules: tuple[bool, int, int],
        asked: Sequence[tuple[str, Sequence[tuple[str, str]]]],
    ) -> list[list[str]]:
        """For each (occurrence, [(player, run_id)]): each run's status (admit.lua), under
        ``rules`` (join required, most entrants, most attempts); one round trip."""
        need_join, cap, most = rules
        calls: list[Call] = []
        for period, runs in asked:
            args = [a for run in runs for a in run]
            calls.append(
                (
                    ADMIT,
                    keys.tournament(board_id, period),
                    ("1" if need_join else "0", cap, most, *args),
                )
            )
        with reachable():
            replies = await self.conn.pipeline(calls)
        return [[s.decode() if isinstance(s, bytes) else str(s) for s in r] for r in replies]

    async def unadmit(
        self, board_id: str, taken: Sequence[tuple[str, Sequence[tuple[str, str, str]]]]
    ) -> None:
        """Take back admissions whose runs were not logged: (occurrence, [(player, run id,
        "counted" or "entered")])."""
        calls: list[Call] = [
            (UNADMIT, keys.tournament(board_id, period), tuple(a for run in runs for a in run))
            for period, runs in taken
            if runs
        ]
        if calls:
            with reachable():
                await self.conn.run(calls)

    async def join(self, board_id: str, period: str, player_id: str, cap: int) -> bool:
        """Whether the player is in the occurrence now (False: it is full)."""
        entrants = keys.tournament(board_id, period)[0]
        with reachable():
            reply = await self.conn.call((JOIN, (entrants,), (player_id, cap)))
        return (reply.decode() if isinstance(reply, bytes) else str(reply)) == "joined"

    async def admitted(
        self, board_id: str, period: str, joined: Sequence[str], tries: Sequence[tuple[str, str]]
    ) -> None:
        """Put back what the durable copy says the occurrence admitted (idempotent)."""
        occurrence = keys.tournament(board_id, period)
        calls: list[Call] = []
        for i in range(0, len(joined), CHUNK):
            calls.append(
                (ADMITTED, occurrence, (len(joined[i : i + CHUNK]), *joined[i : i + CHUNK]))
            )
        for i in range(0, len(tries), CHUNK):
            args = [a for run in tries[i : i + CHUNK] for a in run]
            calls.append((ADMITTED, occurrence, (0, *args)))
        if calls:
            with reachable():
                await self.conn.run(calls)

    async def forget_player(self, board_id: str, period: str, player_id: str) -> None:
        """An erased player leaves the occurrence's admission keys."""
        entrants, tries, counts = keys.tournament(board_id, period)
        with reachable():
            await self.conn.client.srem(entrants, player_id)
            await self.conn.client.hdel(counts, player_id)
            found = [m async for m in self.conn.client.sscan_iter(tries, match=f"{player_id}|*")]
            for i in range(0, len(found), 500):
                await self.conn.client.srem(tries, *found[i : i + 500])

    async def unlink(self, board_id: str, period: str) -> None:
        with reachable():
            await self.conn.client.unlink(*keys.tournament(board_id, period))
