"""The read path: top, player, around, friends, rank-of, periods and segments.

Every read asks one standings source (services/standings/), picked once per request by
``Reader.standings``: Redis while the period is there (one sorted set, or a sharded board's
shards), the archive (PostgreSQL, see stores/archive.py and services/seasons.py) once a
closed period has left it; ``from_archive`` decides, and both give the same answers. Open
periods never consult the archive. On top of the source the reader composes a player's own
view (own_view.py), the response shapes and the per-process top-list cache.

A live read is one Redis round trip (a pipeline or a read-only script), plus a cached name
lookup. Ranks are unique: by composite (score, then the earlier achiever's time unit), then
by member, the exact achieved time's stamp and the player id (codec.member), in descending
byte order, which is how Redis orders equal scores in a reversed range: equal scores go to
the earliest, to the millisecond, then to the larger player id.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from rankd import cursors
from rankd.boards import BoardConfig
from rankd.cursors import Cursor
from rankd.errors import PlayerNotRanked, ScoreOutOfRange, Unavailable
from rankd.periods import PeriodRef
from rankd.results import (
    ApproxStanding,
    Around,
    FriendEntry,
    Friends,
    Periods,
    PlayerStanding,
    RankOf,
    Segments,
    TopPage,
)
from rankd.services.answers import entry_of, following, listed, standing_of, total_of
from rankd.services.approx import Histograms
from rankd.services.listings import Listings
from rankd.services.names import NameCache
from rankd.services.scope import Scope
from rankd.services.standings import Row, Standings
from rankd.services.standings.archived import ArchiveStandings, ArchiveStates
from rankd.services.standings.live import KeyStandings, ShardedStandings, live
from rankd.stores.archive import ArchiveStore
from rankd.stores.redis.reads import Reads
from rankd.ttlcache import TTLCache

# Estimated bytes a cached top list holds: the dicts and strings of each entry.
_TOP_BYTES = 400
_ENTRY_BYTES = 450

T = TypeVar("T")


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


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
        # which closed periods are frozen or have left Redis (services/standings/archived.py)
        self.states = (
            None
            if archive is None
            else ArchiveStates(archive, archive_state_s, archive_state_bytes)
        )
        self.listings = Listings(store, archive, self.states, clock)
        # Top lists are the same for every reader: each process renders one at most once per
        # top_cache_s (default 0.2 s, well inside the design's 2 s read staleness budget).
        # a top list's answer, its next_cursor made once with it
        self._tops: TTLCache[tuple[str, str, str, str, int, int], TopPage] = TTLCache(
            top_cache_s,
            top_cache_bytes,
            lambda _, body: _TOP_BYTES + _ENTRY_BYTES * len(body["entries"]),
        )
        # signs top-list cursors; the runtime sets the service's shared secret at open
        self.cursor_key = secrets.token_bytes(32)

    def forget_tops(self) -> None:
        """Drop this process's rendered top lists (after a ban or a hold decision, so its
        own next read shows the change at once; other processes within top_cache_s)."""
        self._tops.clear()

    # which standings answer

    def check_restored(self, scope: Scope) -> None:
        """503 while a rebuild in this process is restoring the period (also for a read
        made outside this class: services/leagues.py)."""
        if self.restoring is not None and self.restoring(scope.ref):
            raise Unavailable(
                f"{scope.window} period {scope.period.id} is being restored after a Redis "
                "restart; retry in a moment"
            )

    def is_closed(self, scope: Scope) -> bool:
        """Past its grace by the board's current config: only such periods are archived."""
        return scope.board.period_status(scope.period, self.clock()) == "closed"

    async def from_archive(self, scope: Scope, *, key_missing: bool = False) -> bool:
        """Whether a read of ``scope`` is served from the archive instead of Redis.

        A closed period is, once it has left Redis (``archived``), or once it is frozen and
        its Redis key turns out to be gone (``key_missing``: the read raced the job's
        UNLINK, or Redis lost the key). Open periods never ask PostgreSQL.
        """
        if self.states is None or not self.is_closed(scope):
            return False
        state = await self.states.state(scope.ref, recheck=key_missing)
        return state is not None and (state.archived or key_missing)

    async def standings(self, scope: Scope, viewer: str | None = None) -> Standings:
        """The one source a read of ``scope`` asks: the archive once the period has left
        Redis (as ``viewer`` sees it), else the period's Redis key or keys."""
        if await self.from_archive(scope):
            return self._archived(scope, viewer)
        codec = scope.board.codecs[scope.window]
        start_ms = scope.period.start_ms
        return live(self.store, self.names, scope.ref, codec, start_ms, scope.board.shards)

    def _archived(self, scope: Scope, viewer: str | None) -> ArchiveStandings:
        assert self.archive is not None
        return ArchiveStandings(self.archive, scope.ref, viewer)

    async def _ask(
        self,
        scope: Scope,
        source: Standings,
        read: Callable[[Standings], Awaitable[T]],
        total: Callable[[T], int | None],
        viewer: str | None = None,
    ) -> T:
        """``read`` from ``source``, or from the archive if ``source`` is Redis and found
        the period empty because its keys are gone there (the read raced the season job's
        UNLINK, or Redis lost them). ``total``: the entries the answer shows the period
        holds, its total or at least those found (0: empty; None: the answer cannot tell,
        and the source is asked)."""
        found = await read(source)
        if source.archived or self.states is None or not self.is_closed(scope):
            return found
        known = total(found)
        if known is None:
            known = await source.total()
        if known == 0 and await self.from_archive(scope, key_missing=True):
            return await read(self._archived(scope, viewer))
        return found

    # the reads

    async def top(
        self,
        scope: Scope,
        n: int,
        offset: int,
        viewer: str | None = None,
        *,
        max_age_s: float | None = None,
    ) -> TopPage:
        """``max_age_s``: reuse a cached list only if it is at most this old (a live stream
        told of a change asks for a list read after it)."""
        return await self._top(scope, n, offset, viewer, max_age_s=max_age_s)

    async def top_page(
        self, scope: Scope, n: int, offset: int, viewer: str | None, cursor: Cursor | None
    ) -> TopPage:
        """The top list with the cursor of the page after it (GET .../top). A cursor's
        page starts after its position on a live public list, else at its offset."""
        after = None
        if cursor is not None:
            offset, after = cursor.offset, cursor.position
        return await self._top(scope, n, offset, viewer, after=after)

    def _paged(
        self, scope: Scope, rows: list[Row], total: int, viewer: str | None = None
    ) -> TopPage:
        """A top list's answer with its next_cursor (made once per cached list)."""
        more = following(rows, total, viewer)
        token = None
        if more is not None:
            read = scope.cursor_read(more.viewer)
            token = cursors.encode(Cursor(read, more.offset, more.position), self.cursor_key)
        return {**listed(scope, rows, total), "next_cursor": token}

    async def _top(
        self,
        scope: Scope,
        n: int,
        offset: int,
        viewer: str | None,
        *,
        max_age_s: float | None = None,
        after: tuple[str, int, int] | None = None,
    ) -> TopPage:
        self.check_restored(scope)
        source = None
        if viewer is not None:
            source = await self.standings(scope, viewer)
            if (view := await source.own_view(viewer)) is not None:
                rows, total = await view.rows(source, offset, n)
                return self._paged(scope, rows, total, viewer)
            if source.archived:  # the viewer's own (a banned viewer sees themselves)
                rows, total = await source.top(offset, n)  # never cached
                return self._paged(scope, rows, total, viewer)
        if after is not None:  # a cursor's page: never cached (it is asked once)
            if source is None:
                source = await self.standings(scope)
            position = after

            def page(s: Standings) -> Awaitable[tuple[list[Row], int]]:
                if isinstance(s, KeyStandings | ShardedStandings):
                    return s.after(position, n)
                return s.top(offset, n)  # an archive never changes: its offset is exact

            rows, total = await self._ask(scope, source, page, total_of)
            return self._paged(scope, rows, total)
        cache_key = (*scope.ref, n, offset)
        hit = self._tops.get(cache_key)
        if hit is not None and (max_age_s is None or hit.age_s <= max_age_s):
            return hit.value
        started = time.monotonic()
        if source is None:
            source = await self.standings(scope)
        rows, total = await self._ask(scope, source, lambda s: s.top(offset, n), total_of)
        body = self._paged(scope, rows, total)
        # aged from the read's start: a change noticed meanwhile (live streams) may be missing
        self._tops.put(cache_key, body, age_s=time.monotonic() - started)
        return body

    async def player(
        self, scope: Scope, player_id: str, viewer: str | None = None, *, approx: bool = False
    ) -> PlayerStanding:
        """A player's standing. ``approx`` (accuracy=approx): on a sharded board's live
        period, estimated from the player's shard and the others' histograms (see
        services/approx.py); anywhere else exact, said so with error_bound 0."""
        self.check_restored(scope)
        source = await self.standings(scope, viewer)
        if (
            approx
            and viewer is None
            and self.histograms is not None
            and isinstance(source, ShardedStandings)
            # None: no entry on the player's shard (the exact read says not ranked, or
            # finds the period in the archive)
            and (found := await source.approx_entry(player_id, self.histograms)) is not None
        ):
            row, total, bound = found
            estimate: ApproxStanding = {
                **standing_of(scope, row, total),
                "approximate": True,
                "error_bound": bound,
            }
            return estimate
        view = None if viewer is None else await source.own_view(viewer)
        if view is not None:
            held, total = await view.entry(source, player_id), view.total
        else:
            held, total = await self._ask(
                scope, source, lambda s: s.entry(player_id), total_of, viewer
            )
        if held is None:
            raise scope.not_ranked(player_id)
        exact = standing_of(scope, held, total)
        if not approx:
            return exact
        said: ApproxStanding = {**exact, "approximate": False, "error_bound": 0}
        return said

    async def around(
        self, scope: Scope, player_id: str, span: int, viewer: str | None = None
    ) -> Around:
        self.check_restored(scope)
        source = await self.standings(scope, viewer)
        view = None if viewer is None else await source.own_view(viewer)
        if view is not None:
            center = await view.entry(source, player_id)
            if center is None:
                raise scope.not_ranked(player_id)
            first = max(0, center.rank - 1 - span)
            count = center.rank + span - first
            return listed(scope, *await view.rows(source, first, count))
        found = await self._ask(
            scope,
            source,
            lambda s: s.around(player_id, span),
            lambda found: None if found is None else found[1],
            viewer,
        )
        if found is None:
            raise scope.not_ranked(player_id)
        return listed(scope, *found)

    async def friends(
        self, scope: Scope, player_id: str, friend_ids: list[str], viewer: str | None = None
    ) -> Friends:
        self.check_restored(scope)
        ids = list(dict.fromkeys([player_id, *friend_ids]))
        source = await self.standings(scope, viewer)
        view = None if viewer is None else await source.own_view(viewer)
        if view is None:
            rows = await self._ask(
                scope, source, lambda s: s.group(ids), lambda rows: len(rows) or None, viewer
            )
        else:
            rows = view.among(await source.group(ids), ids)
        entries: list[FriendEntry] = [
            {**entry_of(row), "position": position} for position, row in enumerate(rows, start=1)
        ]
        found = {entry["player_id"] for entry in entries}
        # the asked ids this view shows no entry for (the public view: banned ones too)
        missing = [i for i in ids if i not in found]
        return {**scope.head, "entries": entries, "not_found": missing}

    async def ranks(self, scope: Scope, player_ids: Sequence[str]) -> dict[str, int]:
        """The public ranks of those of ``player_ids`` that have an entry (player streams:
        one group read for many players)."""
        self.check_restored(scope)
        source = await self.standings(scope)
        return {row.player_id: row.rank for row in await source.group(player_ids)}

    async def own_rank(self, scope: Scope, player_id: str) -> int | None:
        """The player's rank in their own view (None: no entry)."""
        try:
            return (await self.player(scope, player_id, player_id))["rank"]
        except PlayerNotRanked:
            return None

    async def rank_of(self, scope: Scope, score: int) -> RankOf:
        self.check_restored(scope)
        board = scope.board
        if score > board.max_score:
            raise ScoreOutOfRange(
                f"score {score} is above this board's max_score {board.max_score}"
            )
        floor = board.codecs[scope.window].score_floor(score)
        source = await self.standings(scope)
        above, total = await self._ask(scope, source, lambda s: s.count_from(floor), total_of)
        return {
            "board_id": board.board_id,
            "window": scope.window,
            "period": scope.period.id,
            "score": score,
            "rank": above + 1,
            "total": total,
        }

    async def periods(self, board: BoardConfig, window: str) -> Periods:
        return await self.listings.periods(board, window)

    async def segments(self, scope: Scope) -> Segments:
        """The segment values with public entries in the period (services/listings.py)."""
        archived = bool(scope.board.segments) and await self.from_archive(scope)
        return await self.listings.segments(scope.board, scope.ref, scope.head, archived)
