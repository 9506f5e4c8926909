"""The one fetch → apply → ack loop over the run log, for the consumer and for replays."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rankd.services.applier import Applier, Outcome
from rankd.stores.runlog import LogMessage, LogSubscription


async def apply_log(
    sub: LogSubscription,
    applier: Applier,
    *,
    batch: int,
    fetch_timeout_s: float,
    until: int | None = None,
    stop: asyncio.Event | None = None,
    on_batch: Callable[[list[LogMessage], Outcome], None] | None = None,
) -> None:
    """Apply what ``sub`` delivers, a batch at a time, acking each batch once applied.

    With ``until`` (a sequence) it returns once that sequence is applied, or when nothing
    more comes within ``fetch_timeout_s`` (messages past the end were removed); without, it
    runs until ``stop`` is set. ``stop`` is checked before every fetch: the NATS client can
    swallow a cancellation that arrives together with a message, so cancelling the task
    alone may not end the loop. A message that can never apply is parked by the applier
    and acked with its batch; a failure that may pass (a store unreachable) propagates
    with the batch unacked, so the log delivers it again.
    """
    seen = 0
    while (until is None or seen < until) and not (stop is not None and stop.is_set()):
        messages = await sub.fetch(batch, fetch_timeout_s)
        if not messages:
            if until is None:
                continue
            return
        outcome = await applier.apply(messages)
        await sub.ack(messages)
        seen = max(seen, *(m.seq for m in messages))
        if on_batch is not None:
            on_batch(messages, outcome)
