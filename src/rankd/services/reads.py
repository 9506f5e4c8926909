"""The read path: top, player, around, friends, rank-of and periods, all from Redis.

Every read is one Redis round trip (a pipeline or a read-only script), plus a cached name
lookup. Ranks are unique: by composite (score, then earlier achiever at the board's tie
resolution), then by player id in descending byte order, which is how Redis orders equal
scores in a reversed range.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from rankd.boards import BoardConfig
from rankd.errors import InvalidRequest, PlayerNotRanked, ScoreOutOfRange
from rankd.formats import SEGMENT_VALUE_PATTERN, format_time, is_segment_value
from rankd.periods import Period, PeriodError, PeriodRef, parse_period, period_at
from rankd.results import (
    Around,
    Entry,
    FriendEntry,
    Friends,
    PeriodInfo,
    Periods,
    PlayerStanding,
    RankOf,
    Top,
)
from rankd.services.names import NameCache
from rankd.stores.redis_store import RedisStore
from rankd.ttlcache import TTLCache

# Estimated bytes a cached top list holds: the dicts and strings of each entry.
_TOP_BYTES = 400
_ENTRY_BYTES = 450


@dataclass(frozen=True, slots=True)
class Scope:
    """Which board period a read is about."""

    board: BoardConfig
    window: str
    period: Period
    segment: str = ""  # "" for the global standings, else "<dimension>:<value>"

    @property
    def ref(self) -> PeriodRef:
        return PeriodRef(self.board.board_id, self.window, self.period.id, self.segment)

    def not_ranked(self, player_id: str) -> PlayerNotRanked:
        return PlayerNotRanked(
            f"player {player_id!r} has no entry in {self.window} period {self.period.id}"
        )


def resolve_segment(board: BoardConfig, segment: str | None) -> str:
    """A read's ``segment=<dimension>:<value>`` ("" for the global standings)."""
    if segment is None:
        return ""
    dimension, colon, value = segment.partition(":")
    if not colon or dimension not in board.segments or not is_segment_value(value):
        known = ", ".join(board.segments) or "none"
        raise InvalidRequest(
            f"segment must be <dimension>:<value> with one of this board's dimensions "
            f"({known}) and a value matching {SEGMENT_VALUE_PATTERN}"
        )
    return segment


def resolve_scope(
    board: BoardConfig, window: str | None, period: str | None, segment: str | None = None
) -> Scope:
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
    return Scope(board, window, resolved, resolve_segment(board, segment))


