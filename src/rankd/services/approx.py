"""Approximate ranks on sharded boards: the other shards' score histograms, held in memory.

``accuracy=approx`` reads the player's own shard (their composite and exact place there:
one script call) and estimates the entries ahead of them on every other shard from that
shard's histogram (histogram.py): all the entries of higher buckets, plus half of those in
the player's bucket, whose order against the player the histogram cannot tell. The
``error_bound`` is the sum over the other shards of half their count in that bucket,
rounded up, plus the changes the shards were seen to take per second times the snapshot's
age. Against the snapshot the exact rank always lies within it; the allowance for changes
since is an estimate from the observed rate (a sudden burst right after a refresh can
exceed it until the next refresh).

One task per instance (``run``) refreshes every period read with ``approx`` in the last
IDLE_S seconds, every ``refresh_s`` (one pipeline of HGETALLs per period), so a read never
waits for Redis beyond its own shard, except the first approx read of a period.

The histograms stay true by construction (the scripts that move an entry count the move in
the same atomic step) and are recounted from scratch after a rebuild; as the seeds ask
("atomic updates plus periodic reconciliation"), the same task also recounts each such
period's histograms from its standings every ``reconcile_s`` (lua/hist_check.lua: a few
thousand O(log n) steps per shard, atomic) and repairs any drift, which the metric
``rankd_histogram_drift_total`` counts and a warning names: a drift means some write path
moved entries without counting them.

The cache: per period, per shard, three arrays of 8-byte integers over the populated
buckets (at most 11,776): 24 bytes x populated buckets x shards; a 16-shard board with
3,000 populated buckets per shard holds 1.2 MB. At most ``max_bytes`` in all (default
64 MiB); the least recently read period goes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from array import array
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from rankd import metrics
from rankd.histogram import bucket
from rankd.periods import PeriodRef
from rankd.placement import Layout, base_of
from rankd.stores.redis.histograms import HistogramKeys

logger = logging.getLogger(__name__)

IDLE_S = 60.0  # a period not read with approx for this long is no longer refreshed
_ARRAY_BYTES = 24  # per populated bucket: its id, its count, the entries above it


@dataclass(slots=True)
class ShardHistogram:
    """One shard's histogram: populated buckets ascending, their counts, and for each the
    entries in higher buckets."""

    buckets: array[int]
    counts: array[int]
    above: array[int]
    total: int
    changes: int  # the histogram's change counter when read

    @classmethod
    def parse(cls, raw: dict[Any, Any]) -> ShardHistogram:
        changes = 0
        pairs: list[tuple[int, int]] = []
        for field, value in raw.items():
            name = field.decode() if isinstance(field, bytes) else str(field)
            if name == "#":
                changes = int(value)
            elif int(value) > 0:
                pairs.append((int(name), int(value)))
        pairs.sort()
        above = array("q", [0] * len(pairs))
        running = 0
        for i in range(len(pairs) - 1, -1, -1):
            above[i] = running
            running += pairs[i][1]
        return cls(
            array("q", (b for b, _ in pairs)),
            array("q", (n for _, n in pairs)),
            above,
            running,
            changes,
        )

    def place(self, b: int) -> tuple[int, int]:
        """(entries in buckets above ``b``, entries in ``b``)."""
        i = bisect_left(self.buckets, b)
        if i < len(self.buckets) and self.buckets[i] == b:
            return self.above[i], self.counts[i]
        return (self.above[i - 1] if i else self.total), 0  # buckets from i on are above

    @property
    def size(self) -> int:
        return _ARRAY_BYTES * len(self.buckets) + 200


@dataclass(slots=True)
class PeriodHistograms:
    shards: list[ShardHistogram]
    fetched_s: float  # monotonic
    read_s: float
    changes_per_s: float  # over every shard, between the last two refreshes

    @property
    def size(self) -> int:
        return sum(h.size for h in self.shards) + 200


class Histograms:
    """Every shard's histogram of the periods read with ``accuracy=approx``."""

    def __init__(
        self,
        store: HistogramKeys,
        *,
        refresh_s: float = 2.0,
        max_bytes: int = 64 << 20,
        reconcile_s: float = 300.0,
    ) -> None:
        self.store = store
        self.refresh_s = refresh_s
        self.max_bytes = max_bytes
        self.reconcile_s = reconcile_s
        self._held: OrderedDict[tuple[PeriodRef, int, int], PeriodHistograms] = OrderedDict()
        self._bytes = 0
        self._reconciled_s = time.monotonic()

    async def _fetch(self, ref: PeriodRef, shards: int) -> list[ShardHistogram]:
        return [ShardHistogram.parse(r) for r in await self.store.fetch(ref, shards)]

    async def reconcile(self, ref: PeriodRef, shards: int) -> int:
        """Recount the period's histograms from its standings, repair them and count the
        drift found (the metric); returns it."""
        drift = sum(await self.store.reconcile(ref, shards))
        if drift:
            metrics.HISTOGRAM_DRIFT.inc(drift)
            logger.warning("the histograms of %s had drifted by %d entries; repaired", ref, drift)
        return drift

    def _keep(self, key: tuple[PeriodRef, int, int], held: PeriodHistograms) -> None:
        old = self._held.pop(key, None)
        if old is not None:
            self._bytes -= old.size
        self._held[key] = held
        self._bytes += held.size
        while self._bytes > self.max_bytes and len(self._held) > 1:
            _, gone = self._held.popitem(last=False)
            self._bytes -= gone.size

    async def refresh(self, ref: PeriodRef, shards: int) -> PeriodHistograms:
        key = (ref, int(shards), base_of(shards))  # a layout's names, not just its count
        now = time.monotonic()
        fresh = await self._fetch(ref, shards)
        old = self._held.get(key)
        rate = 0.0
        if old is not None and now > old.fetched_s:
            changed = sum(
                max(0, f.changes - o.changes) for f, o in zip(fresh, old.shards, strict=True)
            )
            rate = changed / (now - old.fetched_s)
        held = PeriodHistograms(fresh, now, old.read_s if old else now, rate)
        self._keep(key, held)
        return held

    async def estimate(
        self, ref: PeriodRef, shards: int, own: int, composite: int
    ) -> tuple[int, int, int]:
        """For an entry of ``composite`` on shard ``own``: (estimated entries ahead of it on
        the other shards, the bound on that estimate's error, their entries in all)."""
        key = (ref, int(shards), base_of(shards))  # a layout's names, not just its count
        held = self._held.get(key)
        if held is None:
            held = await self.refresh(ref, shards)
        held.read_s = time.monotonic()
        self._held.move_to_end(key)
        b = bucket(composite)
        ahead = bound = total = 0
        for k, shard in enumerate(held.shards):
            if k == own:
                continue
            above, within = shard.place(b)
            ahead += above + within // 2
            bound += within - within // 2
            total += shard.total
        stale = held.changes_per_s * (time.monotonic() - held.fetched_s)
        return ahead, bound + int(stale + 0.999), total

    async def run(self, stop: asyncio.Event) -> None:
        """Refresh every recently read period every ``refresh_s``, until ``stop``."""
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.refresh_s)
            if stop.is_set():
                return
            now = time.monotonic()
            recount = self.reconcile_s > 0 and now - self._reconciled_s >= self.reconcile_s
            if recount:
                self._reconciled_s = now
            for key, held in list(self._held.items()):
                if now - held.read_s > IDLE_S:
                    self._bytes -= held.size
                    self._held.pop(key, None)
                    continue
                layout = Layout(key[1], key[2])
                try:
                    if recount:
                        await self.reconcile(key[0], layout)
                    await self.refresh(key[0], layout)
                except Exception:
                    logger.warning("histogram refresh of %s failed", key[0], exc_info=True)
