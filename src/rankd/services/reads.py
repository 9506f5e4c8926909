"""The read path: top, player, around, friends, rank-of and periods, all from Redis.

Every read is one Redis round trip (a pipeline or a read-only script), plus a cached name
lookup. Ranks are unique: by composite (score, then earlier achiever at the board's tie
resolution), then by player id in descending byte order, which is how Redis orders equal
scores in a reversed range.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from rankd import keys
from rankd.boards import BoardConfig
from rankd.errors import InvalidRequest, PlayerNotRanked, ScoreOutOfRange
from rankd.periods import Period, PeriodError, parse_period, period_at
from rankd.scripts import AROUND, FRIENDS, run_pipeline
from rankd.services.names import NameCache
from rankd.validation import format_time


@dataclass(frozen=True, slots=True)
class Scope:
    """Which board period a read is about."""

    board: BoardConfig
    window: str
    period: Period

    @property
    def keys(self) -> keys.PeriodKeys:
        return keys.period_keys(self.board.board_id, self.window, self.period.id)


def resolve_scope(board: BoardConfig, window: str | None, period: str | None) -> Scope:
    window = window or board.default_window
    if window not in board.windows:
        raise InvalidRequest(
            f"window must be one of this board's windows: {', '.join(board.windows)}"
        )
    if period is None:
        resolved = period_at(window, int(time.time() * 1000))
    else:
        try:
            resolved = parse_period(window, period)
        except PeriodError as exc:
            raise InvalidRequest(str(exc)) from exc
    return Scope(board, window, resolved)


def _number(raw: Any) -> int:
    # Redis may render a large double either way; both parse exactly below 2**53.
    return int(float(raw))


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class Reader:
    def __init__(self, redis: Redis, names: NameCache, top_cache_s: float = 0.0) -> None:
        self.redis = redis
        self.names = names
        # Top lists are the same for every reader: each process renders one at most once per
        # top_cache_s (default 0.2 s, well inside the design's 2 s read staleness budget).
        self.top_cache_s = top_cache_s
        self._tops: dict[tuple[str, str, str, int, int], tuple[float, dict[str, Any]]] = {}

    async def _entries(
        self,
        scope: Scope,
        rows: list[tuple[str, int, int]],
        names: dict[str, str | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Entries from (player_id, composite, rank) rows, with names (looked up unless the
        caller fetched them in its own pipeline)."""
        codec = scope.board.codecs[scope.window]
        if names is None:
            names = await self.names.lookup(pid for pid, _, _ in rows)
        entries = []
        for pid, composite, rank in rows:
            score, offset = codec.unpack(composite)
            entries.append(
                {
                    "rank": rank,
                    "player_id": pid,
                    "score": score,
                    "achieved_at": format_time(scope.period.start_ms + offset),
                    "name": names.get(pid),
                }
            )
        return entries

    def _head(self, scope: Scope) -> dict[str, Any]:
        return {
            "board_id": scope.board.board_id,
            "window": scope.window,
            "period": scope.period.id,
        }

    async def top(self, scope: Scope, n: int, offset: int) -> dict[str, Any]:
        cache_key = (scope.board.board_id, scope.window, scope.period.id, n, offset)
        hit = self._tops.get(cache_key)
        now = time.monotonic()
        if hit is not None and now - hit[0] < self.top_cache_s:
            return hit[1]
        body = await self._top(scope, n, offset)
        if self.top_cache_s > 0:
            if len(self._tops) > 10_000:
                self._tops.clear()
            self._tops[cache_key] = (now, body)
        return body

    async def _top(self, scope: Scope, n: int, offset: int) -> dict[str, Any]:
        key = scope.keys.public
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrevrange(key, offset, offset + n - 1, withscores=True)
        pipe.zcard(key)
        members, total = await pipe.execute()
        rows = [(_text(m), _number(s), offset + i + 1) for i, (m, s) in enumerate(members)]
        return {**self._head(scope), "total": total, "entries": await self._entries(scope, rows)}

    async def player(self, scope: Scope, player_id: str) -> dict[str, Any]:
        key = scope.keys.public
        pipe = self.redis.pipeline(transaction=False)
        pipe.zscore(key, player_id)
        pipe.zrevrank(key, player_id)
        pipe.zcard(key)
        pipe.hmget(keys.NAMES, [player_id])
        composite, rank0, total, name = await pipe.execute()
        if composite is None or rank0 is None:
            raise PlayerNotRanked(
                f"player {player_id!r} has no entry in {scope.window} period {scope.period.id}"
            )
        rank = rank0 + 1
        row = (player_id, _number(composite), rank)
        [entry] = await self._entries(scope, [row], self.names.absorb([player_id], name))
        percentile = round(100.0 * (total - rank + 1) / total, 4)
        return {**self._head(scope), **entry, "total": total, "percentile": percentile}

    async def around(self, scope: Scope, player_id: str, span: int) -> dict[str, Any]:
        [reply] = await run_pipeline(
            self.redis, [(AROUND, (scope.keys.public,), (player_id, span))]
        )
        if reply[0] == -1:
            raise PlayerNotRanked(
                f"player {player_id!r} has no entry in {scope.window} period {scope.period.id}"
            )
        first, total, flat = int(reply[0]), int(reply[1]), reply[2]
        rows = [
            (_text(flat[i]), _number(flat[i + 1]), first + i // 2 + 1)
            for i in range(0, len(flat), 2)
        ]
        return {
            **self._head(scope),
            "total": total,
            "entries": await self._entries(scope, rows),
        }

    async def friends(self, scope: Scope, player_id: str, friend_ids: list[str]) -> dict[str, Any]:
        ids = list(dict.fromkeys([player_id, *friend_ids]))
        call = (FRIENDS, (scope.keys.public,), tuple(ids))
        [flat, names] = await run_pipeline(self.redis, [call], [("HMGET", (keys.NAMES, *ids))])
        present = [
            (pid, _number(flat[2 * i]), int(flat[2 * i + 1]) + 1)
            for i, pid in enumerate(ids)
            if flat[2 * i] is not None
        ]
        present.sort(key=lambda row: row[2])
        entries = await self._entries(scope, present, self.names.absorb(ids, names))
        for position, entry in enumerate(entries, start=1):
            entry["position"] = position
        return {**self._head(scope), "entries": entries}

    async def rank_of(self, scope: Scope, score: int) -> dict[str, Any]:
        board = scope.board
        if score > board.max_score:
            raise ScoreOutOfRange(
                f"score {score} is above this board's max_score {board.max_score}"
            )
        floor = board.codecs[scope.window].score_floor(score)
        key = scope.keys.public
        pipe = self.redis.pipeline(transaction=False)
        pipe.zcount(key, floor, "+inf")
        pipe.zcard(key)
        above, total = await pipe.execute()
        return {**self._head(scope), "score": score, "rank": above + 1, "total": total}

    async def periods(self, board: BoardConfig, window: str) -> dict[str, Any]:
        index = keys.periods_index(board.board_id, window)
        now_ms = int(time.time() * 1000)
        ids = {_text(m) for m in await self.redis.zrange(index, 0, -1)}
        ids.add(period_at(window, now_ms).id)
        periods = sorted((parse_period(window, pid) for pid in ids), key=lambda p: -p.start_ms)
        grace_ms = board.grace_seconds * 1000
        return {
            "board_id": board.board_id,
            "window": window,
            "periods": [
                {
                    "period": p.id,
                    "status": p.status(now_ms, grace_ms),
                    "starts_at": format_time(p.start_ms),
                    "ends_at": format_time(p.end_ms),
                }
                for p in periods
            ],
        }