class Reader:
    def __init__(
        self,
        store: RedisStore,
        names: NameCache,
        top_cache_s: float = 0.0,
        top_cache_bytes: int = 16 << 20,
    ) -> None:
        self.store = store
        self.names = names
        # Top lists are the same for every reader: each process renders one at most once per
        # top_cache_s (default 0.2 s, well inside the design's 2 s read staleness budget).
        self._tops: TTLCache[tuple[str, str, str, str, int, int], Top] = TTLCache(
            top_cache_s,
            top_cache_bytes,
            lambda _, body: _TOP_BYTES + _ENTRY_BYTES * len(body["entries"]),
        )

    def _entries(
        self, scope: Scope, rows: list[tuple[str, int, int, int]], names: dict[str, str | None]
    ) -> list[Entry]:
        """Entries from (player_id, composite, exact achieved ms or 0, rank) rows."""
        codec = scope.board.codecs[scope.window]
        start_ms = scope.period.start_ms
        entries: list[Entry] = []
        for pid, composite, achieved_ms, rank in rows:
            score, offset = codec.unpack(composite)
            entries.append(
                {
                    "rank": rank,
                    "player_id": pid,
                    "score": score,
                    # an entry from before exact times were kept shows its tie bucket's time
                    "achieved_at": format_time(achieved_ms or start_ms + offset),
                    "name": names.get(pid),
                }
            )
        return entries

    async def top(self, scope: Scope, n: int, offset: int) -> Top:
        cache_key = (*scope.ref, n, offset)
        hit = self._tops.get(cache_key)
        if hit is not None:
            return hit.value
        found, total = await self.store.top(scope.ref, offset, n)
        rows = [(pid, c, at, offset + i + 1) for i, (pid, c, at) in enumerate(found)]
        names = await self.names.lookup(pid for pid, _, _ in found)
        body: Top = {
            "board_id": scope.board.board_id,
            "window": scope.window,
            "period": scope.period.id,
            "total": total,
            "entries": self._entries(scope, rows, names),
        }
        self._tops.put(cache_key, body)
        return body

    async def player(self, scope: Scope, player_id: str) -> PlayerStanding:
        held, total, name = await self.store.entry(scope.ref, player_id)
        if held is None:
            raise scope.not_ranked(player_id)
        composite, rank0, achieved_ms = held
        rank = rank0 + 1
        names = self.names.absorb([player_id], [name])
        [entry] = self._entries(scope, [(player_id, composite, achieved_ms, rank)], names)
        return {
            "board_id": scope.board.board_id,
            "window": scope.window,
            "period": scope.period.id,
            **entry,
            "total": total,
            "percentile": round(100.0 * (total - rank + 1) / total, 4),
        }

    async def around(self, scope: Scope, player_id: str, span: int) -> Around:
        found = await self.store.around(scope.ref, player_id, span)
        if found is None:
            raise scope.not_ranked(player_id)
        first0, total, slice_ = found
        rows = [(pid, c, at, first0 + i + 1) for i, (pid, c, at) in enumerate(slice_)]
        names = await self.names.lookup(pid for pid, _, _ in slice_)
        return {
            "board_id": scope.board.board_id,
            "window": scope.window,
            "period": scope.period.id,
            "total": total,
            "entries": self._entries(scope, rows, names),
        }

    async def friends(self, scope: Scope, player_id: str, friend_ids: list[str]) -> Friends:
        ids = list(dict.fromkeys([player_id, *friend_ids]))
        standings, raw_names = await self.store.group(scope.ref, ids)
        present = [
            (pid, held[0], held[2], held[1] + 1)
            for pid, held in zip(ids, standings, strict=True)
            if held is not None
        ]
        present.sort(key=lambda row: row[3])
        names = self.names.absorb(ids, raw_names)
        entries: list[FriendEntry] = [
            {**entry, "position": position}
            for position, entry in enumerate(self._entries(scope, present, names), start=1)
        ]
        return {
            "board_id": scope.board.board_id,
            "window": scope.window,
            "period": scope.period.id,
            "entries": entries,
        }

    async def rank_of(self, scope: Scope, score: int) -> RankOf:
        board = scope.board
        if score > board.max_score:
            raise ScoreOutOfRange(
                f"score {score} is above this board's max_score {board.max_score}"
            )
        floor = board.codecs[scope.window].score_floor(score)
        above, total = await self.store.count_from(scope.ref, floor)
        return {
            "board_id": board.board_id,
            "window": scope.window,
            "period": scope.period.id,
            "score": score,
            "rank": above + 1,
            "total": total,
        }

    async def periods(self, board: BoardConfig, window: str) -> Periods:
        now_ms = int(time.time() * 1000)
        ids = set(await self.store.period_ids(board.board_id, window))
        ids.add(period_at(window, now_ms).id)
        periods = sorted((parse_period(window, pid) for pid in ids), key=lambda p: -p.start_ms)
        grace_ms = board.grace_seconds * 1000
        infos: list[PeriodInfo] = [
            {
                "period": p.id,
                "status": p.status(now_ms, grace_ms),
                "starts_at": format_time(p.start_ms),
                "ends_at": format_time(p.end_ms),
            }
            for p in periods
        ]
        return {"board_id": board.board_id, "window": window, "periods": infos}
