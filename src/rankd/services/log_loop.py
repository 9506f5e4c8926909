"""The one fetch → apply → ack loop over the run log, for the consumer and for replays."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from rankd import metrics
from rankd.aio import stop_tasks, wait_or_stop
from rankd.errors import LogUnavailable
from rankd.services.applier import Applier, Outcome
from rankd.stores.runlog import LogMessage, LogSubscription

logger = logging.getLogger("rankd.consumer")


async def apply_log(
    sub: LogSubscription,
    applier: Applier,
    *,
    batch: int,
    fetch_timeout_s: float,
    until: int | None = None,
    stop: asyncio.Event | None = None,
    on_batch: Callable[[list[LogMessage], Outcome], None] | None = None,
    progress_every_s: float | None = None,
    more_to_come: Callable[[int], Awaitable[bool]] | None = None,
    patience_s: float = 60.0,
) -> None:
    """Apply what ``sub`` delivers, a batch at a time, acking each batch once applied.

    With ``until`` (a sequence) it returns once that sequence is applied, or when nothing
    more comes within ``fetch_timeout_s`` and ``more_to_come(last applied)`` says the log
    holds nothing more up to ``until`` (it was removed meanwhile). While it does hold more,
    a slow log (big messages, a loaded three-node stream) is waited for, up to
    ``patience_s`` without a message, then LogUnavailable: a replay never reports itself
    done short of its end. Without ``until``, it
    runs until ``stop`` is set. ``stop`` is checked before every fetch: the NATS client can
    swallow a cancellation that arrives together with a message, so cancelling the task
    alone may not end the loop. A message that can never apply is parked by the applier
    and acked with its batch; a failure that may pass (a store unreachable) propagates
    with the batch unacked, so the log delivers it again. With ``progress_every_s`` the log
    is told that often that a batch still applying is being worked on (see _applying).
    """
    seen = 0
    last_message = time.monotonic()
    while (until is None or seen < until) and not (stop is not None and stop.is_set()):
        messages = await sub.fetch(batch, fetch_timeout_s)
        if not messages:
            if until is None:
                continue
            if more_to_come is None or not await more_to_come(seen):
                return
            if time.monotonic() - last_message > patience_s:
                raise LogUnavailable(
                    f"the log holds messages after {seen} up to {until}, but none came"
                    f" within {patience_s:.0f} s"
                )
            continue
        last_message = time.monotonic()
        if progress_every_s is None:
            outcome = await applier.apply(messages)
        else:
            outcome = await _applying(sub, applier, messages, progress_every_s)
        # a deferred message (its board's period refuses writes for now) is not acked:
        # the log delivers it again after its backoff, while the others go on
        deferred = set(outcome.deferred)
        if deferred:
            metrics.MESSAGES_DEFERRED.inc(len(deferred))
        await sub.ack([m for m in messages if m.seq not in deferred] if deferred else messages)
        seen = max(seen, *(m.seq for m in messages))
        if on_batch is not None:
            on_batch(messages, outcome)


async def _applying(
    sub: LogSubscription, applier: Applier, messages: list[LogMessage], every_s: float
) -> Outcome:
    """``applier.apply(messages)``, telling the log every ``every_s`` that the batch is still
    being worked on. A batch slower than the consumer's ack wait (its first backoff, 2 s by
    default) would otherwise be delivered again meanwhile, to this instance or another:
    applied twice (harmless, but work done twice when the stores are already slow) and one
    delivery of its ``max_deliver`` spent each time. One task per batch, ended with it."""

    done = asyncio.Event()

    async def tell() -> None:
        while not await wait_or_stop(done, every_s):
            try:
                await sub.working(messages)
            except LogUnavailable as exc:  # the ack will fail too, and the batch come again
                logger.debug("log consumer: progress not told: %s", exc)

    teller = asyncio.create_task(tell(), name="log-progress")
    try:
        return await applier.apply(messages)
    finally:
        # the flag as well as the cancel: the NATS client may swallow a cancel that lands
        # mid-publish; the wait is bounded either way
        done.set()
        await stop_tasks([teller], 1.0)
