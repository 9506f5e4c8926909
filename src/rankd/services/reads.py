"""The read path: top, player, around, friends, rank-of and periods, from Redis or the
archive.

Every read is one Redis round trip (a pipeline or a read-only script), plus a cached name
lookup. Ranks are unique: by composite (score, then the earlier achiever's time unit), then
by member, the exact achieved time's stamp and the player id (codec.member), in descending
byte order, which is how Redis orders equal scores in a reversed range: equal scores go to
the earliest, to the millisecond, then to the larger player id.

A closed period is read from Redis while it is there and from the archive (PostgreSQL, see
stores/archive.py and services/seasons.py) once it has left: ``from_archive`` decides, and
both give the same answers. Open periods never consult the archive.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from rankd.boards import BoardConfig
from rankd.errors import InvalidRequest, PlayerNotRanked, ScoreOutOfRange, Unavailable
from rankd.formats import SEGMENT_VALUE_PATTERN, format_time, is_segment_value
from rankd.periods import ALL_TIME, Period, PeriodError, PeriodRef, parse_period, period_at
from rankd.results import (
    ApproxStanding,
    Around,
    Entry,
    FriendEntry,
    Friends,
    Head,
    PeriodInfo,
    Periods,
    PlayerStanding,
    RankOf,
    Segments,
    SegmentValue,
    Top,
)
from rankd.services.approx import Histograms
from rankd.services.names import NameCache
from rankd.services.own_view import NOWHERE, OwnView
from rankd.stores import standings
from rankd.stores.archive import ArchivedRow, ArchiveState, ArchiveStore
from rankd.stores.redis.reads import Reads
from rankd.ttlcache import TTLCache

# Estimated bytes a cached top list holds: the dicts and strings of each entry.
_TOP_BYTES = 400
_ENTRY_BYTES = 450
_STATE_BYTES = 300  # a cached archive state: its key tuple and the small state object
_PERIOD_STATE_BYTES = 120  # one period's (or segment's) state in a cached listing
_PERIOD_ID_BYTES = 70  # one period id in a cached set of frozen periods
# A read that finds a closed period's key gone re-reads its archive state if what this
# process knows is older than this: a just-archived period turns to the archive within
# a second, and reads of closed periods that never had data cost PostgreSQL one query per
# period and second, however many arrive.
_RECHECK_S = 1.0
# GET /segments: the segments of a period looked at (the durable copy's list, by index),
# and the values returned per dimension, most entries first
MAX_SEGMENTS_SCANNED = 10_000
MAX_SEGMENT_VALUES = 100


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


def _percentile(rank: int, total: int) -> float:
    """Share of entries ranked at or below ``rank``, 0..100."""
    return round(100.0 * (total - rank + 1) / total, 4)


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

    @property
    def head(self) -> Head:
        return {"board_id": self.board.board_id, "window": self.window, "period": self.period.id}

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
        store: Reads,
        names: NameCache,
        top_cache_s: float = 0.0,
        top_cache_bytes: int = 16 << 20,
        *,
        archive: ArchiveStore | None = None,
        archive_state_s: float = 5.0,
        archive_state_bytes: int = 1 << 20,
        clock: Callable[[], int] = _wall_clock_ms,
        restoring: Callable[[PeriodRef], bool] | None = None,
        histograms: Histograms | None = None,
    ) -> None:
        # sharded boards' score histograms, for accuracy=approx (services/approx.py)
        self.histograms = histograms
        # whether a period is still being restored by a rebuild in this process (its reads
        # answer 503 until it is in place; the periods already restored are served)
        self.restoring = restoring
        self.store = store
        self.names = names
        self.archive = archive
        self.clock = clock
        # Whether a closed period is frozen or has left Redis. Only moves forward (a raised
        # grace reopens a period, which reads decide without this), and a read that finds
        # the Redis key gone asks again (see _RECHECK_S), so a stale answer costs little.
        # Two levels, so a read of a period never frozen, or of a segment value nobody
        # has, is answered from memory: the frozen period ids of a board window (one
        # query), then the frozen segments of one of those periods (one query each).
        self._frozen: TTLCache[tuple[str, str], frozenset[str]] = TTLCache(
            archive_state_s,
            archive_state_bytes,
            lambda _, ids: _STATE_BYTES + _PERIOD_ID_BYTES * len(ids),
        )
        self._states: TTLCache[tuple[str, str, str], dict[str, ArchiveState]] = TTLCache(
            archive_state_s,
            archive_state_bytes,
            lambda _, states: _STATE_BYTES + _PERIOD_STATE_BYTES * len(states),
        )
        self._listed: TTLCache[tuple[str, str], dict[str, ArchiveState]] = TTLCache(
            archive_state_s,
            archive_state_bytes,
            lambda _, states: _STATE_BYTES + _PERIOD_STATE_BYTES * len(states),
        )
        # Top lists are the same for every reader: each process renders one at most once per
        # top_cache_s (default 0.2 s, well inside the design's 2 s read staleness budget).
        self._tops: TTLCache[tuple[str, str, str, str, int, int], Top] = TTLCache(
            top_cache_s,
            top_cache_bytes,
            lambda _, body: _TOP_BYTES + _ENTRY_BYTES * len(body["entries"]),
        )

    def forget_tops(self) -> None:
        """Drop this process's rendered top lists (after a ban or a hold decision, so its
        own next read shows the change at once; other processes within top_cache_s)."""
        self._tops.clear()

    # Redis or archive

    def _restored(self, scope: Scope) -> None:
        if self.restoring is not None and self.restoring(scope.ref):
            raise Unavailable(
                f"{scope.window} period {scope.period.id} is being restored after a Redis "
                "restart; retry in a moment"
            )

    def _closed(self, scope: Scope) -> bool:
        """Past its grace by the board's current config: only such periods are archived."""
        period = scope.period
        grace_ms = scope.board.grace_seconds * 1000
        return period.window != ALL_TIME and period.status(self.clock(), grace_ms) == "closed"

    async def _archive_state(self, ref: PeriodRef, *, recheck: bool) -> ArchiveState | None:
        """The period's archive state from the two cached levels (see __init__): at most
        one PostgreSQL query per board window and per frozen period every _RECHECK_S,
        whatever segment values or period ids the reads name."""
        assert self.archive is not None
        window = (ref.board, ref.window)
        frozen = self._frozen.get(window)
        if frozen is None or (recheck and frozen.age_s >= _RECHECK_S):
            ids = await self.archive.frozen_periods(ref.board, ref.window)
            self._frozen.put(window, ids)
        else:
            ids = frozen.value
        if ref.period not in ids:
            return None
        period = (ref.board, ref.window, ref.period)
        hit = self._states.get(period)
        if hit is None or (recheck and hit.age_s >= _RECHECK_S):
            states = await self.archive.period_states(*period)
            self._states.put(period, states)
        else:
            states = hit.value
        return states.get(ref.segment)

    async def from_archive(self, scope: Scope, *, key_missing: bool = False) -> bool:
        """Whether a read of ``scope`` is served from the archive instead of Redis.

        A closed period is, once it has left Redis (``archived``), or once it is frozen and
        its Redis key turns out to be gone (``key_missing``: the read raced the job's
        UNLINK, or Redis lost the key). Open periods never ask PostgreSQL.
        """
        if self.archive is None or not self._closed(scope):
            return False
        state = await self._archive_state(scope.ref, recheck=key_missing)
        return state is not None and (state.archived or key_missing)

    async def _gone_to_archive(self, scope: Scope) -> bool:
        """After a Redis read found nothing: whether the key is gone to the archive."""
        if self.archive is None or not self._closed(scope):
            return False
        if await self.store.period_exists(scope.ref):
            return False
        return await self.from_archive(scope, key_missing=True)

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

    async def own_view(self, scope: Scope, viewer: str) -> OwnView | None:
        """The viewer's own view of ``scope`` when it differs from the public one (their
        entry is on :shadow or :pending); None when the public view is theirs too. An
        archived period's own view is its public standings: the frozen final results."""
        if await self.from_archive(scope):
            return None
        own, total = await self.store.own(scope.ref, viewer)
        if own is None or own[0] == "public":
            return None
        side, composite, rank, achieved_ms = own
        public_index = NOWHERE
        if side == "pending":  # a held run better than the public entry it may also have
            held, _ = await self.store.entry(scope.ref, viewer)
            if held is not None:
                public_index = held[1]
        return OwnView(viewer, composite, achieved_ms, rank - 1, public_index, total)

    async def _viewed_rows(
        self, scope: Scope, view: OwnView, first: int, count: int
    ) -> tuple[list[Entry], int]:
        """The own view's entries at indexes ``first .. first + count - 1``."""
        start, span = view.public_span(first, count)
        found, _ = await self.store.top(scope.ref, start, span)
        rows = [(pid, c, at, start + i) for i, (pid, c, at) in enumerate(found)]
        placed = view.place(rows, first, count)
        names = await self.names.lookup(pid for pid, _, _, _ in placed)
        return self._entries(scope, placed, names), view.total

    async def top(
        self,
        scope: Scope,
        n: int,
        offset: int,
        viewer: str | None = None,
        *,
        max_age_s: float | None = None,
    ) -> Top:
        """``max_age_s``: reuse a cached list only if it is at most this old (a live stream
        told of a change asks for a list read after it)."""
        self._restored(scope)
        if viewer is not None and (view := await self.own_view(scope, viewer)) is not None:
            entries, total = await self._viewed_rows(scope, view, offset, n)
            return {**scope.head, "total": total, "entries": entries}
        if viewer is not None and await self.from_archive(scope):
            return await self._archived_top(scope, n, offset, viewer)  # never cached
        cache_key = (*scope.ref, n, offset)
        hit = self._tops.get(cache_key)
        if hit is not None and (max_age_s is None or hit.age_s <= max_age_s):
            return hit.value
        if await self.from_archive(scope):
            return self._cached(cache_key, await self._archived_top(scope, n, offset))
        found, total = await self.store.top(scope.ref, offset, n)
        if total == 0 and await self.from_archive(scope, key_missing=True):
            return self._cached(cache_key, await self._archived_top(scope, n, offset))
        rows = [(pid, c, at, offset + i + 1) for i, (pid, c, at) in enumerate(found)]
        names = await self.names.lookup(pid for pid, _, _ in found)
        body: Top = {
            **scope.head,
            "total": total,
            "entries": self._entries(scope, rows, names),
        }
        self._tops.put(cache_key, body)
        return body

    async def player(
        self, scope: Scope, player_id: str, viewer: str | None = None, *, approx: bool = False
    ) -> PlayerStanding:
        """A player's standing. ``approx`` (accuracy=approx): on a sharded board's live
        period, estimated from the player's shard and the others' histograms (see
        services/approx.py); anywhere else exact, said so with error_bound 0."""
        if not approx:
            return await self._player(scope, player_id, viewer)
        if self.histograms is not None and scope.board.shards > 1 and viewer is None:
            self._restored(scope)
            if not await self.from_archive(scope):
                found = await self._approx_player(scope, player_id)
                if found is not None:
                    return found
        exact = await self._player(scope, player_id, viewer)
        said: ApproxStanding = {**exact, "approximate": False, "error_bound": 0}
        return said

    async def _approx_player(self, scope: Scope, player_id: str) -> ApproxStanding | None:
        assert self.histograms is not None
        shard, held, shard_total = await self.store.shard_entry(scope.ref, player_id)
        if held is None:
            return None  # the exact read says not ranked (or finds the archive)
        composite, rank0, achieved_ms = held
        ahead, bound, others = await self.histograms.estimate(
            scope.ref, scope.board.shards, shard, composite
        )
        total = max(shard_total + others, rank0 + ahead + 1)
        rank = rank0 + ahead + 1
        names = await self.names.lookup([player_id])
        [entry] = self._entries(scope, [(player_id, composite, achieved_ms, rank)], names)
        return {
            **scope.head,
            **entry,
            "total": total,
            "percentile": _percentile(rank, total),
            "approximate": True,
            "error_bound": bound,
        }

    async def _player(
        self, scope: Scope, player_id: str, viewer: str | None = None
    ) -> PlayerStanding:
        self._restored(scope)
        if viewer is not None and (view := await self.own_view(scope, viewer)) is not None:
            return await self._viewed_player(scope, view, player_id)
        if await self.from_archive(scope):
            return await self._archived_player(scope, player_id, viewer)
        held, total = await self.store.entry(scope.ref, player_id)
        if total == 0 and await self.from_archive(scope, key_missing=True):
            return await self._archived_player(scope, player_id, viewer)
        if held is None:
            raise scope.not_ranked(player_id)
        composite, rank0, achieved_ms = held
        rank = rank0 + 1
        names = await self.names.lookup([player_id])  # cached: a rank read is one command
        [entry] = self._entries(scope, [(player_id, composite, achieved_ms, rank)], names)
        return {
            **scope.head,
            **entry,
            "total": total,
            "percentile": _percentile(rank, total),
        }

    async def _viewed_player(self, scope: Scope, view: OwnView, player_id: str) -> PlayerStanding:
        if player_id == view.viewer:
            row = (player_id, view.composite, view.achieved_ms, view.index + 1)
        else:
            held, _ = await self.store.entry(scope.ref, player_id)
            if held is None:
                raise scope.not_ranked(player_id)
            composite, rank0, achieved_ms = held
            row = (player_id, composite, achieved_ms, view.view_index(rank0) + 1)
        [entry] = self._entries(scope, [row], await self.names.lookup([player_id]))
        return {
            **scope.head,
            **entry,
            "total": view.total,
            "percentile": _percentile(row[3], view.total),
        }

    async def around(
        self, scope: Scope, player_id: str, span: int, viewer: str | None = None
    ) -> Around:
        self._restored(scope)
        if viewer is not None and (view := await self.own_view(scope, viewer)) is not None:
            if player_id == viewer:
                center = view.index
            else:
                held, _ = await self.store.entry(scope.ref, player_id)
                if held is None:
                    raise scope.not_ranked(player_id)
                center = view.view_index(held[1])
            first = max(0, center - span)
            entries, total = await self._viewed_rows(scope, view, first, center + span - first + 1)
            return {**scope.head, "total": total, "entries": entries}
        if await self.from_archive(scope):
            return await self._archived_around(scope, player_id, span, viewer)
        found = await self.store.around(scope.ref, player_id, span)
        if found is None and await self._gone_to_archive(scope):
            return await self._archived_around(scope, player_id, span, viewer)
        if found is None:
            raise scope.not_ranked(player_id)
        first0, total, slice_ = found
        rows = [(pid, c, at, first0 + i + 1) for i, (pid, c, at) in enumerate(slice_)]
        names = await self.names.lookup(pid for pid, _, _ in slice_)
        return {
            **scope.head,
            "total": total,
            "entries": self._entries(scope, rows, names),
        }

    async def friends(
        self, scope: Scope, player_id: str, friend_ids: list[str], viewer: str | None = None
    ) -> Friends:
        self._restored(scope)
        ids = list(dict.fromkeys([player_id, *friend_ids]))
        view = None
        if viewer is not None:
            view = await self.own_view(scope, viewer)
        if view is None and await self.from_archive(scope):
            return await self._archived_friends(scope, ids, viewer)
        standings, raw_names = await self.store.group(scope.ref, ids)
        if (
            view is None
            and all(held is None for held in standings)
            and await self._gone_to_archive(scope)
        ):
            return await self._archived_friends(scope, ids, viewer)
        present = [
            (pid, held[0], held[2], held[1] + 1)
            for pid, held in zip(ids, standings, strict=True)
            if held is not None and (view is None or pid != view.viewer)
        ]
        if view is not None:
            present = [(pid, c, at, view.view_index(r - 1) + 1) for pid, c, at, r in present]
            if view.viewer in ids:
                present.append((view.viewer, view.composite, view.achieved_ms, view.index + 1))
        present.sort(key=lambda row: row[3])
        names = self.names.absorb(ids, raw_names)
        entries: list[FriendEntry] = [
            {**entry, "position": position}
            for position, entry in enumerate(self._entries(scope, present, names), start=1)
        ]
        return {
            **scope.head,
            "entries": entries,
        }

    async def rank_of(self, scope: Scope, score: int) -> RankOf:
        self._restored(scope)
        board = scope.board
        if score > board.max_score:
            raise ScoreOutOfRange(
                f"score {score} is above this board's max_score {board.max_score}"
            )
        floor = board.codecs[scope.window].score_floor(score)
        if await self.from_archive(scope):
            assert self.archive is not None
            above, total = await self.archive.count_from(scope.ref, floor)
        else:
            above, total = await self.store.count_from(scope.ref, floor)
            if total == 0 and await self.from_archive(scope, key_missing=True):
                assert self.archive is not None
                above, total = await self.archive.count_from(scope.ref, floor)
        return {
            "board_id": board.board_id,
            "window": scope.window,
            "period": scope.period.id,
            "score": score,
            "rank": above + 1,
            "total": total,
        }

    async def periods(self, board: BoardConfig, window: str) -> Periods:
        now_ms = self.clock()
        ids = set(await self.store.public_periods(board.board_id, window))
        ids.add(period_at(window, now_ms).id)
        states: dict[str, ArchiveState] = {}
        if self.archive is not None and window != ALL_TIME:
            listed = self._listed.get((board.board_id, window))
            if listed is not None:
                states = listed.value
            else:
                # PostgreSQL down: list what Redis knows, open or closed
                with contextlib.suppress(Unavailable):
                    states = await self.archive.states(board.board_id, window)
                    self._listed.put((board.board_id, window), states)
        ids.update(states)
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
        for info in infos:
            state = states.get(info["period"])
            if info["status"] == "closed" and state is not None and state.archived:
                info["status"] = "archived"
        return {"board_id": board.board_id, "window": window, "periods": infos}

    async def segments(self, scope: Scope) -> Segments:
        """The values of each of the board's segment dimensions that have public entries in
        the period (banned and held players do not count), most entries first, at most
        MAX_SEGMENT_VALUES per dimension. The list comes from the durable copy (a value
        shows once the log consumer has applied its first run, within moments), the totals
        from Redis, or from the archive for an archived period."""
        board = scope.board
        totals: dict[str, int] = {}
        if board.segments and self.archive is not None:
            ref = scope.ref
            if await self.from_archive(scope):
                totals = await self.archive.segment_totals(ref.board, ref.window, ref.period)
            else:
                async with self.archive.pg.connection() as conn:
                    listed = await standings.segments_seen(
                        conn, ref.board, ref.window, ref.period, MAX_SEGMENTS_SCANNED
                    )
                refs = [PeriodRef(ref.board, ref.window, ref.period, s) for s in listed]
                totals = dict(zip(listed, await self.store.public_totals(refs), strict=True))
        found: dict[str, list[SegmentValue]] = {d: [] for d in board.segments}
        for segment, total in totals.items():
            dimension, _, value = segment.partition(":")
            if total > 0 and dimension in found:
                found[dimension].append({"value": value, "total": total})
        return {
            **scope.head,
            "segments": [
                {
                    "dimension": d,
                    "values": sorted(values, key=lambda v: (-v["total"], v["value"]))[
                        :MAX_SEGMENT_VALUES
                    ],
                }
                for d, values in found.items()
            ],
        }

    # archived periods: the same answers, from PostgreSQL

    def _cached(self, cache_key: tuple[str, str, str, str, int, int], body: Top) -> Top:
        self._tops.put(cache_key, body)
        return body

    @staticmethod
    def _archived_entries(rows: list[ArchivedRow]) -> list[Entry]:
        return [
            {
                "rank": rank,
                "player_id": pid,
                "score": score,
                "achieved_at": format_time(achieved_ms),
                "name": name,
            }
            for rank, pid, score, achieved_ms, name in rows
        ]

    async def _archived_top(
        self, scope: Scope, n: int, offset: int, viewer: str | None = None
    ) -> Top:
        assert self.archive is not None
        rows, total = await self.archive.top(scope.ref, offset, n, viewer)
        return {
            **scope.head,
            "total": total,
            "entries": self._archived_entries(rows),
        }

    async def _archived_player(
        self, scope: Scope, player_id: str, viewer: str | None = None
    ) -> PlayerStanding:
        assert self.archive is not None
        row, total = await self.archive.entry(scope.ref, player_id, viewer)
        if row is None:
            raise scope.not_ranked(player_id)
        [entry] = self._archived_entries([row])
        return {
            **scope.head,
            **entry,
            "total": total,
            "percentile": _percentile(entry["rank"], total),
        }

    async def _archived_around(
        self, scope: Scope, player_id: str, span: int, viewer: str | None = None
    ) -> Around:
        assert self.archive is not None
        found = await self.archive.around(scope.ref, player_id, span, viewer)
        if found is None:
            raise scope.not_ranked(player_id)
        rows, total = found
        return {
            **scope.head,
            "total": total,
            "entries": self._archived_entries(rows),
        }

    async def _archived_friends(
        self, scope: Scope, ids: list[str], viewer: str | None = None
    ) -> Friends:
        assert self.archive is not None
        rows = await self.archive.group(scope.ref, ids, viewer)
        entries: list[FriendEntry] = [
            {**entry, "position": position}
            for position, entry in enumerate(self._archived_entries(rows), start=1)
        ]
        return {
            **scope.head,
            "entries": entries,
        }
