"""Stray writes to a replaced Sentinel primary, caught up whoever made them.

During a partition an instance may keep writing to the old primary (its log consumer
applying and acking batches there) while another restores the promoted replica. The
instance that wrote there catches up itself once it finds the new primary (health.py); but
an instance restarted meanwhile has forgotten which node it wrote to. So every instance
notes in PostgreSQL, every NOTE_EVERY_S, the primary it writes to, and any instance, finding
a node that a restore replaced and that nobody has noted for QUIET_S (its writers have moved
on, or died), replays the log into the current primary from where that restore began
(services/rebuild/restart.py catch_up) and drops the note; a node no restore replaced
(a note from before a backup was restored, say) has its note dropped. The replay is
idempotent: after an ordinary failover it re-applies a few seconds of log to no effect.

One instance works on a node at a time, under a lease of its own (a session advisory lock
on a connection of its own: it dies with its holder, and the note stays for the next). A
failing round waits longer each time (up to MAX_BACKOFF_S).
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Awaitable, Callable

from rankd.services.rebuild.restart import Restorer
from rankd.stores import redis_writers
from rankd.stores.postgres import PostgresStore

logger = logging.getLogger("rankd")

NOTE_EVERY_S = 5.0
# a node unnoted this long has no writer left (several notes missed)
QUIET_S = 20.0
MAX_BACKOFF_S = 300.0
# a node's lease: this plus the CRC-32 of its id (two nodes sharing one wait for each other)
NODE_LOCK = 0x72616E6B << 32

CatchUp = Callable[[str], Awaitable[object]]


class NodeWriters:
    def __init__(self, pg: PostgresStore, restorer: Restorer, *, quiet_s: float = QUIET_S) -> None:
        self.pg = pg
        self.restorer = restorer
        self.quiet_s = quiet_s
        self._next = 0.0  # monotonic time the next round is due
        self._backoff = NOTE_EVERY_S

    async def round(self, current: str, catch_up: CatchUp) -> int:
        """Note ``current`` (the primary this instance writes to) and catch up each quiet
        replaced node with ``catch_up(node)``, at most every NOTE_EVERY_S (later after a
        failure); returns the nodes caught up."""
        if time.monotonic() < self._next:
            return 0
        self._next = time.monotonic() + NOTE_EVERY_S
        try:
            await redis_writers.note(self.pg, current)
            caught = 0
            for node in await redis_writers.quiet(self.pg, current, self.quiet_s):
                caught += await self._one(node, catch_up)
        except Exception:
            self._next = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
            raise
        self._backoff = NOTE_EVERY_S
        return caught

    async def _one(self, node: str, catch_up: CatchUp) -> int:
        async with self.pg.lease(NODE_LOCK + zlib.crc32(node.encode())) as held:
            if held is None or not await redis_writers.still_quiet(held, node, self.quiet_s):
                return 0  # another instance on it, or written to again
            if await self.restorer.redis.positions.restored_from(node) is None:
                logger.info("redis node %s: no restore replaced it; its note dropped", node)
                caught = 0
            else:
                await catch_up(node)
                caught = 1
            await redis_writers.drop(held, node, self.quiet_s)
            return caught
