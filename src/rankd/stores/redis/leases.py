"""A rebuild's lease on the periods it is putting back, renewed while the rebuild lives.

From the first exact time a rebuild writes into a period's live hashes until its swap, the
period's writing scripts must refuse (stores/redis/staging.py swap says why). The refusal
used to be a flag set for ten minutes: a `rankd rebuild` killed midway blocked the board's
writes, and the log consumer with them, that long. Now the flag (``keys.restoring``) is a
lease of LEASE_MS that this process renews every RENEW_S while it holds it, so a rebuild
that dies lets it lapse within seconds. The ``keys.torn`` mark, set with it and removed
only by the swap, remembers that the hashes may be half rewritten: once the lease has
lapsed the scripts refuse with TORN and the service rebuilds the period
(services/rebuild/repairs.py). A lease that lapses while its rebuild still runs (a stalled
process) is safe too: the swap finds it gone and fails (WATCH), and TORN takes over.

Bounded: one entry per period being restored, which a rebuild's own loop bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from redis.exceptions import RedisError

from rankd.stores.redis import keys
from rankd.stores.redis.connection import NodeClients

logger = logging.getLogger("rankd.rebuild")

LEASE_MS = 10_000
RENEW_S = 2.5


class Leases:
    """The leases this process holds, renewed together by one task while any is held."""

    def __init__(self, nodes: NodeClients) -> None:
        self.nodes = nodes
        self._held: set[str] = set()
        self._renewer: asyncio.Task[None] | None = None

    @property
    def held(self) -> frozenset[str]:
        return frozenset(self._held)

    async def take(self, public: str) -> None:
        """Refuse the period's writes from now until its swap (or until this process stops
        renewing), and mark it torn until the swap."""
        node = self.nodes.for_key(public)
        async with node.pipeline(transaction=True) as pipe:
            pipe.set(keys.restoring(public), b"1", px=LEASE_MS)
            pipe.set(keys.torn(public), b"1")
            await pipe.execute()
        self._held.add(public)
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.create_task(self._renew(), name="rebuild-lease")

    def swapped(self, public: str) -> None:
        """The swap removed the lease and the torn mark together."""
        self._held.discard(public)

    async def abandon(self, publics: list[str]) -> None:
        """A rebuild that failed or was stopped: its leases go at once, so writes see TORN
        (and the period is rebuilt) now rather than when the leases would lapse. Its
        staging keys go too. Best effort: a Redis that is away lets the leases lapse."""
        mine = [p for p in publics if p in self._held]
        self._held.difference_update(mine)  # first: a second cancel mid-way renews nothing
        for public in mine:
            flag = keys.restoring(public)
            with contextlib.suppress(RedisError, OSError):
                await self.nodes.for_key(flag).delete(
                    flag, keys.staging(public), keys.staging(f"{public}:runs")
                )

    async def _renew(self) -> None:
        while self._held:
            await asyncio.sleep(RENEW_S)
            for public in list(self._held):
                flag = keys.restoring(public)
                try:
                    # PEXPIRE leaves a lapsed lease lapsed: the swap then fails, as it must
                    await self.nodes.for_key(flag).pexpire(flag, LEASE_MS)
                except (RedisError, OSError) as exc:
                    logger.warning("rebuild lease of %s not renewed: %r", public, exc)
