"""Change notices: which standings a submit changed, published on one channel for the live
pages (services/live.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

import orjson
from redis.exceptions import RedisError

from rankd.plan import Target
from rankd.stores.redis import keys
from rankd.stores.redis.connection import RedisConn, reachable
from rankd.stores.redis.scripts import Command


def change_notice(board_id: str, plans: Sequence[Sequence[Target]]) -> list[Command]:
    """One PUBLISH naming every standings (window, period, segment) the targets touch, or
    none. It rides at the end of the submit's pipeline: Redis runs it after the scripts,
    so a listener that reads on receipt sees the change."""
    touched = {(t.window, t.period.id, t.segment) for p in plans for t in p if t.sendable}
    if not touched:
        return []
    notice = orjson.dumps([board_id, sorted(touched)])
    return [("PUBLISH", (keys.CHANGES, notice))]


# A notice that every standings may have changed ([EVERYTHING, EVERYTHING]): a ban, an
# unban, a hold decision, an erasure or a board deletion moved entries without a submit.
EVERYTHING = "*"

Notice = tuple[str, list[tuple[str, str, str]] | None]


def parse_notice(raw: Any) -> Notice | None:
    """A change notice's board and standings (None: every board's, every standings), or
    None for anything malformed."""
    try:
        board_id, touched = orjson.loads(raw)
        if board_id == EVERYTHING and touched == EVERYTHING:
            return EVERYTHING, None
        parsed = [(str(w), str(p), str(s)) for w, p, s in touched]
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None
    return (board_id, parsed) if isinstance(board_id, str) else None


class Notices:
    """The change notices' channel."""

    def __init__(self, conn: RedisConn) -> None:
        self.conn = conn

    async def announce_everything(self) -> None:
        """Tell every instance's live streams to read again (see EVERYTHING)."""
        with reachable():
            await self.conn.client.publish(keys.CHANGES, orjson.dumps([EVERYTHING, EVERYTHING]))

    async def changes(
        self, on_subscribed: Callable[[], None] = lambda: None
    ) -> AsyncGenerator[Notice, None]:
        """Change notices as they are published: (board, [(window, period, segment)]).

        Holds one pooled connection while iterated; ``on_subscribed`` runs once notices
        flow. Ends with Unavailable when Redis goes away (the caller subscribes again,
        knowing notices may have been missed meanwhile)."""
        pubsub = self.conn.client.pubsub(ignore_subscribe_messages=True)
        try:
            with reachable():
                await pubsub.subscribe(keys.CHANGES)
                on_subscribed()
                async for message in pubsub.listen():
                    notice = parse_notice(message.get("data"))
                    if notice is not None:
                        yield notice
        finally:
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()
