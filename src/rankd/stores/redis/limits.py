"""Rate limits: one GCRA script call per check (rate_limit.lua)."""

from __future__ import annotations

from rankd.stores.redis import keys
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.scripts import RATE_LIMIT


class RateLimits:
    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn

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
        with reachable():
            allowed, wait_us = await self.conn.script(
                (RATE_LIMIT, (keys.rate_limit(identity),), args)
            )
        return 0 if allowed else max(int(wait_us), 1)
