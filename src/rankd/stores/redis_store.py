"""Redis: every command and script Rankd sends, behind one class.

The services speak in board periods (``PeriodRef``) and planned targets; this store turns
them into keys (redis_keys.py), Lua calls (redis_scripts.py) and pipelines. Every read is
one round trip; every submit is one pipeline for all its windows. Connection failures leave
here as ``Unavailable`` (503: retry), so nothing above this module knows the driver.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from rankd.boards import BoardConfig
from rankd.errors import Unavailable
from rankd.periods import PeriodRef
from rankd.plan import Reply, Target
from rankd.stores import redis_keys as keys
from rankd.stores.redis_loader import Loader, Progress
from rankd.stores.redis_scripts import (
    AROUND,
    FRIENDS,
    SUBMIT_BEST,
    SUBMIT_BEST_MANY,
    SUBMIT_SUM,
    Call,
    load_all,
    run_pipeline,
)
from rankd.ttlcache import TTLCache

Command = tuple[str, tuple[Any, ...]]
# (player_id, composite) rows of a range read, best first
Rows = list[tuple[str, int]]


@contextlib.contextmanager
def _reachable(what: str = "Redis is unavailable right now; retry shortly") -> Iterator[None]:
    """Connection-level failures become Unavailable; anything else is a bug and propagates."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise Unavailable(what) from exc


def _number(raw: Any) -> int:
    # Redis may render a large double either way; both parse exactly below 2**53.
    return int(float(raw))


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _name(raw: Any) -> str | None:
    return raw.decode() if isinstance(raw, bytes) else raw


def script_call(board: BoardConfig, target: Target) -> Call:
    """The script call that applies one planned target."""
    pk = keys.period_keys(board.board_id, target.window, target.period.id)
    run = target.run
    if target.operation == "best":
        assert target.composite is not None
        return (
            SUBMIT_BEST,
            (pk.public, pk.public),
            (target.composite, run.player_id, target.expire_at_s),
        )
    return (
        SUBMIT_SUM,
        (pk.public, pk.public, pk.runs),
        (
            run.run_id,
            run.player_id,
            run.score,
            target.time_key,
            1 << board.codecs[target.window].time_bits,
            board.max_score,
            board.order,
            run.ended_at_ms,
            target.trim_before_ms,
            target.expire_at_s,
        ),
    )


def coalesce(
    calls: Sequence[Call],
) -> tuple[list[Call], Callable[[Sequence[Any]], list[Sequence[int]]]]:
    """Fold the ``submit_best`` calls that share a key into one ``submit_best_many`` call.

    A batch of 1,000 runs on three windows is three script calls instead of 3,000: the
    client's per-command cost, not Redis's, was the limit. Calls on one key keep their
    order, so the replies are what the single calls would have answered. Returns the calls
    to send and a function that spreads their replies back, one per original call.
    """
    best: dict[tuple[tuple[str, ...], str | int], list[int]] = {}
    sent: list[Call] = []
    members: list[list[int]] = []
    for i, (script, call_keys, args) in enumerate(calls):
        if script is SUBMIT_BEST:
            best.setdefault((tuple(call_keys), args[2]), []).append(i)
        else:
            sent.append(calls[i])
            members.append([i])
    for (call_keys, expire_at), indexes in best.items():
        if len(indexes) == 1:
            sent.append(calls[indexes[0]])
        else:
            pairs = [arg for i in indexes for arg in calls[i][2][:2]]
            sent.append((SUBMIT_BEST_MANY, call_keys, (expire_at, *pairs)))
        members.append(indexes)

    def spread(results: Sequence[Any]) -> list[Sequence[int]]:
        out: list[Sequence[int]] = [()] * len(calls)
        for call, indexes, result in zip(sent, members, results, strict=True):
            if call[0] is not SUBMIT_BEST_MANY:
                out[indexes[0]] = result
                continue
            for j, i in enumerate(indexes):
                out[i] = result[4 * j : 4 * j + 4]
        return out

    return sent, spread


