"""Redis: every command and script Rankd sends, behind one class.

The services speak in board periods (``PeriodRef``) and planned targets; this store turns
them into keys (redis_keys.py), Lua calls (redis_scripts.py) and pipelines. Every read is
one round trip; every submit is one pipeline for all its windows. Connection failures leave
here as ``Unavailable`` (503: retry), so nothing above this module knows the driver.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from typing import Any, cast

import orjson
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import NoScriptError, RedisError

from rankd import codec
from rankd.boards import BoardConfig
from rankd.errors import Unavailable
from rankd.periods import PeriodRef
from rankd.plan import Reply, Target
from rankd.runs import Segments
from rankd.stores import redis_keys as keys
from rankd.stores.redis_batch import Batcher
from rankd.stores.redis_connection import (
    NodeClients,
    connect,
    identity,
    is_cluster,
    parse_redis_url,
)
from rankd.stores.redis_loader import (
    Loader,
    Progress,
    SmallPeriod,
    bulk,
    command,
    run_commands,
)
from rankd.stores.redis_scripts import (
    AHEAD,
    AROUND,
    ENTRY,
    FRIENDS,
    HIST_REBUILD,
    LOAD_PERIOD,
    LOG_POSITION,
    MOVE_ENTRIES,
    OWN_ENTRY,
    RATE_LIMIT,
    RUN_IDS,
    SEGMENT_VALUES,
    SET_ENTRY,
    SUBMIT_BEST,
    SUBMIT_BEST_MANY,
    SUBMIT_SUM,
    TOP,
    Call,
    call_script,
    load_all,
    run_pipeline,
)
from rankd.stores.sharded import ShardedReads
from rankd.ttlcache import TTLCache

Command = tuple[str, tuple[Any, ...]]
# (player_id, composite, exact achieved ms or 0) rows of a range read, best first
Rows = list[tuple[str, int, int]]


@contextlib.contextmanager
def _reachable(what: str = "Redis is unavailable right now; retry shortly") -> Iterator[None]:
    """Redis's errors become Unavailable: unreachable, timed out, or answering an error
    such as OOM or READONLY (a failover); retrying later can succeed."""
    try:
        yield
    except (RedisError, OSError) as exc:
        raise Unavailable(what) from exc


def _number(raw: Any) -> int:
    # Redis may render a large double either way; both parse exactly below 2**53.
    return int(float(raw))


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _name(raw: Any) -> str | None:
    return raw.decode() if isinstance(raw, bytes) else raw


def _rows(flat: Sequence[Any]) -> Rows:
    """Rows from a script's flat member, score, exact time list."""
    return [
        (_text(flat[i]), _number(flat[i + 1]), int(flat[i + 2])) for i in range(0, len(flat), 3)
    ]


# A player's own view of a period: (side: "public", "shadow" or "pending"; composite; rank
# 1-based among the public entries; exact achieved ms or 0), or None: no entry anywhere.
Own = tuple[str, int, int, int] | None
_SIDES = ("public", "shadow", "pending")
# how long a staged rebuild's restoring flag lasts unrenewed (a rebuild that dies leaves
# the period's writes refused this long at most); see _swap
RESTORING_TTL_MS = 600_000


def _side_keys(pk: keys.PeriodKeys, side: str) -> tuple[str, str, str]:
    """A submit script's keys: where the entry is written, the public board the rank is read
    from, and the side the entry must leave if it is there (a ban or unban the writer did not
    know of yet; itself for none)."""
    if side == "public":
        return pk.public, pk.public, pk.shadow
    if side == "shadow":
        return pk.shadow, pk.public, pk.public
    return pk.pending, pk.public, pk.pending


def sum_args(board: BoardConfig, window: str) -> tuple[int, int, str]:
    """What a script needs to add up a sum board's totals: 2^time_bits, max_score, order."""
    return 1 << board.codecs[window].time_bits, board.max_score, board.order


def mark_of(run_id: str, player_id: str) -> str:
    """A run's member in a period's :applied key (and in a sum board's counted runs)."""
    return f"{player_id}|{run_id}"


