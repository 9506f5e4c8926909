"""Periods rebuilt after a run-id conflict: the log consumer applied a run of theirs nowhere
(services/run_ids.py), which only happens after Redis lost claims, and Redis may hold it."""

from __future__ import annotations

import asyncio
import logging

from rankd.aio import keep_task
from rankd.services.rebuild import Rebuilder

logger = logging.getLogger("rankd.runtime")

MAX_HEALS = 64  # pending rebuilds after run-id conflicts (each a few periods)


class Heals:
    """Rebuilds asked for by the log consumer, each once its submitters have surely written
    to Redis (``wait_s``: the consumer's mark wait, plus a margin). Rare; at most MAX_HEALS
    pending, past that a warning says to run `rankd rebuild`."""

    def __init__(self, rebuilder: Rebuilder, wait_s: float) -> None:
        self.rebuilder = rebuilder
        self.wait_s = wait_s
        self.tasks: set[asyncio.Task[None]] = set()

    def ask(self, periods: list[tuple[str, str, str]]) -> None:
        """Rebuild these (board, window, period)s from PostgreSQL, soon."""
        if len(self.tasks) >= MAX_HEALS:
            logger.warning("run-id conflicts: too many heals pending; run `rankd rebuild`")
            return

        async def later() -> None:
            await asyncio.sleep(self.wait_s + 1.0)
            for board, window, period in periods:
                try:
                    await self.rebuilder.rebuild(board=board, window=window, period=period)
                except Exception as exc:
                    logger.warning("heal of %s %s %s: %r", board, window, period, exc)

        keep_task(self.tasks, later(), name="run-id-conflict-heal")
