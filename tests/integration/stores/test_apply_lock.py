"""A shared holder of the apply lock (stores/apply_lock.py): kept while its process runs,
however long its work keeps the connection idle, and never taken as committed once
PostgreSQL has ended its session (psycopg skips the COMMIT of a broken connection
silently; a consumer batch would then ack runs PostgreSQL never kept)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from psycopg import AsyncConnection

from rankd.errors import Unavailable
from rankd.stores.postgres import PostgresStore
from tests.support.common import Urls

# beats every fifth of it: a loaded machine's event-loop pause must stay well under it
GRACE_S = 1.5


@pytest.fixture
async def store(urls: Urls) -> AsyncIterator[PostgresStore]:
    pg = PostgresStore(urls.postgres, min_size=1, max_size=2)
    pg.shared_idle_s = GRACE_S
    await pg.open()
    try:
        yield pg
    finally:
        await pg.close()


@pytest.fixture
async def table(pg: AsyncConnection[Any]) -> AsyncIterator[str]:
    name = f"lock_probe_{uuid.uuid4().hex[:8]}"
    await pg.execute(f"CREATE TABLE {name} (n int)")
    try:
        yield name
    finally:
        await pg.execute(f"DROP TABLE {name}")


async def rows(pg: AsyncConnection[Any], table: str) -> int:
    cur = await pg.execute(f"SELECT count(*) FROM {table}")
    row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def test_a_live_holder_idle_for_many_graces_keeps_the_lock_and_commits(
    store: PostgresStore, pg: AsyncConnection[Any], table: str
) -> None:
    async with store.apply_lock(exclusive=False) as conn:
        await conn.execute(f"INSERT INTO {table} VALUES (1)")
        await asyncio.sleep(3 * GRACE_S)  # Redis work, say: no statement meanwhile
    assert await rows(pg, table) == 1


async def test_a_holder_whose_session_ended_is_told_and_commits_nothing(
    store: PostgresStore, pg: AsyncConnection[Any], table: str
) -> None:
    with pytest.raises(Unavailable):
        async with store.apply_lock(exclusive=False) as conn:
            await conn.execute(f"INSERT INTO {table} VALUES (1)")
            cur = await conn.execute("SELECT pg_backend_pid()")
            row = await cur.fetchone()
            assert row is not None
            # what PostgreSQL does to a stalled holder's session, done from outside
            await pg.execute("SELECT pg_terminate_backend(%s)", (row[0],))
            await asyncio.sleep(3 * GRACE_S)  # the holder's work goes on, unaware
    assert await rows(pg, table) == 0