def script_call(board: BoardConfig, target: Target, now_ms: int = 0, keep_ms: int = 0) -> Call:
    """The script call that applies one planned target; a ``mark``ed target also notes in
    the period's :applied key that the submit path applied it (at ``now_ms``, forgetting
    marks older than ``keep_ms``)."""
    run = target.run
    shard = keys.shard_of(run.player_id, board.shards)
    pk = keys.period_keys(board.board_id, target.window, target.period.id, target.segment, shard)
    marked = mark_of(run.run_id, run.player_id) if target.mark else ""
    if target.operation == "best":
        assert target.composite is not None
        return (
            SUBMIT_BEST,
            (*_side_keys(pk, target.side), pk.applied),
            (
                target.composite,
                run.player_id,
                target.expire_at_s,
                run.ended_at_ms,
                marked,
                now_ms,
                now_ms - keep_ms,
            ),
        )
    return (
        SUBMIT_SUM,
        (*_side_keys(pk, target.side), pk.runs, pk.applied),
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
            target.counted_ms,
            marked,
            now_ms,
            now_ms - keep_ms,
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
    # submit_best arguments: composite, member, expire, ended, mark, now, forget before
    best: dict[tuple[tuple[str, ...], Any, Any, Any], list[int]] = {}
    sent: list[Call] = []
    members: list[list[int]] = []
    for i, (script, call_keys, args) in enumerate(calls):
        if script is SUBMIT_BEST:
            best.setdefault((tuple(call_keys), args[2], args[5], args[6]), []).append(i)
        else:
            sent.append(calls[i])
            members.append([i])
    for (call_keys, expire_at, now, forget), indexes in best.items():
        if len(indexes) == 1:
            sent.append(calls[indexes[0]])
        else:
            quads = [a for i in indexes for a in (*calls[i][2][:2], *calls[i][2][3:5])]
            sent.append((SUBMIT_BEST_MANY, call_keys, (expire_at, now, forget, *quads)))
        members.append(indexes)

    def spread(results: Sequence[Any]) -> list[Sequence[int]]:
        out: list[Sequence[int]] = [()] * len(calls)
        for call, indexes, result in zip(sent, members, results, strict=True):
            if call[0] is not SUBMIT_BEST_MANY:
                out[indexes[0]] = result
                continue
            for j, i in enumerate(indexes):
                out[i] = result[5 * j : 5 * j + 5]
        return out

    return sent, spread


def change_notice(board_id: str, plans: Sequence[Sequence[Target]]) -> list[Command]:
    """One PUBLISH naming every standings (window, period, segment) the targets touch, or
    none. It rides at the end of the submit's pipeline: Redis runs it after the scripts,
    so a listener that reads on receipt sees the change."""
    touched = {(t.window, t.period.id, t.segment) for p in plans for t in p if t.sendable}
    if not touched:
        return []
    notice = orjson.dumps([board_id, sorted(touched)])
    return [("PUBLISH", (keys.CHANGES, notice))]


def parse_notice(raw: Any) -> tuple[str, list[tuple[str, str, str]]] | None:
    """A change notice's board and standings, or None for anything malformed."""
    try:
        board_id, touched = orjson.loads(raw)
        parsed = [(str(w), str(p), str(s)) for w, p, s in touched]
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None
    return (board_id, parsed) if isinstance(board_id, str) else None


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
        marks_keep_s: float = 15.0,
        batch_in_flight: int = 4,
        read_from_replicas: bool = False,
    ) -> None:
        # standalone, Cluster or Sentinel, as the URL says (redis_connection.py); a bad URL
        # raises BadRedisUrl here, before anything connects
        self.target = parse_redis_url(url)
        self.redis = connect(
            self.target,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
            read_from_replicas=read_from_replicas,
        )
        # what must run on one node's connection (bulk loads, MULTI/EXEC swaps)
        self.nodes = NodeClients(self.redis, tls=self.target.tls)
        # how long the marks of runs the submit path applied stay (see services/applier.py)
        self.marks_keep_ms = int(marks_keep_s * 1000)
        # the request paths' calls share pipelines (redis_batch.py); 0: each its own
        self.batch = Batcher(self.redis, max_in_flight=batch_in_flight) if batch_in_flight else None
        # Each board's shards (1: unsharded), noted by the board registry whenever it loads
        # a config; one small entry per board this process has seen.
        self.shards: dict[str, int] = {}
        self.sharded = ShardedReads(self.redis, self._pipeline)
        # Which periods this process has already put in the periods index (an entry: a
        # tuple of three short strings, about 250 bytes).
        self._indexed: TTLCache[tuple[str, str, str], bool] = TTLCache(
            index_memo_s, index_memo_bytes, lambda key, _: 250
        )

    def note_shards(self, board_id: str, shards: int) -> None:
        """Remember a board's shards (the board registry calls this for every config)."""
        self.shards[board_id] = shards

    def shards_of(self, board_id: str) -> int:
        return self.shards.get(board_id, 1)

    def _own(self, ref: PeriodRef, player_id: str) -> keys.PeriodKeys:
        """A player's keys of a period: their shard's on a sharded board."""
        return keys.period_keys(*ref, keys.shard_of(player_id, self.shards_of(ref.board)))

    def _every(self, ref: PeriodRef) -> list[keys.PeriodKeys]:
        """Every shard's keys of a period (one set on an unsharded board)."""
        return keys.shard_keys(*ref, self.shards_of(ref.board))

    async def open(self) -> None:
        with _reachable():
            await load_all(self.redis)

    async def _pipeline(self, calls: Sequence[Call], extra: Sequence[Command] = ()) -> list[Any]:
        """A request's calls in one round trip, shared with concurrent requests' when
        batching is on."""
        if self.batch is not None:
            return await self.batch.run(calls, extra)
        return await run_pipeline(self.redis, calls, extra)

    async def _call(self, call: Call) -> Any:
        if self.batch is not None:
            return await self.batch.call(call)
        return await call_script(self.redis, call)

    async def close(self) -> None:
        await self.nodes.close()
        await self.redis.aclose()

    async def ping(self) -> None:
        with _reachable():
            await self.redis.ping()

    # the write path

    async def apply(
        self,
        board: BoardConfig,
        plans: Sequence[Sequence[Target]],
        *,
        announce: bool = False,
        ranked: bool | None = None,
    ) -> list[list[Reply | None]]:
        """Run every sendable target of ``plans`` in one pipeline, with the periods-index
        updates they need; replies shaped like ``plans`` (None where nothing was sent).
        With ``announce``, the pipeline ends with one change notice (see change_notice).
        ``ranked`` (default: as ``announce``, the submit path) asks for the ranks in the
        replies on the whole board; else a sharded board's replies rank on the shard."""
        now_ms = int(time.time() * 1000)
        keep_ms = self.marks_keep_ms
        calls = [script_call(board, t, now_ms, keep_ms) for p in plans for t in p if t.sendable]
        extra, memos = self._index_commands(board.board_id, plans)
        if announce:
            extra += change_notice(board.board_id, plans)
        sent, spread = coalesce(calls)
        with _reachable():
            results = await self._pipeline(sent, extra) if sent or extra else []
        for memo in memos:
            self._indexed.put(memo, True)
        replies = iter(spread(results[: len(sent)]))
        out = [[next(replies) if t.sendable else None for t in p] for p in plans]
        if (announce if ranked is None else ranked) and board.shards > 1:
            await self._board_ranks(board, plans, out)
        return out  # type: ignore[return-value]

    async def _board_ranks(
        self,
        board: BoardConfig,
        plans: Sequence[Sequence[Target]],
        replies: list[list[Sequence[int] | None]],
    ) -> None:
        """A sharded board's submit replies rank on the entry's own shard; add the entries
        ahead of it on every other shard (one more pipeline, every shard's ahead.lua)."""
        calls: list[Call] = []
        slots: list[tuple[int, int]] = []
        for i, (targets, answered) in enumerate(zip(plans, replies, strict=True)):
            for j, (t, reply) in enumerate(zip(targets, answered, strict=True)):
                if reply is None or not int(reply[1]):
                    continue
                own = keys.shard_of(t.run.player_id, board.shards)
                member = codec.member(t.run.player_id, int(reply[4]))
                for k in range(board.shards):
                    if k != own:
                        pk = keys.period_keys(board.board_id, t.window, t.period.id, t.segment, k)
                        calls.append((AHEAD, (pk.public,), (0, 0, int(reply[2]), member)))
                        slots.append((i, j))
        if not calls:
            return
        with _reachable():
            counted = await self._pipeline(calls)
        for (i, j), reply in zip(slots, counted, strict=True):
            held = replies[i][j]
            assert held is not None
            replies[i][j] = (held[0], int(held[1]) + int(reply[1][0]), *held[2:])

    async def find_marks(self, board: BoardConfig, targets: Sequence[Target]) -> list[bool]:
        """Whether the submit path marked each target as applied (one ZMSCORE per period
        key, one round trip)."""
        by_key: dict[str, list[int]] = {}
        for i, t in enumerate(targets):
            shard = keys.shard_of(t.run.player_id, board.shards)
            pk = keys.period_keys(board.board_id, t.window, t.period.id, t.segment, shard)
            by_key.setdefault(pk.applied, []).append(i)
        found = [False] * len(targets)
        if not by_key:
            return found
        with _reachable():
            pipe = self.redis.pipeline(transaction=False)
            for key, indexes in by_key.items():
                runs = [targets[i].run for i in indexes]
                pipe.zmscore(key, [mark_of(r.run_id, r.player_id) for r in runs])
            replies = await pipe.execute()
        for indexes, scores in zip(by_key.values(), replies, strict=True):
            for i, score in zip(indexes, scores, strict=True):
                found[i] = score is not None
        return found

    def _index_commands(
        self, board_id: str, plans: Sequence[Sequence[Target]]
    ) -> tuple[list[Command], set[tuple[str, str, str]]]:
        """ZADD NX of newly seen periods into the per-window periods index."""
        commands: list[Command] = []
        memos: set[tuple[str, str, str]] = set()
        for targets in plans:
            for t in targets:
                if not t.sendable:
                    continue
                memo = (board_id, t.window, t.period.id)
                if memo in memos or self._indexed.get(memo) is not None:
                    continue
                memos.add(memo)
                index = keys.periods_index(board_id, t.window)
                commands.append(("ZADD", (index, "NX", t.period.start_ms, t.period.id)))
        return commands, memos

    async def claim_run_ids(
        self,
        board_id: str,
        buckets: Sequence[int],
        expire_at_s: int,
        runs: Sequence[tuple[str, str, int, int, bool]],
    ) -> list[int] | None:
        """Check and claim (run_id, player, score, ended ms, ended given) of each run in
        the board's run-id registry (run_ids.lua): per run, -1 for a conflict, else the
        ended ms it is logged with. ``buckets``: the current one first, where claims go.
        None when the registry is not armed on this Redis (nothing was claimed)."""
        args: list[str | int] = [expire_at_s]
        for run_id, player_id, score, ended_ms, given in runs:
            args += [run_id, player_id, str(score), str(ended_ms), "1" if given else "0"]
        call_keys = [keys.run_ids_armed(board_id), *(keys.run_ids(board_id, b) for b in buckets)]
        with _reachable():
            # shares a pipeline with concurrent requests' calls; a resent claim (NOSCRIPT
            # retry) finds its own fingerprint and answers alike
            reply = await self._call((RUN_IDS, call_keys, args))
        if not isinstance(reply, list):
            return None
        return [int(x) for x in reply]

    async def admit_segment_values(
        self, board_id: str, dimensions: Sequence[str], most: int, runs: Sequence[Segments]
    ) -> list[bool] | None:
        """Whether each run's segment values are known or fit the board's bound of ``most``
        distinct values per dimension (segment_values.lua; those that fit are added). None
        when a dimension's set is not complete on this Redis (nothing was added)."""
        index = {d: i + 1 for i, d in enumerate(dimensions)}
        args: list[str | int] = [most]
        for segments in runs:
            args.append(len(segments))
            for dimension, value in segments:
                args += [index[dimension], value]
        call_keys = [keys.segment_values(board_id, d) for d in dimensions]
        with _reachable():
            reply = await self._call((SEGMENT_VALUES, call_keys, args))
        if not isinstance(reply, list):
            return None
        return [bool(x) for x in reply]

    async def restore_segment_values(self, board_id: str, values: dict[str, set[str]]) -> None:
        """Put a board's known segment values back, each set with its marker."""
        with _reachable():
            pipe = self.redis.pipeline(transaction=False)
            for dimension, found in values.items():
                pipe.sadd(keys.segment_values(board_id, dimension), "", *found)
            await pipe.execute()

    async def restore_run_ids(
        self, board_id: str, buckets: dict[int, tuple[int, dict[str, str]]]
    ) -> None:
        """Put remembered runs back in the board's registry, then arm it: per bucket, its
        expiry (unix s) and run_id -> fingerprint. A run already there keeps its own
        (HSETNX): a claim made meanwhile by another instance's restore wins nothing new."""
        with _reachable():
            for bucket, (expire_at_s, entries) in buckets.items():
                key = keys.run_ids(board_id, bucket)
                items = list(entries.items())
                for i in range(0, len(items), 1000):
                    pipe = self.redis.pipeline(transaction=False)
                    for run_id, fingerprint in items[i : i + 1000]:
                        pipe.hsetnx(key, run_id, fingerprint)
                    pipe.expireat(key, expire_at_s)
                    await pipe.execute()
            await self.redis.set(keys.run_ids_armed(board_id), "1")

    async def rate_limit(
        self,
        identity: str,
        interval_us: int,
        burst: int,
        now_us: int | None = None,
        *,
        cost: int = 1,
    ) -> int:
        """``cost`` requests of ``identity`` through its GCRA limit (rate_limit.lua): 0 when
        they are allowed, else the µs until they would be. ``now_us`` is for tests only;
        the script reads Redis's clock otherwise."""
        args: list[str | int] = [interval_us, burst, cost]
        if now_us is not None:
            args.append(now_us)
        # a bare EVALSHA, not a pipeline: the pipeline's client-side cost is a third more
        with _reachable():
            allowed, wait_us = await call_script(
                self.redis, (RATE_LIMIT, (keys.rate_limit(identity),), args)
            )
        return 0 if allowed else max(int(wait_us), 1)

    async def changes(
        self, on_subscribed: Callable[[], None] = lambda: None
    ) -> AsyncGenerator[tuple[str, list[tuple[str, str, str]]], None]:
        """Change notices as they are published: (board, [(window, period, segment)]).

        Holds one pooled connection while iterated; ``on_subscribed`` runs once notices
        flow. Ends with Unavailable when Redis goes away (the caller subscribes again,
        knowing notices may have been missed meanwhile)."""
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        try:
            with _reachable():
                await pubsub.subscribe(keys.CHANGES)
                on_subscribed()
                async for message in pubsub.listen():
                    notice = parse_notice(message.get("data"))
                    if notice is not None:
                        yield notice
        finally:
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    def forget_indexed(self) -> None:
        """After a rebuild the periods index must be written again."""
        self._indexed.clear()

    # reads: one round trip each

    async def top(self, ref: PeriodRef, offset: int, count: int) -> tuple[Rows, int]:
        """``count`` entries from rank ``offset + 1``, and the period's total."""
        if (shards := self.shards_of(ref.board)) > 1:
            with _reachable():
                return await self.sharded.top(ref, shards, offset, count)
        call = (TOP, (keys.period_keys(*ref).public,), (offset, offset + count - 1))
        with _reachable():
            total, flat = await self._call(call)
        return _rows(flat), int(total)

    async def entry(
        self, ref: PeriodRef, player_id: str
    ) -> tuple[tuple[int, int, int] | None, int]:
        """((composite, 0-based rank, exact ms or 0) or None: no entry, total)."""
        if (shards := self.shards_of(ref.board)) > 1:
            with _reachable():
                return await self.sharded.entry(ref, shards, player_id)
        call = (ENTRY, (keys.period_keys(*ref).public,), (player_id,))
        with _reachable():
            reply = await self._call(call)
        if len(reply) == 1:
            return None, int(reply[0])
        total, composite, rank0, achieved = reply
        return (_number(composite), int(rank0), int(achieved)), int(total)

    async def shard_entry(
        self, ref: PeriodRef, player_id: str
    ) -> tuple[int, tuple[int, int, int] | None, int]:
        """On a sharded board, the player's own shard alone: (the shard, (composite, 0-based
        rank on the shard, exact ms) or None, the shard's total). One script call."""
        shard = keys.shard_of(player_id, self.shards_of(ref.board))
        call = (ENTRY, (keys.period_keys(*ref, shard).public,), (player_id,))
        with _reachable():
            reply = await self._call(call)
        if len(reply) == 1:
            return shard, None, int(reply[0])
        total, composite, rank0, achieved = reply
        return shard, (_number(composite), int(rank0), int(achieved)), int(total)

    async def around(
        self, ref: PeriodRef, player_id: str, span: int
    ) -> tuple[int, int, Rows] | None:
        """(0-based rank of the first row, total, rows) around a player; None: no entry."""
        if (shards := self.shards_of(ref.board)) > 1:
            with _reachable():
                return await self.sharded.around(ref, shards, player_id, span)
        call = (AROUND, (keys.period_keys(*ref).public,), (player_id, span))
        with _reachable():
            reply = await self._call(call)
        if reply[0] == -1:
            return None
        return int(reply[0]), int(reply[1]), _rows(reply[2])

    async def group(
        self, ref: PeriodRef, player_ids: Sequence[str]
    ) -> tuple[list[tuple[int, int, int] | None], list[str | None]]:
        """Each player's (composite, 0-based rank, exact ms or 0) or None, and their names."""
        if (shards := self.shards_of(ref.board)) > 1:
            with _reachable():
                return await self.sharded.group(ref, shards, player_ids)
        call = (FRIENDS, (keys.period_keys(*ref).public,), tuple(player_ids))
        with _reachable():
            [flat, names] = await run_pipeline(
                self.redis, [call], [("HMGET", (keys.NAMES, *player_ids))]
            )
        standings = [
            None
            if flat[3 * i] is None
            else (_number(flat[3 * i]), int(flat[3 * i + 1]), int(flat[3 * i + 2]))
            for i in range(len(player_ids))
        ]
        return standings, [_name(n) for n in names]

    async def standing_checks(
        self, checks: Sequence[tuple[PeriodRef, str, int]]
    ) -> list[tuple[int, int | None]]:
        """For (period, player, composite): how many public entries are strictly above the
        composite, and the player's public composite (None: no entry). One round trip."""
        calls: list[Call] = []
        counts: list[Command] = []
        spans: list[int] = []
        for ref, player_id, composite in checks:
            calls.append((ENTRY, (self._own(ref, player_id).public,), (player_id,)))
            every = self._every(ref)
            spans.append(len(every))
            counts += [("ZCOUNT", (pk.public, f"({composite}", "+inf")) for pk in every]
        with _reachable():
            raw = await run_pipeline(self.redis, calls, counts)
        entries, counted = raw[: len(checks)], iter(raw[len(checks) :])
        above = [sum(int(next(counted)) for _ in range(n)) for n in spans]
        return [
            (n, None if len(e) == 1 else _number(e[1])) for n, e in zip(above, entries, strict=True)
        ]

    async def settle_holds(
        self,
        board: BoardConfig,
        decided: Sequence[tuple[PeriodRef, Any, bool, str, Sequence[tuple[int, int]]]],
    ) -> None:
        """After holds were approved or rejected: (period, the hold, approved, the side it
        is published to, the player's holds still waiting there as (composite, ms)). An
        approved run is raised into its side like a submit; the :pending entry becomes the
        best of the holds still waiting, or goes."""
        calls: list[Call] = []
        for ref, hold, approved, side, waiting in decided:
            player = hold.player_id
            pk = self._own(ref, player)
            if approved:
                calls.append(
                    (
                        SUBMIT_BEST,
                        (*_side_keys(pk, side), pk.applied),
                        (hold.composite, player, 0, hold.ended_ms, "", 0, 0),
                    )
                )
            # the :pending entry becomes the best hold still waiting (a higher composite, or
            # an equal one reached earlier), or goes
            best = min(waiting, key=lambda w: (-w[0], codec.stamp_offset(w[1])), default=None)
            calls.append(
                (
                    SET_ENTRY,
                    (pk.pending, pk.public),
                    (player, "", 0) if best is None else (player, *best),
                )
            )
        with _reachable():
            await run_pipeline(self.redis, calls)

    async def own(self, ref: PeriodRef, player_id: str) -> tuple[Own, int]:
        """A player's own view of a period (see ``Own``) and the public total."""
        if (shards := self.shards_of(ref.board)) > 1:
            with _reachable():
                return await self.sharded.own(ref, shards, player_id)
        pk = keys.period_keys(*ref)
        call = (OWN_ENTRY, (pk.public, pk.shadow, pk.pending), (player_id,))
        with _reachable():
            reply = await self._call(call)
        if int(reply[0]) == -1:
            return None, int(reply[1])
        side, total, composite, rank, achieved = reply
        return (_SIDES[int(side)], _number(composite), int(rank), int(achieved)), int(total)

    async def move_entries(
        self,
        board: BoardConfig,
        moves: Sequence[tuple[PeriodRef, str, str, Sequence[str]]],
        *,
        replace: bool = False,
    ) -> int:
        """Move players' entries between sides of board periods, one pipeline for all:
        (period, from side, to side, player ids). The better entry stays (a sum board's
        totals add up), or with ``replace`` the moved one. Repeating a move moves nothing."""
        calls: list[Call] = []
        for ref, source, dest, players in moves:
            if not players:
                continue
            mode, extra = "best", ("", "", "")  # type: tuple[str, tuple[int | str, ...]]
            if replace:
                mode = "replace"
            elif board.policy == "sum":
                mode, extra = "sum", sum_args(board, ref.window)
            by_shard: dict[int, list[str]] = {}
            for player in players:  # each player's entries are on their own shard
                by_shard.setdefault(keys.shard_of(player, board.shards), []).append(player)
            for shard, on_shard in by_shard.items():
                pk = keys.period_keys(*ref, shard)
                calls.append(
                    (
                        MOVE_ENTRIES,
                        (pk.side(dest), pk.side(source), pk.public),
                        (mode, *extra, *on_shard),
                    )
                )
        if not calls:
            return 0
        with _reachable():
            moved = await run_pipeline(self.redis, calls)
        return sum(int(m) for m in moved)

    async def count_from(self, ref: PeriodRef, floor: int) -> tuple[int, int]:
        """(entries with a composite of at least ``floor``, total)."""
        if (shards := self.shards_of(ref.board)) > 1:
            with _reachable():
                return await self.sharded.count_from(ref, shards, floor)
        key = keys.period_keys(*ref).public
        with _reachable():
            pipe = self.redis.pipeline(transaction=False)
            pipe.zcount(key, floor, "+inf")
            pipe.zcard(key)
            above, total = await pipe.execute()
        return int(above), int(total)

    async def public_totals(self, refs: Sequence[PeriodRef]) -> list[int]:
        """How many public entries each period holds (one ZCARD each, a sharded period's
        summed over its shards; one round trip)."""
        if not refs:
            return []
        spans = [self._every(ref) for ref in refs]
        with _reachable():
            pipe = self.redis.pipeline(transaction=False)
            for every in spans:
                for pk in every:
                    pipe.zcard(pk.public)
            counts = iter(await pipe.execute())
        return [sum(int(next(counts)) for _ in every) for every in spans]

    async def period_ids(self, board_id: str, window: str) -> list[str]:
        """Ids of the window's periods that ever took a run (the periods index)."""
        with _reachable():
            members = await self.redis.zrange(keys.periods_index(board_id, window), 0, -1)
        return [_text(m) for m in members]

    async def public_periods(self, board_id: str, window: str) -> list[str]:
        """Ids of the window's periods in the index whose public standings hold an entry
        (one ZCARD each, one round trip): a period whose only entries are banned players'
        or held runs is not listed to the public."""
        ids = await self.period_ids(board_id, window)
        if not ids:
            return []
        shards = self.shards_of(board_id)
        with _reachable():
            pipe = self.redis.pipeline(transaction=False)
            for pid in ids:  # every shard's (a sharded period is listed if any holds one)
                for pk in keys.shard_keys(board_id, window, pid, "", shards):
                    pipe.zcard(pk.public)
            counts = iter(await pipe.execute())
        width = max(shards, 1)
        return [pid for pid in ids if sum(int(next(counts)) for _ in range(width)) > 0]

    async def has_periods(self, board_id: str, windows: Sequence[str]) -> bool:
        with _reachable():
            found = await self.redis.exists(*(keys.periods_index(board_id, w) for w in windows))
        return bool(found)

    async def period_exists(self, ref: PeriodRef) -> bool:
        if (shards := self.shards_of(ref.board)) > 1:
            with _reachable():
                return await self.sharded.exists(ref, shards)
        with _reachable():
            return bool(await self.redis.exists(keys.period_keys(*ref).public))

    # the season job: a closed period read out in pages, then its keys removed

    async def period_pages(
        self, ref: PeriodRef, size: int = 10_000
    ) -> AsyncIterator[tuple[list[str], list[int], list[str | None], list[int]]]:
        """A period's whole standings, best first, ``size`` entries at a time, as columns:
        player ids, composites, names and exact achieved times (0: not recorded). Bounded
        replies however large the period, never one huge ZRANGE. A sharded period's shards
        are merged into the one ranking an unsharded key would hold."""
        if (shards := self.shards_of(ref.board)) > 1:
            async for players, composites, achieved in self.sharded.pages(ref, shards, size):
                with _reachable():
                    names = await self.redis.hmget(keys.NAMES, players)
                yield players, composites, [_name(n) for n in names], achieved
            return
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
                # the ids and exact times are in the members (see codec.member)
                decoded = [m.decode() for m in members]
                players = [codec.player_of(m) for m in decoded]
                names = await self.redis.hmget(keys.NAMES, players)
            yield (
                players,
                composites,
                [_name(n) for n in names],
                [codec.achieved_of(m) for m in decoded],
            )
            if len(members) < size:
                return
            first += size

    async def unlink_period(self, ref: PeriodRef) -> int:
        """Remove a period's keys; UNLINK frees their memory off Redis's main thread, so a
        large board leaving never blocks other commands."""
        removed = 0
        for pk in self._every(ref):  # every shard's keys, a shard at a time
            # the exact-times hashes too: every bucket, in a few commands (absent ones cost
            # Redis a lookup each), as the members are not known here
            buckets = [f"{pk.public}:at:{b}" for b in range(keys.time_buckets_of(pk.public))]
            with _reachable():
                # every key of a shard shares its tag: one node's plain pipeline (a cluster
                # client would split a many-key UNLINK by slot, to no use here)
                pipe = self.nodes.for_key(pk.public).pipeline(transaction=False)
                pipe.unlink(pk.public, pk.runs, pk.shadow, pk.pending, pk.applied, pk.hist)
                for i in range(0, len(buckets), 8192):
                    pipe.unlink(*buckets[i : i + 8192])
                removed += int((await pipe.execute())[0])
        return removed

    # deleting a board, erasing a player

    async def drop_board_keys(self, board_id: str, batch: int = 500) -> int:
        """Remove every key of a board: SCAN in steps, UNLINK a batch at a time (freed off
        Redis's main thread), so even a huge board never blocks Redis for long."""
        removed = 0
        for pattern in keys.board_patterns(board_id):
            found: list[Any] = []
            with _reachable():
                async for key in self.redis.scan_iter(match=pattern, count=1000):
                    found.append(key)
                    if len(found) >= batch:
                        removed += int(await self.redis.unlink(*found))
                        found.clear()
                if found:
                    removed += int(await self.redis.unlink(*found))
        self.forget_indexed()
        return removed

    async def set_deleting(self, board_id: str, seconds: int) -> None:
        with _reachable():
            if seconds > 0:
                await self.redis.set(keys.deleting(board_id), 1, ex=seconds)
            else:
                await self.redis.delete(keys.deleting(board_id))

    async def is_deleting(self, board_id: str) -> bool:
        with _reachable():
            return bool(await self.redis.exists(keys.deleting(board_id)))

    async def drop_entries(self, refs: Sequence[PeriodRef], player_ids: Sequence[str]) -> int:
        """Remove the players' entries from each period, every side (public, :shadow,
        :pending) with their exact times, and their runs' marks ("<player>|<run_id>": a sum
        board's counted runs, the submit path's applied marks). Every removal of a player's
        entry from a key goes through move_entries.lua's "drop". Repeatable."""
        if not refs or not player_ids:
            return 0
        calls: list[Call] = []
        # each player's keys of each period: their shard's on a sharded board
        targets: list[tuple[keys.PeriodKeys, list[str]]] = []
        for ref in refs:
            by_shard: dict[int, list[str]] = {}
            for player in player_ids:
                shard = keys.shard_of(player, self.shards_of(ref.board))
                by_shard.setdefault(shard, []).append(player)
            targets += [(keys.period_keys(*ref, k), mine) for k, mine in by_shard.items()]
        for pk, mine in targets:
            for side in ("public", "shadow", "pending"):
                key = pk.side(side)
                calls.append((MOVE_ENTRIES, (key, key, pk.public), ("drop", "", "", "", *mine)))
        with _reachable():
            counts = [int(n) for n in await run_pipeline(self.redis, calls)]
            # marks are written with an entry, so only periods that held one can hold them
            for i, (pk, mine) in enumerate(targets):
                if sum(counts[3 * i : 3 * i + 3]):
                    for key in (pk.runs, pk.applied):
                        await self._drop_marks(key, mine)
        return sum(counts)

    async def _drop_marks(self, key: str, player_ids: Sequence[str]) -> None:
        """ZREM the members "<player>|..." of ``key`` (ZSCAN in steps; a few per player)."""
        for player in player_ids:
            found = [m async for m, _ in self.redis.zscan_iter(key, match=f"{player}|*", count=500)]
            for i in range(0, len(found), 500):
                await self.redis.zrem(key, *found[i : i + 500])

    async def forget_player(self, player_id: str) -> None:
        """Remove a player's name and profile segments."""
        with _reachable():
            await self.redis.hdel(keys.NAMES, player_id)
            await self.redis.hdel(keys.PROFILE_SEGMENTS, player_id)

    async def forget_run_ids(self, runs: Sequence[tuple[str, int, str]]) -> None:
        """Remove runs from their boards' run-id registries: (board, bucket, run id); the
        bucket after it too (a claim is made a moment after the run is received)."""
        if not runs:
            return
        with _reachable():
            pipe = self.redis.pipeline(transaction=False)
            for board_id, bucket, run_id in runs:
                for b in (bucket, bucket + 1):
                    pipe.hdel(keys.run_ids(board_id, b), run_id)
            await pipe.execute()

    # player names: a copy of PostgreSQL's players table

    async def names(self, player_ids: Sequence[str]) -> list[str | None]:
        with _reachable():
            raw = await self.redis.hmget(keys.NAMES, list(player_ids))
        return [_name(n) for n in raw]

    async def set_name(self, player_id: str, name: str) -> None:
        with _reachable():
            await self.redis.hset(keys.NAMES, player_id, name)

    async def profile_segments(self, player_ids: Sequence[str]) -> list[dict[str, str]]:
        """Each player's profile segments ({} for none)."""
        with _reachable():
            raw = await self.redis.hmget(keys.PROFILE_SEGMENTS, list(player_ids))
        return [orjson.loads(r) if r else {} for r in raw]

    async def set_profile_segments(self, player_id: str, segments: dict[str, str]) -> None:
        with _reachable():
            await self.redis.hset(keys.PROFILE_SEGMENTS, player_id, orjson.dumps(segments))

    async def restore_profile_segments(self, chunks: AsyncIterator[dict[str, str]]) -> int:
        """Replace the profile-segments hash with ``chunks`` (staged, then renamed)."""
        return await self._restore_hash(keys.PROFILE_SEGMENTS, chunks)

    async def patch_players(self, players: Sequence[tuple[str, str, str]]) -> None:
        """Write these players' names and profile segments into the copies (an empty
        profile removed), as restore_names/restore_profile_segments would have."""
        with _reachable():
            for first in range(0, len(players), 1000):
                chunk = players[first : first + 1000]
                pipe = self.redis.pipeline(transaction=False)
                pipe.hset(keys.NAMES, mapping={p: n for p, n, _ in chunk})
                profiles = {p: s for p, _, s in chunk if s != "{}"}
                if profiles:
                    pipe.hset(keys.PROFILE_SEGMENTS, mapping=profiles)  # type: ignore[arg-type]
                cleared = [p for p, _, s in chunk if s == "{}"]
                if cleared:
                    pipe.hdel(keys.PROFILE_SEGMENTS, *cleared)
                await pipe.execute()

    async def has_names(self) -> bool:
        with _reachable():
            return bool(await self.redis.exists(keys.NAMES))

    async def restore_names(self, chunks: AsyncIterator[dict[str, str]]) -> int:
        """Replace the names hash with ``chunks`` (staged, then renamed into place)."""
        return await self._restore_hash(keys.NAMES, chunks)

    async def _restore_hash(self, key: str, chunks: AsyncIterator[Any]) -> int:
        staging = keys.staging(key)
        loaded = 0
        with _reachable():
            await self.redis.delete(staging)
            async for chunk in chunks:
                await self.redis.hset(staging, mapping=chunk)
                loaded += len(chunk)
            await self._swap(key, {key: loaded}, None)
        return loaded

    # rebuild: which Redis process the boards were verified on, bulk loads, atomic swaps

    async def server_run_id(self) -> str:
        """Redis's own run id, a new one after every restart; on a cluster every primary's
        (a failover changes it too)."""
        with _reachable():
            return await identity(self.redis)

    async def is_verified(self) -> bool:
        """Whether the boards were last verified on the Redis process running now."""
        with _reachable():
            marker = await self.redis.get(keys.VERIFIED_MARKER)
        return bool(marker == (await self.server_run_id()).encode())

    async def memory(self) -> tuple[int, int]:
        """(used_memory, maxmemory) in bytes; maxmemory 0: no limit."""
        with _reachable():
            info = await self.redis.info("memory")
        if is_cluster(self.redis):  # one reply per node: the fullest one's counts
            nodes = [i for i in info.values() if isinstance(i, dict)]
            fullest = max(
                nodes,
                key=lambda i: int(i.get("used_memory", 0)) / max(int(i.get("maxmemory", 0)), 1),
                default={},
            )
            return int(fullest.get("used_memory", 0)), int(fullest.get("maxmemory", 0))
        return int(info.get("used_memory", 0)), int(info.get("maxmemory", 0))

    async def disarm_run_ids(self, board_ids: Sequence[str]) -> None:
        """Remove the boards' run-id registry markers: their next submit restores the
        registry (a Redis that restarted may have lost its last claims)."""
        with _reachable():
            for first in range(0, len(board_ids), 1000):  # one round trip per 1000 boards
                pipe = self.redis.pipeline(transaction=False)
                for board_id in board_ids[first : first + 1000]:
                    pipe.delete(keys.run_ids_armed(board_id))
                await pipe.execute()

    async def mark_verified(self, run_id: str) -> None:
        with _reachable():
            await self.redis.set(keys.VERIFIED_MARKER, run_id)

    # how far the log has been applied, per node (services/restart.py)

    def position_keys(self) -> list[str]:
        """One position key per primary, each in a slot that primary serves now: the
        standalone (or Sentinel) primary's one key, or on a cluster the first tag
        LOG_POSITION_TAG whose slot lies on each primary (found again on every call, so a
        slot moved since is followed)."""
        if not is_cluster(self.redis):
            return [keys.LOG_POSITION]
        cluster = cast(RedisCluster, self.redis)
        wanted = {node.name for node in cluster.get_primaries()}
        found: dict[str, str] = {}
        n = 0
        while len(found) < len(wanted) and n < 100_000:
            key = keys.LOG_POSITION_TAG.format(n)
            node = cluster.get_node_from_key(key)
            if node is not None and node.name in wanted and node.name not in found:
                found[node.name] = key
            n += 1
        if len(found) < len(wanted):
            raise Unavailable("a Redis Cluster primary serves no slot")
        return [found[name] for name in sorted(found)]

    async def record_position(self, sequence: int, now_ms: int) -> list[int]:
        """Record that the log is applied through ``sequence`` on every primary that is a
        process the boards were verified on (log_position.lua); per key its reply: 1
        written, 0 not past the recorded one, -1 refused (no verified marker, or the node
        restarted or was promoted since)."""
        with _reachable():
            marker = await self.redis.get(keys.VERIFIED_MARKER)
            if marker is None:
                return [-1]
            verified = marker.decode() if isinstance(marker, bytes) else str(marker)
            return [
                int(
                    await call_script(
                        self.redis, (LOG_POSITION, [key], [sequence, verified, now_ms])
                    )
                )
                for key in self.position_keys()
            ]

    async def read_positions(self) -> list[tuple[int, int] | None]:
        """Per primary, the (sequence, recorded at ms) its position key holds; None where
        the key is missing (a wiped node, or one never recorded on)."""
        out: list[tuple[int, int] | None] = []
        with _reachable():
            for key in self.position_keys():
                seq, at_ms = await self.redis.hmget(key, ["seq", "at_ms"])
                out.append(None if seq is None else (int(seq), int(at_ms or 0)))
        return out

    async def load_period(
        self,
        ref: PeriodRef,
        entries: Callable[[], AsyncIterator[tuple[int, bytes]]],
        counted_runs: Callable[[], AsyncIterator[tuple[int, bytes]]] | None,
        times: Callable[[int], AsyncIterator[tuple[int, int, bytes]]],
        expires_ms: int | None,
        start_ms: int,
        progress: Progress | None = None,
        *,
        shadowed: Sequence[str] = (),
        held: Sequence[tuple[str, int, int]] = (),
        shard: int = -1,
        staged: int | None = None,
    ) -> int:
        """Load a period's entries (and a sum board's counted runs) beside the live keys,
        then swap them in at once; returns the entries loaded. The entries' exact times go
        straight into their hashes before the swap (a field per member: nothing half-done
        shows), under the period's restoring flag: its writes are refused from then until
        the swap (see _swap); ``times`` takes the number of entries, to pick how to read them.

        Pages are (members, ZADD arguments in RESP with chr(1) for CR LF), as
        stores/standings.py formats them in PostgreSQL; times come grouped per hash bucket.
        ``shadowed``: banned players, whose entries go to the :shadow key instead (moved out
        of the staged board before the swap, so no reader sees them); ``held``: the
        :pending key's entries, (player, composite, exact ms) of runs held for review.
        ``shard``: which shard of a sharded period this loads (its entries alone);
        ``staged``: its entries and times are in place already (stage_shards loaded them,
        this many), so only the rest and the swap are left.
        """
        pk = keys.period_keys(*ref, shard)

        async def time_groups(members: int) -> AsyncIterator[tuple[str, int, bytes]]:
            async for bucket, fields, arguments in times(members):
                yield f"{pk.public}:at:{bucket}", fields, arguments

        with _reachable():
            staging = keys.staging(pk.public)
            node = self.nodes.for_key(pk.public)  # every key here shares the shard's tag
            flag = keys.restoring(pk.public)
            if staged is None:
                loaded = {pk.public: await Loader.run(node, staging, entries(), progress)}
                # from the first time written into the live hashes until the swap, the
                # period's writing scripts refuse (see _swap)
                await node.set(flag, b"1", px=RESTORING_TTL_MS)
                await Loader.hashes(node, time_groups(loaded[pk.public]), expires_ms)
            else:
                loaded = {pk.public: staged}
                await node.pexpire(flag, RESTORING_TTL_MS)  # stage_shards set it: renewed
            for i in range(0, len(shadowed), 1000):
                chunk = shadowed[i : i + 1000]
                call = (MOVE_ENTRIES, (pk.shadow, staging, pk.public), ("replace", "", "", ""))
                [moved] = await run_pipeline(self.redis, [(call[0], call[1], (*call[2], *chunk))])
                loaded[pk.public] -= int(moved)
            if counted_runs is not None:
                loaded[pk.runs] = await Loader.run(
                    node, keys.staging(pk.runs), counted_runs(), None
                )
            # the marks go with the board they were made on: runs applied to the replaced key
            # are applied again by the log consumer
            pending: list[Command] = [("DEL", (pk.pending, pk.applied))]
            if shard >= 0:  # a shard's histogram, counted from the key swapped in
                # EVAL, not EVALSHA: a Redis that lost its scripts would fail it inside
                # the MULTI, after the rename; a rebuild sends it once a shard
                source = HIST_REBUILD.source
                pending.append(("EVAL", (source, 2, pk.public, pk.hist)))
            for player, composite, achieved_ms in held:
                pending.append(("ZADD", (pk.pending, composite, codec.member(player, achieved_ms))))
                pending.append(
                    ("HSET", (keys.times(pk.public, player), f"{player}~p", achieved_ms))
                )
            await self._swap(pk.public, loaded, expires_ms, pending, restoring=flag)
            await self.redis.zadd(keys.periods_index(ref[0], ref[1]), {ref[2]: start_ms}, nx=True)
        return loaded[pk.public] + len(held)

    async def stage_shards(
        self,
        ref: PeriodRef,
        shards: int,
        pages: AsyncIterator[list[tuple[int, int, bytes]]],
        times: AsyncIterator[tuple[int, int, int, bytes]],
        progress: Progress | None = None,
    ) -> list[int]:
        """A sharded period's entries into every shard's staging key and their exact times
        into the shards' hashes, in one pass over the period (see standings.sharded_pages);
        load_period(..., shard=k, staged=n) then finishes each shard. Returns the members
        staged per shard."""
        every = keys.shard_keys(*ref, shards)

        async def groups() -> AsyncIterator[tuple[str, int, bytes]]:
            async for shard, bucket, fields, arguments in times:
                yield f"{every[shard].public}:at:{bucket}", fields, arguments

        stagings = [keys.staging(pk.public) for pk in every]
        with _reachable():
            # on Redis Cluster the shards live on different nodes: each key's writes go on
            # a connection to the node that owns it
            loaded = await Loader.sharded(self.nodes.for_key, stagings, pages, progress)
            for pk in every:  # each shard's writes refused until its swap (see _swap)
                flag = keys.restoring(pk.public)
                await self.nodes.for_key(flag).set(flag, b"1", px=RESTORING_TTL_MS)
            await Loader.hashes(self.nodes.for_key, groups(), None)
        return loaded

    async def load_small_periods(self, periods: Sequence[SmallPeriod]) -> int:
        """Load many small periods (no bans, no held runs, not a sum board: see
        services/rebuild.py) in one round trip: one load_period script call each (atomic:
        readers never see half of a period), then the periods indexes. Returns the entries
        loaded."""
        # one batch of commands per node: on a cluster each goes to the node owning its
        # key's slot (a standalone or Sentinel Redis is one node)
        by_node: dict[int, tuple[Redis, list[bytes]]] = {}

        def batch_for(key: str) -> list[bytes]:
            node = self.nodes.for_key(key)
            return by_node.setdefault(id(node), (node, []))[1]

        indexed: dict[tuple[str, str], list[bytes]] = {}
        sha = LOAD_PERIOD.sha.encode()
        for small in periods:
            pk = keys.period_keys(*small.ref)
            commands = batch_for(pk.public)
            head = (b"EVALSHA", sha, b"3", pk.public.encode(), pk.pending.encode(),
                    pk.applied.encode(), b"%d" % small.members)  # fmt: skip
            parts = [bulk(h) for h in head]
            parts.append(small.entries.replace(b"\x01", b"\r\n"))
            size = len(head) + 2 * small.members
            for bucket, fields, arguments in small.times:
                parts += [bulk(b"%d" % bucket), bulk(b"%d" % fields)]
                parts.append(arguments.replace(b"\x01", b"\r\n"))
                size += 2 + 2 * fields
            commands.append(b"*%d\r\n%b" % (size, b"".join(parts)))
            index = indexed.setdefault((small.ref[0], small.ref[1]), [])
            index += [b"%d" % small.start_ms, small.ref[2].encode()]
        for (board, window), members in indexed.items():
            index_key = keys.periods_index(board, window)
            batch_for(index_key).append(command(b"ZADD", index_key.encode(), b"NX", *members))
        with _reachable():
            for node, commands in by_node.values():
                try:
                    await run_commands(node, commands)
                except NoScriptError:
                    await load_all(self.redis)  # Redis lost its scripts (restarted): again
                    await run_commands(node, commands)
        return sum(small.members for small in periods)

    async def missing_periods(self, refs: Sequence[PeriodRef]) -> set[PeriodRef]:
        """Which of ``refs`` have no board key (on no shard), asked in pipelined chunks (one
        round trip per 1,000 periods, not one each)."""
        missing: set[PeriodRef] = set()
        for i in range(0, len(refs), 1000):
            chunk = refs[i : i + 1000]
            spans = [self._every(ref) for ref in chunk]
            with _reachable():
                async with self.redis.pipeline(transaction=False) as pipe:
                    for every in spans:
                        for pk in every:
                            pipe.exists(pk.public)
                    found = iter(await pipe.execute())
            for ref, every in zip(chunk, spans, strict=True):
                if not any([next(found) for _ in every]):
                    missing.add(ref)
        return missing

    async def _swap(
        self,
        tagged: str,
        staged: dict[str, int],
        expires_ms: int | None,
        also: Sequence[Command] = (),
        *,
        restoring: str | None = None,
    ) -> None:
        """Put every staged key in place in one MULTI/EXEC: a sum board's total and its
        counted runs must change together, or a submit landing between them would be
        counted in one and lost from the other. They share ``tagged``'s hash tag, so the
        transaction runs on the one node that holds them.

        ``restoring``: the period's flag (redis_keys.restoring), set before PostgreSQL's
        exact times went into the live hashes. While it is set the writing scripts refuse
        (lua/lib.lua refuse_while_restoring), so no submit or applied run can point a
        player's time at a member the staged key does not hold (the next write would then
        add a second member for the player). It is removed in this transaction; if it
        expired (or changed) first, writes may have landed in between, so nothing is
        swapped (WATCH) and the rebuild fails, to be run again."""
        pipe = self.nodes.for_key(tagged).pipeline(transaction=True)
        if restoring is not None:
            await pipe.watch(restoring)
            if not await pipe.exists(restoring):
                await pipe.reset()  # type: ignore[no-untyped-call]
                raise Unavailable("the period's rebuild outlasted its restoring flag; retry")
            pipe.multi()  # type: ignore[no-untyped-call]
        for live, loaded in staged.items():
            if loaded == 0:
                pipe.delete(live, keys.staging(live))
                continue
            pipe.rename(keys.staging(live), live)
            if expires_ms is not None:
                pipe.pexpireat(live, expires_ms)
        for name, args in also:  # e.g. the :pending key, put in place with the board
            pipe.execute_command(name, *args)
        if restoring is not None:
            pipe.delete(restoring)
        await pipe.execute()
