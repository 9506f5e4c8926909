"""Readiness that means it: which dependency is recovering, and how far.

Ready means reads reflect every acknowledged run. After a dependency was lost (Redis
restarted and rebuilt, PostgreSQL or NATS down and back) or at startup, that holds only
once the log's tail as of the moment it came back has been applied: every run logged up to
that sequence is then in Redis and PostgreSQL. So each recovery waits for its target, the
log's last sequence taken once the dependency answers again (for Redis: once the rebuild is
done), and ends when the shared log consumer's ack floor reaches it, or the consumer has
nothing pending at all. Until every recovery has ended /readyz answers 503 and says which
dependency is recovering and how far it is.

Pure bookkeeping (no I/O): runtime.py feeds it what it observes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

logger = logging.getLogger("rankd.recovery")


@dataclass
class Pending:
    stage: str  # what is happening now, for /readyz
    began: float = field(default_factory=time.monotonic)
    target: int | None = None  # the log sequence reads must reach; None: not back yet
    applied: int = 0  # the consumer's ack floor as last seen


class Recovery:
    def __init__(self) -> None:
        self.pending: dict[str, Pending] = {}

    def begin(self, name: str, stage: str) -> None:
        """``name`` is lost or being restored: not ready until it is back and caught up.
        Beginning again (lost again meanwhile) forgets the target it had."""
        found = self.pending.get(name)
        if found is None:
            logger.warning("%s: recovering (%s)", name, stage)
            self.pending[name] = Pending(stage)
        else:
            found.stage, found.target = stage, None

    def waiting(self, name: str) -> bool:
        """Whether ``name`` is recovering and has no target yet."""
        found = self.pending.get(name)
        return found is not None and found.target is None

    def stage(self, name: str) -> str:
        """What ``name``'s recovery is doing ("" when it is not recovering)."""
        found = self.pending.get(name)
        return "" if found is None else found.stage

    def back(self, name: str, target: int) -> None:
        """``name`` answers again (Redis: and is rebuilt); reads are complete once the log
        is applied up to ``target``."""
        found = self.pending.get(name)
        if found is not None and found.target is None:
            found.target = target
            found.stage = f"applying the log up to sequence {target}"

    def applied(self, ack_floor: int, idle: bool) -> list[str]:
        """The consumer has applied every message up to ``ack_floor`` (``idle``: every
        message logged so far); returns the recoveries this ends."""
        done = []
        for name, found in list(self.pending.items()):
            found.applied = ack_floor
            if found.target is not None and (idle or ack_floor >= found.target):
                done.append(name)
                del self.pending[name]
                logger.warning(
                    "%s: recovered; reads reflect every acknowledged run (%.1fs after it began)",
                    name,
                    time.monotonic() - found.began,
                )
        return done

    def describe(self) -> dict[str, str]:
        """Each recovery in progress and how far it is."""
        out = {}
        for name, found in self.pending.items():
            far = ""
            if found.target is not None:
                far = f", at {min(found.applied, found.target)}"
            out[name] = f"{found.stage}{far} ({time.monotonic() - found.began:.1f}s)"
        return out
