"""In-process notices that what readers cached may no longer be what the boards hold.

Moderation publishes one after a ban's first sweep and after a hold decision, deletion after
a board is deleted or a player erased; the reader subscribes and drops its rendered top lists
(services/reads.py), so this process's next read shows the change at once. Other processes
hear nothing from here: their caches expire within ``top_cache_s``, and they learn of bans
from their own refresh of the bans table (services/moderation.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger("rankd.invalidation")


class Invalidations:
    """Listeners called in subscription order, synchronously, on every ``publish``."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[], None]] = []

    def subscribe(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def publish(self) -> None:
        """Tell every listener; one that fails is logged and the others are still told (the
        change itself is done by then: a cache only lives ``top_cache_s`` anyway)."""
        for listener in self._listeners:
            try:
                listener()
            except Exception:
                log.exception("a cache listener failed")
