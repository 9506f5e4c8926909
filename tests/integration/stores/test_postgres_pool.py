"""The PostgreSQL store's connections: the health probe's own, and the requests' share."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from rankd.errors import Unavailable
from rankd.stores.postgres import PostgresStore
from tests.support.common import Urls


async def test_the_probe_answers_while_every_pooled_connection_is_taken(
    urls: Urls, migrated: None
) -> None:
    """A pool busy with requests is not PostgreSQL down: the ping (the health watch's and
    /readyz's) runs on a connection of its own."""
    pg = PostgresStore(urls.postgres, min_size=2, max_size=2, timeout_s=0.5)
    await pg.open()
    try:
        async with contextlib.AsyncExitStack() as taken:
            for _ in range(2):
                await taken.enter_async_context(pg.connection())
            await asyncio.wait_for(pg.ping(), 1.0)
        # a ping cut short gives up its connection (its query may still be running: it is
        # closed when that ends); the next ping makes another and answers
        first = pg._probe
        assert first is not None
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(pg.ping(), 0.000_001)
        assert pg._probe is None
        await asyncio.wait_for(pg.ping(), 1.0)
        assert pg._probe is not None and pg._probe is not first
        for _ in range(50):  # the given-up connection is closed once its query ends
            if first.closed:
                break
            await asyncio.sleep(0.02)
        assert first.closed
    finally:
        await pg.close()


async def test_requests_hold_at_most_half_the_pool(urls: Urls, migrated: None) -> None:
    """The slots a request's own PostgreSQL work takes: half the pool; one more waits as
    long as a pooled connection would, then is Unavailable (503, retry)."""
    pg = PostgresStore(urls.postgres, min_size=1, max_size=4, timeout_s=0.3)
    await pg.open()
    try:
        async with pg.request_slot(), pg.request_slot():
            with pytest.raises(Unavailable):
                async with pg.request_slot():
                    pass
            async with pg.connection() as conn:  # the other half: free
                await conn.execute("SELECT 1")
        async with pg.request_slot():  # released
            pass
    finally:
        await pg.close()
