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
"""

from __future__ import annotations

import logging
import time

from rankd.services.rebuild.restart import Restorer
from rankd.stores import redis_writers
from rankd.stores.postgres import PostgresStore

logger = logging.getLogger("rankd")

NOTE_EVERY_S = 5.0
# a node unnoted this long has no writer left (several notes missed)
QUIET_S = 20.0


class NodeWriters:
    def __init__(self, pg: PostgresStore, restorer: Restorer, *, quiet_s: float = QUIET_S) -> None:
        self.pg = pg
        self.restorer = restorer
        self.quiet_s = quiet_s
        self._last = 0.0  # monotonic time of the last round

    async def round(self, current: str) -> int:
        """Note ``current`` (the primary this instance writes to) and catch up each quiet
        replaced node, at most every NOTE_EVERY_S; returns the nodes caught up."""
        if time.monotonic() - self._last < NOTE_EVERY_S:
            return 0
        self._last = time.monotonic()
        now_ms = int(time.time() * 1000)
        await redis_writers.note(self.pg, current, now_ms)
        before_ms = now_ms - int(self.quiet_s * 1000)
        caught = 0
        for node in await redis_writers.quiet(self.pg, current, before_ms):
            async with redis_writers.claim(self.pg, node, before_ms) as mine:
                if not mine:
                    continue
                if await self.restorer.redis.positions.restored_from(node) is None:
                    # no restore replaced it here (a note from before a backup was
                    # restored, or a week old): nothing to replay from
                    logger.info("redis node %s: no restore replaced it; note dropped", node)
                    continue
                report = await self.restorer.catch_up(node, lambda _: None)
                logger.warning("redis node %s, written to before: %s", node, report.describe())
                caught += 1
        return caught
