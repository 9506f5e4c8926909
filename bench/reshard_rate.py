"""Live resharding's rate at N members, with the plain rebuild of the same board as the
same-run baseline.

One board of ``--from`` shards holds N members in one all-time period (bench/giant.py's
board and fill: random scores and times, valid composites, generated inside PostgreSQL).
On an emptied Redis (``--topology single``, or ``cluster``: three primaries with a replica
each):

* the baseline: the board rebuilt from PostgreSQL (``rankd rebuild``'s code path),
  members/s;
* the move: ``shards`` changed to ``--to`` through the registry (the PUT's code path), then
  driven to its end by a mover of this process (services/resharding.py) with no settle
  times (nothing else serves the board here; in production each of the three phase changes
  waits the config cache's TTL and a second more): the copy (the new layout built from
  PostgreSQL, ``Rebuilder.rebuild(..., standings_only=True)`` per period: from the first
  build's start to the last one's end), entries/s; the copy phase whole (the periods
  listed and counted, the wait for the log consumer, the switch); the drop (the old
  layout's keys found by SCAN and UNLINKed); the whole move, from the PUT to its end;
* the check: the new layout's keys hold N members, the old layout has no key left, the
  top 100 and sampled players' entries and ranks read through the store are the
  ones read before the move;
* memory: Redis's used_memory added by the copy (read as it ends, both layouts held)
  beside what the PUT's room check estimated for the board (services/registry.py);
* for reference, the board rebuilt again in its new layout (``--to`` shards), members/s.

Prints a line per measurement and writes bench/results/reshard_rate.json (or
reshard_rate_cluster.json).

    python -m bench.reshard_rate --members 2000000 --to 16
    python -m bench.reshard_rate --members 2000000 --from 4 --to 16
    python -m bench.reshard_rate --members 20000                 # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from typing import Any, cast

from bench.common import machine_line, topology_settings, write_result
from bench.giant import board_of, fill, prepare
from bench.rebuild_rate_streams import emptied
from rankd.boards import BoardConfig
from rankd.periods import ALL_TIME, PeriodRef
from rankd.runtime import Runtime
from rankd.services.consumer import DURABLE
from rankd.services.rebuild import Rebuilder
from rankd.services.rebuild.rebuilder import RebuildReport
from rankd.services.resharding import Resharding, in_layout
from rankd.settings import Settings
from rankd.stores import reshards
from rankd.stores.postgres import Conn
from rankd.stores.redis import keys

# the settle time of the runtime's own instances (config_cache_ttl_s + 1 s); the mover
# measured here waits none
CONFIG_CACHE_TTL_S = 0.5
# how often the move is driven again while it cannot go on (run_pass returned moves left)
PASS_WAIT_S = 0.05
# players whose entry and rank are read before the move and after it
SAMPLED = 200


class TimedBuilds:
    """The rebuilder as the mover sees it: every build's start and end noted (the copy is
    the span from the first one's start to the last one's end)."""

    def __init__(self, inner: Rebuilder) -> None:
        self.inner = inner
        self.first: float | None = None
        self.last: float | None = None
        self.reports: list[RebuildReport] = []

    async def rebuild(self, *args: Any, **kwargs: Any) -> RebuildReport | None:
        started = time.perf_counter()
        if self.first is None:
            self.first = started
        try:
            report = await self.inner.rebuild(*args, **kwargs)
        finally:
            self.last = time.perf_counter()
        if report is not None:
            self.reports.append(report)
        return report

    @property
    def seconds(self) -> float:
        return 0.0 if self.first is None or self.last is None else self.last - self.first


class TimedResharding(Resharding):
    """The service's mover, its copy phase and its drops timed."""

    copy_s: float = 0.0
    drop_s: float = 0.0
    drop_keys: int = 0
    copied_used: int = 0  # Redis's used_memory as the copy ends: both layouts held

    async def _copy(self, config: BoardConfig, held: Conn) -> bool:
        started = time.perf_counter()
        try:
            return await super()._copy(config, held)
        finally:
            self.copy_s += time.perf_counter() - started
            self.copied_used = (await self.redis.conn.memory())[0]

    async def _drop(self, board_id: str, old: int) -> int:
        started = time.perf_counter()
        try:
            removed = await super()._drop(board_id, old)
        finally:
            self.drop_s += time.perf_counter() - started
        self.drop_keys += removed
        return removed


