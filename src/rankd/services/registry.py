"""Board configs: stored in PostgreSQL, served from a short-lived in-process cache."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

from rankd.board_changes import apply_changes, changed_immutable, schedule_change_allowed
from rankd.boards import BoardConfig
from rankd.errors import (
    BoardImmutableField,
    BoardNotFound,
    NoRoomToReshard,
    ReshardInProgress,
    Unavailable,
)
from rankd.formats import check_board_id, clip, is_board_id
from rankd.periods import WINDOWS
from rankd.placement import Layout, next_base
from rankd.reshard import Reshard, no_room
from rankd.stores import deletions, reshards
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.stores import RedisStores
from rankd.ttlcache import TTLCache

# A request that must wait for a config waits this long at most for PostgreSQL.
LOAD_TIMEOUT_S = 2.0
# A cached config older than its TTL by this much was not asked for while its refresh was
# due (else a background refresh would have renewed it): it is loaded before it is served.
IDLE_S = 0.5
# How often a PUT that recreates a just-deleted board looks whether its removal is done.
RECREATE_POLL_S = 0.1
# Beyond the deletion's settle time, how long that PUT allows the two sweeps themselves:
# each is a SCAN of the whole keyspace per key pattern, seconds on a big, busy Redis.
RECREATE_SWEEP_S = 15.0
# Estimated bytes of one cached config (its fields, windows, retention and codecs).
_CONFIG_BYTES = 4096
_UNKNOWN_BYTES = 200
_CLOSE_BYTES = 120  # one early-closed period in a config (at most 1,000: corrections.py)


class BoardRegistry:
    """Known boards are served from cache at once; an expired entry is refreshed by one
    background task, so PostgreSQL (down, or slow) never stalls a submit or a read.
    Unknown board ids are remembered briefly too, so a flood of requests for boards that
    do not exist costs PostgreSQL one query per id and second, not one per request."""

    def __init__(
        self,
        pg: PostgresStore,
        redis: RedisStores,
        ttl_s: float,
        *,
        max_bytes: int = 4 << 20,
        unknown_ttl_s: float = 1.0,
        unknown_max_bytes: int = 1 << 20,
        recreate_wait_s: float | None = None,
        memory_ratio: float = 1.0,
    ) -> None:
        """``recreate_wait_s``: how long a PUT of a just-deleted board's id waits at most
        for the old board's Redis keys to be removed (by default the deletion's settle
        time, the cache's TTL and a second, plus RECREATE_SWEEP_S for the sweeps); it
        answers as soon as they are. ``memory_ratio``: the share of a Redis node's
        maxmemory a resharding may fill at most (its new layout added to what is used)."""
        self.pg = pg
        self.redis = redis
        self.memory_ratio = memory_ratio
        self._cache: TTLCache[str, BoardConfig] = TTLCache(
            ttl_s, max_bytes, lambda _, config: _CONFIG_BYTES + _CLOSE_BYTES * len(config.closes)
        )
        self._unknown: TTLCache[str, bool] = TTLCache(
            unknown_ttl_s, unknown_max_bytes, lambda board_id, _: _UNKNOWN_BYTES + len(board_id)
        )
        self._refreshing: dict[str, asyncio.Task[None]] = {}
        # at most one load a board (_load_once), gone when it ends: bounded by the requests
        # in flight
        self._loading: dict[str, asyncio.Task[BoardConfig | None]] = {}
        self.recreate_wait_s = (
            ttl_s + 1.0 + RECREATE_SWEEP_S if recreate_wait_s is None else recreate_wait_s
        )

    async def get(self, board_id: str, *, recent_unknown_ok: bool = True) -> BoardConfig:
        """The board's config; BoardNotFound if there is no such board.

        ``recent_unknown_ok=False`` asks PostgreSQL even for an id found unknown a moment
        ago: the log consumer parks a message for an unknown board, and the board may have
        been created on another instance since."""
        if not is_board_id(board_id):
            raise self._not_found(board_id)  # e.g. a NUL: no such board can exist
        hit = self._cache.get(board_id, stale_ok=True)
        if hit is not None:
            # a board being resharded is never served from a config past its settle time
            # (services/resharding.py counts on it), even while a refresh is under way
            if hit.age_s >= self._cache.ttl_s + IDLE_S and (
                board_id not in self._refreshing or hit.value.reshard is not None
            ):
                return await self._reload_idle(board_id, hit.value)
            if hit.age_s >= self._cache.ttl_s and board_id not in self._refreshing:
                task = asyncio.create_task(self._refresh(board_id))
                self._refreshing[board_id] = task
                task.add_done_callback(lambda _: self._refreshing.pop(board_id, None))
            return hit.value
        if recent_unknown_ok and self._unknown.get(board_id) is not None:
            raise self._not_found(board_id)
        try:
            # shared and bounded whole; the log consumer's own load (a board created on
            # another instance a moment ago must be found)
            config = await (
                self._load_once(board_id)
                if recent_unknown_ok
                else self.pg.get_board(board_id, timeout_s=LOAD_TIMEOUT_S)
            )
        except Unavailable as exc:
            raise Unavailable("board configs cannot be loaded right now; retry shortly") from exc
        if config is None:
            self._unknown.put(board_id, True)
            raise self._not_found(board_id)
        self._keep(config)
        return config

    async def _reload_idle(self, board_id: str, held: BoardConfig) -> BoardConfig:
        """A config not asked for here since before its refresh was due: loaded now, since
        other instances count on this one having seen any change a settle time (the TTL and
        a second) after it was made (a resharding's next step, a deletion's second sweep).
        The one held is served only if PostgreSQL cannot answer (then for a second more
        before the next try, in the background), and never if the board is being resharded:
        its move may have gone on meanwhile, so that board's requests answer 503 until
        PostgreSQL answers again."""
        try:
            config = await self._load_once(board_id)
        except Unavailable as exc:
            if held.reshard is not None:
                raise Unavailable(
                    f"board {board_id!r} is being resharded and its config cannot be"
                    " confirmed right now (PostgreSQL does not answer); retry shortly"
                ) from exc
            self._cache.put(board_id, held, age_s=self._cache.ttl_s - 1.0)
            return held
        if config is None:
            self.forget(board_id)
            raise self._not_found(board_id)
        self._keep(config)
        return config

    @staticmethod
    def _not_found(board_id: str) -> BoardNotFound:
        return BoardNotFound(f"board {clip(board_id)!r} does not exist; create it with PUT first")

    async def _load_once(self, board_id: str) -> BoardConfig | None:
        """The board's config from PostgreSQL, one load at a time per board: the callers
        meanwhile share it (a flood of requests while PostgreSQL is slow or down costs one
        query a board, not one each). Bounded whole: a paused PostgreSQL holds a query, not
        just the pool."""
        task = self._loading.get(board_id)
        if task is None:
            load = self.pg.get_board(board_id, timeout_s=LOAD_TIMEOUT_S)
            task = asyncio.create_task(asyncio.wait_for(load, LOAD_TIMEOUT_S))
            self._loading[board_id] = task
            task.add_done_callback(lambda done: self._loaded(board_id, done))
        # waited for LOAD_TIMEOUT_S at most, not for the load's cancel (psycopg may take
        # seconds more to cancel a query on a paused server)
        done, _ = await asyncio.wait({task}, timeout=LOAD_TIMEOUT_S)
        if not done or isinstance(task.exception(), TimeoutError):
            raise Unavailable(f"PostgreSQL did not answer within {LOAD_TIMEOUT_S:g}s")
        return task.result()

    def _loaded(self, board_id: str, task: asyncio.Task[BoardConfig | None]) -> None:
        if self._loading.get(board_id) is task:
            del self._loading[board_id]
        if not task.cancelled():
            task.exception()  # seen, whether or not a caller was still waiting for it

    async def _refresh(self, board_id: str) -> None:
        try:
            config = await self._load_once(board_id)
        except Unavailable:
            # keep serving the stale config, trying again in about a second; a moving
            # board's is left to age, so get() asks PostgreSQL itself past the settle time
            held = self._cache.get(board_id, stale_ok=True)
            if held is not None and held.value.reshard is None:
                self._cache.put(board_id, held.value, age_s=self._cache.ttl_s - 1.0)
            return
        if config is None:
            self._cache.pop(board_id)
        else:
            self._keep(config)

    def _keep(self, config: BoardConfig) -> None:
        self._cache.put(config.board_id, config)
        # the Redis store reads a sharded board's keys by its shards
        self.redis.shards.note(config.board_id, config.shards, config.other_layout)

    async def reload(self, board_id: str) -> BoardConfig:
        """The board's config from PostgreSQL now (not the cache); BoardNotFound if none."""
        config = await self.pg.get_board(board_id, timeout_s=LOAD_TIMEOUT_S)
        if config is None:
            self.forget(board_id)
            raise self._not_found(board_id)
        self._keep(config)
        return config

    def forget(self, board_id: str) -> None:
        """A board deleted: this process answers 404 for it at once."""
        self._cache.pop(board_id)
        self._unknown.put(board_id, True)

    async def list(self) -> list[BoardConfig]:
        configs = await self.pg.list_boards()
        for config in configs:
            self.redis.shards.note(config.board_id, config.shards, config.other_layout)
        return configs

    async def has_runs(self, config: BoardConfig) -> bool:
        """Whether any window, current or dropped from the config, ever took a run."""
        if await self.redis.index.has_periods(config.board_id, WINDOWS):
            return True
        return await self.pg.board_has_periods(config.board_id)

    async def _layout(
        self, current: BoardConfig, new: BoardConfig
    ) -> tuple[BoardConfig, BoardConfig | None]:
        """``new`` with the layout it is stored with, and ``current`` when this PUT changes
        the layout (else None: the stored layout and any move under way are kept). New
        ``shards`` on a board with runs start a live resharding (services/resharding.py)."""
        if new.shards == current.requested_shards:
            return replace(new, shards=current.shards, reshard=current.reshard), None
        move = current.reshard
        if move is not None and move.phase == "copy" and new.shards == current.shards:
            # back to the served shards while the copy runs: the move is called off, and
            # the layout it was building goes (rankd/reshard.py)
            off = replace(move, phase="drop", since_ms=await reshards.clock_ms(self.pg))
            if await reshards.step(self.pg, current, off):
                return replace(new, shards=current.shards, reshard=off), None
        if current.reshard is not None:
            moved = current.reshard.progress()
            raise ReshardInProgress(
                f"board {current.board_id!r} is being resharded to {current.requested_shards}"
                f" shards ({moved['done']} of {moved['total']} entries moved); change shards"
                " again once it ends"
            )
        if not await self.has_runs(current):
            return replace(new, shards=Layout(new.shards), reshard=None), current
        target = Layout(new.shards, next_base(current.shards, new.shards))
        need = await self._check_room(current, new.shards)
        now_ms = await reshards.clock_ms(self.pg)
        start = Reshard(phase="copy", other=target, since_ms=now_ms, bytes=need)
        return replace(new, shards=current.shards, reshard=start), current

    async def _check_room(self, board: BoardConfig, shards: int) -> int:
        """What the move's new layout adds to Redis; refused if, beside the old layout until
        it is dropped and with what other moves still copying will add, it would fill a
        Redis node past the memory ratio: a full Redis refuses every write."""
        mine = await reshards.footprint(self.pg, board, shards)
        need = mine.bytes()
        needs = [(need, shards)]
        for other_id in await reshards.moving(self.pg):
            other = await self.pg.get_board(other_id) if other_id != board.board_id else None
            move = None if other is None else other.reshard
            if other is None or move is None or move.phase != "copy":
                continue
            # counted when that move began (a move from before it was: counted now)
            whole = (
                move.bytes or (await reshards.footprint(self.pg, other, int(move.other))).bytes()
            )
            left = 1.0 - move.done / move.total if move.total else 1.0
            needs.append((int(whole * left), int(move.other)))
        nodes = await self.redis.conn.memory_nodes()
        why = no_room(nodes, needs, self.memory_ratio)
        if why is not None:
            raise NoRoomToReshard(
                f"board {board.board_id!r} ({mine.entries} entries) cannot reshard: {why}"
                + (f" ({len(needs) - 1} other move(s) still copying counted)" if needs[1:] else "")
            )
        return need

    async def _removal_done(self, board_id: str) -> bool:
        """Whether a deleted board's keys are gone, waiting a few seconds for it: the
        deleting instance sweeps them again once every instance has dropped the old config
        (services/deletion.py), and a new board sharing those keys before then would lose
        its first runs to that sweep. Only a dead deleter or a huge board waits longer."""
        deadline = time.monotonic() + self.recreate_wait_s
        while await self.redis.board_keys.is_deleting(board_id):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(RECREATE_POLL_S)
        return True

    async def put(self, board_id: str, body: Any) -> tuple[BoardConfig, bool]:
        """Create or update; omitted fields keep their values. Returns (config, created)."""
        check_board_id(board_id)
        current = await self.pg.get_board(board_id)
        new = apply_changes(board_id, current, body)
        if current is None and await deletions.deleted_generation(self.pg, board_id) is not None:
            if not await self._removal_done(board_id):
                raise Unavailable(
                    f"board {board_id!r} was just deleted and its standings are still being "
                    "removed; create it again in a few seconds"
                )
            # whatever a failed background removal left behind goes before the new board
            await self.redis.board_keys.drop_board_keys(board_id)
        layout: BoardConfig | None = None  # set: this PUT changes the stored layout
        if current is not None:
            changed = changed_immutable(current, new)
            if changed and await self.has_runs(current):
                raise BoardImmutableField(
                    f"{', '.join(changed)} cannot change on a board that has runs; "
                    "create a new board instead"
                )
            if (
                current.schedule != new.schedule
                and not schedule_change_allowed(current, new, int(time.time() * 1000))
                and await self.has_runs(current)
            ):
                raise BoardImmutableField(
                    "a schedule change on a board with runs may only change occurrences that"
                    " have not started (move ends_at, or start a new board)"
                )
            # last: calling a move off is written at once, so nothing is refused after it
            new, layout = await self._layout(current, new)
        put = await self.pg.put_board(new, layout=layout)
        if put is None:
            raise ReshardInProgress(
                f"board {board_id!r} changed its shards meanwhile (another PUT); read it again"
            )
        stored, created = put
        self._keep(stored)
        self._unknown.pop(board_id)
        return stored, created