class RedisStore:
    """The boards' sorted sets, the periods index, the names hash and the rebuild loader."""

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 64,
        pool_timeout_s: float = 10.0,
        index_memo_s: float = 60.0,
        index_memo_bytes: int = 1 << 20,
    ) -> None:
        # A blocking pool: under a burst, requests wait for a connection instead of failing.
        # No socket_timeout: redis-py wraps every read in an asyncio timeout for it, the
        # largest single cost in the read profile; a dead Redis still fails fast (reset).
        pool = BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=pool_timeout_s,
            socket_connect_timeout=5,
            socket_keepalive=True,
        )
        self.redis = Redis(connection_pool=pool)
        # Which periods this process has already put in the periods index (an entry: a
        # tuple of three short strings, about 250 bytes).
        self._indexed: TTLCache[tuple[str, str, str], bool] = TTLCache(
            index_memo_s, index_memo_bytes, lambda key, _: 250
        )

    async def open(self) -> None:
        with _reachable():
            await load_all(self.redis)

    async def close(self) -> None:
        await self.redis.aclose()

    async def ping(self) -> None:
        with _reachable():
            await self.redis.ping()

    # the write path

    async def apply(
        self, board: BoardConfig, plans: Sequence[Sequence[Target]]
    ) -> list[list[Reply | None]]:
        """Run every ``apply`` target of ``plans`` in one pipeline, with the periods-index
        updates they need; replies shaped like ``plans`` (None where nothing was sent)."""
        calls = [script_call(board, t) for p in plans for t in p if t.applies]
        extra, memos = self._index_commands(board.board_id, plans)
        sent, spread = coalesce(calls)
        with _reachable():
            results = await run_pipeline(self.redis, sent, extra) if sent or extra else []
        for memo in memos:
            self._indexed.put(memo, True)
        replies = iter(spread(results[: len(sent)]))
        return [[next(replies) if t.applies else None for t in p] for p in plans]  # type: ignore[misc]

    def _index_commands(
        self, board_id: str, plans: Sequence[Sequence[Target]]
    ) -> tuple[list[Command], set[tuple[str, str, str]]]:
        """ZADD NX of newly seen periods into the per-window periods index."""
        commands: list[Command] = []
        memos: set[tuple[str, str, str]] = set()
        for targets in plans:
            for t in targets:
                if not t.applies:
                    continue
                memo = (board_id, t.window, t.period.id)
                if memo in memos or self._indexed.get(memo) is not None:
                    continue
                memos.add(memo)
                index = keys.periods_index(board_id, t.window)
                commands.append(("ZADD", (index, "NX", t.period.start_ms, t.period.id)))
        return commands, memos

    def forget_indexed(self) -> None:
        """After a rebuild the periods index must be written again."""
        self._indexed.clear()

    # reads: one round trip each

    async def top(self, ref: PeriodRef, offset: int, count: int) -> tuple[Rows, int]:
        """``count`` entries from rank ``offset + 1``, and the period's total."""
        key = keys.period_keys(*ref).public
        with _reachable():
            pipe = self.redis.pipeline(transaction=False)
            pipe.zrevrange(key, offset, offset + count - 1, withscores=True)
            pipe.zcard(key)
            members, total = await pipe.execute()
        return [(_text(m), _number(s)) for m, s in members], int(total)

    async def entry(
        self, ref: PeriodRef, player_id: str
    ) -> tuple[int | None, int | None, int, str | None]:
        """(composite, 0-based rank, total, name) of a player; composite None: no entry."""
        key = keys.period_keys(*ref).public
        with _reachable():
            pipe = self.redis.pipeline(transaction=False)
            pipe.zscore(key, player_id)
            pipe.zrevrank(key, player_id)
            pipe.zcard(key)
            pipe.hget(keys.NAMES, player_id)
            composite, rank0, total, name = await pipe.execute()
        if composite is None or rank0 is None:
            return None, None, int(total), _name(name)
        return _number(composite), int(rank0), int(total), _name(name)

    async def around(
        self, ref: PeriodRef, player_id: str, span: int
    ) -> tuple[int, int, Rows] | None:
        """(0-based rank of the first row, total, rows) around a player; None: no entry."""
        call = (AROUND, (keys.period_keys(*ref).public,), (player_id, span))
        with _reachable():
            [reply] = await run_pipeline(self.redis, [call])
        if reply[0] == -1:
            return None
        flat = reply[2]
        rows = [(_text(flat[i]), _number(flat[i + 1])) for i in range(0, len(flat), 2)]
        return int(reply[0]), int(reply[1]), rows

    async def group(
        self, ref: PeriodRef, player_ids: Sequence[str]
    ) -> tuple[list[tuple[int, int] | None], list[str | None]]:
        """Each player's (composite, 0-based rank) or None, and their names."""
        call = (FRIENDS, (keys.period_keys(*ref).public,), tuple(player_ids))
        with _reachable():
            [flat, names] = await run_pipeline(
                self.redis, [call], [("HMGET", (keys.NAMES, *player_ids))]
            )
        standings = [
            None if flat[2 * i] is None else (_number(flat[2 * i]), int(flat[2 * i + 1]))
            for i in range(len(player_ids))
        ]
        return standings, [_name(n) for n in names]

    async def count_from(self, ref: PeriodRef, floor: int) -> tuple[int, int]:
        """(entries with a composite of at least ``floor``, total)."""
        key = keys.period_keys(*ref).public
        with _reachable():
            pipe = self.redis.pipeline(transaction=False)
            pipe.zcount(key, floor, "+inf")
            pipe.zcard(key)
            above, total = await pipe.execute()
        return int(above), int(total)

    async def period_ids(self, board_id: str, window: str) -> list[str]:
        """Ids of the window's periods that ever took a run (the periods index)."""
        with _reachable():
            members = await self.redis.zrange(keys.periods_index(board_id, window), 0, -1)
        return [_text(m) for m in members]

    async def has_periods(self, board_id: str, windows: Sequence[str]) -> bool:
        with _reachable():
            found = await self.redis.exists(*(keys.periods_index(board_id, w) for w in windows))
        return bool(found)

    async def period_exists(self, ref: PeriodRef) -> bool:
        with _reachable():
            return bool(await self.redis.exists(keys.period_keys(*ref).public))

    # the season job: a closed period read out in pages, then its keys removed

    async def period_pages(
        self, ref: PeriodRef, size: int = 10_000
    ) -> AsyncIterator[tuple[list[str], list[int], list[str | None]]]:
        """A period's whole standings, best first, ``size`` entries at a time, as columns:
        player ids, composites and names. Bounded replies however large the period, never
        one huge ZRANGE."""
        key = keys.period_keys(*ref).public
        first = 0
        while True:
            with _reachable():
                # without redis-py's withscores option its reply callback leaves the reply
                # as it came: the per-pair conversion it does otherwise was most of the cost
                raw: Any = await self.redis.execute_command(  # type: ignore[no-untyped-call]
                    "ZREVRANGE", key, first, first + size - 1, "WITHSCORES"
                )
                if not raw:
                    return
                if isinstance(raw[0], list):  # RESP3: [[member, score], ...]
                    members = [m for m, _ in raw]
                    composites = [int(s) for _, s in raw]
                else:  # RESP2: member, score, member, score, ...
                    members = raw[0::2]
                    composites = [int(float(s)) for s in raw[1::2]]
                names = await self.redis.hmget(keys.NAMES, members)
            yield [m.decode() for m in members], composites, [_name(n) for n in names]
            if len(members) < size:
                return
            first += size

    async def unlink_period(self, ref: PeriodRef) -> int:
        """Remove a period's keys; UNLINK frees their memory off Redis's main thread, so a
        large board leaving never blocks other commands."""
        pk = keys.period_keys(*ref)
        with _reachable():
            return int(await self.redis.unlink(pk.public, pk.runs))

    # player names: a copy of PostgreSQL's players table

    async def names(self, player_ids: Sequence[str]) -> list[str | None]:
        with _reachable():
            raw = await self.redis.hmget(keys.NAMES, list(player_ids))
        return [_name(n) for n in raw]

    async def set_name(self, player_id: str, name: str) -> None:
        with _reachable():
            await self.redis.hset(keys.NAMES, player_id, name)

    async def has_names(self) -> bool:
        with _reachable():
            return bool(await self.redis.exists(keys.NAMES))

    async def restore_names(self, chunks: AsyncIterator[dict[str, str]]) -> int:
        """Replace the names hash with ``chunks`` (staged, then renamed into place)."""
        staging = keys.staging(keys.NAMES)
        loaded = 0
        with _reachable():
            await self.redis.delete(staging)
            async for chunk in chunks:
                await self.redis.hset(staging, mapping=chunk)  # type: ignore[arg-type]
                loaded += len(chunk)
            await self._swap({keys.NAMES: loaded}, None)
        return loaded

    # rebuild: which Redis process the boards were verified on, bulk loads, atomic swaps

    async def server_run_id(self) -> str:
        """Redis's own run id: a new one after every restart."""
        with _reachable():
            info = await self.redis.info("server")
        return str(info["run_id"])

    async def is_verified(self) -> bool:
        """Whether the boards were last verified on the Redis process running now."""
        with _reachable():
            marker = await self.redis.get(keys.VERIFIED_MARKER)
        return bool(marker == (await self.server_run_id()).encode())

    async def mark_verified(self, run_id: str) -> None:
        with _reachable():
            await self.redis.set(keys.VERIFIED_MARKER, run_id)

    async def load_period(
        self,
        ref: PeriodRef,
        entries: Callable[[], AsyncIterator[tuple[int, bytes]]],
        counted_runs: Callable[[], AsyncIterator[tuple[int, bytes]]] | None,
        expires_ms: int | None,
        start_ms: int,
        progress: Progress | None = None,
    ) -> int:
        """Load a period's entries (and a sum board's counted runs) beside the live keys,
        then swap them in at once; returns the entries loaded.

        Pages are (members, ZADD arguments in RESP with chr(1) for CR LF), as
        stores/standings.py formats them in PostgreSQL.
        """
        pk = keys.period_keys(*ref)
        with _reachable():
            staged = {
                pk.public: await Loader.run(
                    self.redis, keys.staging(pk.public), entries(), progress
                )
            }
            if counted_runs is not None:
                staged[pk.runs] = await Loader.run(
                    self.redis, keys.staging(pk.runs), counted_runs(), None
                )
            await self._swap(staged, expires_ms)
            await self.redis.zadd(keys.periods_index(ref[0], ref[1]), {ref[2]: start_ms}, nx=True)
        return staged[pk.public]

    async def _swap(self, staged: dict[str, int], expires_ms: int | None) -> None:
        """Put every staged key in place in one MULTI/EXEC: a sum board's total and its
        counted runs must change together, or a submit landing between them would be
        counted in one and lost from the other. They share a hash tag."""
        pipe = self.redis.pipeline(transaction=True)
        for live, loaded in staged.items():
            if loaded == 0:
                pipe.delete(live, keys.staging(live))
                continue
            pipe.rename(keys.staging(live), live)
            if expires_ms is not None:
                pipe.pexpireat(live, expires_ms)
        await pipe.execute()