async def old_layout_keys(runtime: Runtime, board_id: str, old: int) -> int:
    """Keys of the board's standings still named as the layout ``old`` names them."""
    names = range(keys.base_of(old), keys.base_of(old) + int(old)) if old > 1 else None
    found = 0
    for pattern in keys.board_patterns(board_id)[:2]:
        async for key in runtime.redis.conn.client.scan_iter(match=pattern, count=1000):
            found += in_layout(key, names)
    return found


async def drive(mover: Resharding, board_id: str, timeout_s: float) -> None:
    """Passes of the mover until the board's move has ended."""
    deadline = time.monotonic() + timeout_s
    while await mover.run_pass():
        if time.monotonic() > deadline:
            config = await mover.pg.get_board(board_id)
            move = None if config is None else config.reshard
            raise AssertionError(f"the move has not ended after {timeout_s:.0f}s: {move}")
        await asyncio.sleep(PASS_WAIT_S)


async def measure(
    settings: Settings, n: int, source: int, target: int, timeout_s: float
) -> dict[str, Any]:
    runtime = Runtime.build(settings)
    # no background work: no log consumer, no resharding pass of the runtime's own (the
    # mover below is the only one). The move's wait for the consumer (Resharding._caught_up)
    # then needs a log with nothing unapplied: with no durable consumer, RunLog.lag counts
    # the stream's messages as waiting; here nothing was ever logged (the members were
    # written into PostgreSQL directly), so it reports the floor at the last sequence (0).
    await runtime.open(background=False)
    board_id = board_of(source)
    ref = PeriodRef(board_id, ALL_TIME, ALL_TIME)
    try:
        last = await runtime.runlog.last_sequence()
        lag = await runtime.runlog.lag(DURABLE)
        assert lag.ack_floor >= last, f"the log holds unapplied runs ({lag}): the copy would wait"
        await emptied(runtime.redis.client)
        baseline = await runtime.rebuilder.rebuild(board=board_id)
        assert baseline is not None and baseline.members == n, baseline
        rebuild_rate = n / baseline.seconds
        print(
            f"{n:,} members, {source} shard(s): rebuild {rebuild_rate:,.0f}/s"
            f" ({baseline.seconds:.2f}s)",
            flush=True,
        )
        before = await runtime.boards.reload(board_id)
        top_before = await runtime.redis.reads.top(ref, 0, 100)
        rng = random.Random(target)
        players = [f"p{rng.randrange(1, n + 1)}" for _ in range(SAMPLED)]
        entries_before = [await runtime.redis.reads.entry(ref, p) for p in players]
        assert all(e is not None for e, _ in entries_before), "a sampled player has no entry"

        builds = TimedBuilds(runtime.rebuilder)
        mover = TimedResharding(
            runtime.pg,
            runtime.redis,
            cast(Rebuilder, builds),
            runtime.runlog,
            DURABLE,
            settle_s=0.0,
        )
        # what the PUT's room check (services/registry.py) counts, beside what Redis holds
        config = await runtime.boards.reload(board_id)
        estimate = (await reshards.footprint(runtime.pg, config, target)).bytes()
        used_before = (await runtime.redis.conn.memory())[0]
        started = time.perf_counter()
        config, _ = await runtime.boards.put(board_id, {"shards": target})
        assert config.reshard is not None and config.reshard.phase == "copy", config
        await drive(mover, board_id, timeout_s)
        whole_s = time.perf_counter() - started

        # the check: N members in the new layout, nothing left of the old, the same top 100
        after = await runtime.boards.reload(board_id)
        assert after.reshard is None and int(after.shards) == target, after
        new_keys = keys.shard_keys(board_id, ALL_TIME, ALL_TIME, "", after.shards)
        client = runtime.redis.conn.client
        held = [int(await client.zcard(k.public)) for k in new_keys]
        assert sum(held) == n, f"the new layout holds {sum(held):,} members, not {n:,}"
        old_left = await old_layout_keys(runtime, board_id, before.shards)
        assert old_left == 0, f"{old_left} keys of the old layout are left"
        old_public = keys.shard_keys(board_id, ALL_TIME, ALL_TIME, "", before.shards)
        assert not await client.exists(*(k.public for k in old_public)), "old keys remain"
        entries_after = [await runtime.redis.reads.entry(ref, p) for p in players]
        assert entries_after == entries_before, "a sampled player's entry or rank changed"
        top_after = await runtime.redis.reads.top(ref, 0, 100)
        assert top_after == top_before, "the top 100 differs after the move"
        built = sum(r.members for r in builds.reports)
        assert built == n, f"the copy built {built:,} members, not {n:,}"

        copy_s = builds.seconds
        copy_rate = n / copy_s
        print(
            f"{n:,} members, {source} -> {target} shards: copy {copy_rate:,.0f} entries/s"
            f" ({copy_s:.2f}s, {copy_rate / rebuild_rate:.2f}x the rebuild), copy phase"
            f" {mover.copy_s:.2f}s, drop {mover.drop_s:.2f}s ({mover.drop_keys:,} keys),"
            f" whole move {whole_s:.2f}s; {len(new_keys)} keys hold {sum(held):,} members,"
            f" smallest {min(held):,}, largest {max(held):,}; old layout gone",
            flush=True,
        )
        added = mover.copied_used - used_before
        print(
            f"{n:,} members: the new layout added {added / n:.1f} B a member to Redis"
            f" ({added >> 20} MiB); the PUT's room check counted {estimate / n:.1f} B"
            f" ({estimate / added:.2f}x)",
            flush=True,
        )
        # for reference: the board rebuilt in its new layout, as a plain rebuild does it
        again = await runtime.rebuilder.rebuild(board=board_id, fresh_config=after)
        assert again is not None and again.members == n, again
        again_rate = n / again.seconds
        print(
            f"{n:,} members, {target} shards: rebuild {again_rate:,.0f}/s ({again.seconds:.2f}s)",
            flush=True,
        )
    finally:
        await runtime.close()
    return {
        "members": n,
        "from_shards": source,
        "to_shards": target,
        "rebuild_seconds": round(baseline.seconds, 3),
        "rebuild_members_per_s": round(rebuild_rate),
        "copy_seconds": round(copy_s, 3),
        "copy_members_per_s": round(copy_rate),
        "ratio_copy_over_rebuild": round(copy_rate / rebuild_rate, 3),
        "copy_phase_seconds": round(mover.copy_s, 3),
        "drop_seconds": round(mover.drop_s, 3),
        "drop_keys": mover.drop_keys,
        "whole_move_seconds": round(whole_s, 3),
        "rebuild_to_seconds": round(again.seconds, 3),
        "rebuild_to_members_per_s": round(again_rate),
        "ratio_copy_over_rebuild_to": round(copy_rate / again_rate, 3),
        "move_added_redis_bytes": added,
        "room_check_estimated_bytes": estimate,
        "new_layout_keys": len(new_keys),
        "new_layout_smallest_key": min(held),
        "new_layout_largest_key": max(held),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, default=2_000_000)
    parser.add_argument("--from", dest="source", type=int, default=1, help="shards before")
    parser.add_argument("--to", dest="target", type=int, default=16, help="shards after")
    parser.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds the move may take at most"
    )
    parser.add_argument(
        "--topology",
        choices=["single", "cluster"],
        default="single",
        help="cluster: three primaries and a replica each",
    )
    args = parser.parse_args()
    if args.source == args.target:
        parser.error("--from and --to must differ")
    line = machine_line()
    print(f"machine: {line}")
    # room for both layouts at once (about 130 B a member each) and a build's staging keys
    gib = max(2, -(-args.members * 520 // 2**30))
    os.environ.setdefault("RANKD_REDIS_MAX_MEMORY", f"{gib}gb")
    stack = topology_settings(args.topology, config_cache_ttl_s=CONFIG_CACHE_TTL_S)
    with stack as (postgres_url, settings):
        asyncio.run(prepare(settings, [args.source]))
        started = time.perf_counter()
        fill(postgres_url, args.members, [args.source])
        print(f"filled in {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
        result = asyncio.run(
            measure(settings, args.members, args.source, args.target, args.timeout)
        )
    write_result(
        "reshard_rate" if args.topology == "single" else f"reshard_rate_{args.topology}",
        {
            "command": " ".join(["python -m bench.reshard_rate", *sys.argv[1:]]),
            "machine_line": line,
            "topology": args.topology,
            **result,
            "method": "one all-time period; the baseline is the board's plain rebuild from"
            " PostgreSQL on an emptied Redis; the move is started through the registry"
            " (PUT's code path) and driven by services/resharding.py's mover in this process"
            " with settle_s 0 (no other instance, no writes, no log consumer: the log is"
            " empty); copy = first period build's start to the last one's end (standings"
            " only); whole move = from the PUT to the move's end, without the three settle"
            " times production waits (config_cache_ttl_s + 1 s each)",
        },
    )


if __name__ == "__main__":
    main()
