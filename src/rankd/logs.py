"""The service's log lines: one format for every process that serves.

``rankd serve --workers N`` starts its workers with multiprocessing's *spawn*, so a worker
inherits none of the parent's logging setup: without this the access log (INFO) fell to
logging's last-resort handler, which prints WARNING and up only, bare of time, level and
logger. Each worker calls ``configure`` again as it starts (``api/server.py``).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def configure(level: str) -> None:
    """Send every logger's records to stderr in the service's format, at ``level``."""
    logging.basicConfig(level=level.upper(), format=FORMAT)


class Repeats:
    """Lets a kind of line through at most once per ``every_s``, counting the ones held back
    so the next line can say how many: an outage that fails hundreds of requests a second
    writes one line a second about it, not hundreds. Remembers at most ``max_kinds`` kinds
    (the oldest forgotten first), so a stream of distinct lines cannot grow it."""

    def __init__(
        self,
        every_s: float = 1.0,
        max_kinds: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_s = every_s
        self.max_kinds = max_kinds
        self.clock = clock
        self._kinds: OrderedDict[str, list[float]] = OrderedDict()  # kind -> [last, held]

    def allow(self, kind: str) -> int | None:
        """None: hold this line back; else let it through, with how many of its kind were
        held back since the last one let through."""
        now = self.clock()
        entry = self._kinds.get(kind)
        if entry is not None and now - entry[0] < self.every_s:
            entry[1] += 1
            return None
        held = int(entry[1]) if entry is not None else 0
        self._kinds[kind] = [now, 0]
        self._kinds.move_to_end(kind)
        while len(self._kinds) > self.max_kinds:
            self._kinds.popitem(last=False)
        return held
