"""Lookups of many ids by ``= ANY(...)`` are planned for the ids at hand, never prepared.

A prepared statement may keep a generic plan chosen while its table was small, one that
tests every row of a board against the whole id array: rows x ids. The log consumer's
fingerprint lookup took seconds a batch that way (stores/postgres.py, ANY_IDS_UNPREPARED).
psycopg prepares a statement from its fifth run on a connection; these run ten times.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg import AsyncConnection

from rankd.runs import Run
from rankd.stores import fingerprints
from rankd.stores import moderation as moderation_db
from tests.support.common import Urls

RUNS = 10


async def prepared_any_lookups(conn: AsyncConnection[Any]) -> list[str]:
    cur = await conn.execute("SELECT statement FROM pg_prepared_statements")
    return [str(s) for (s,) in await cur.fetchall() if "ANY(" in str(s)]


async def test_many_id_lookups_are_never_prepared(urls: Urls, migrated: None) -> None:
    board = f"any-{uuid.uuid4().hex[:8]}"
    async with await psycopg.AsyncConnection.connect(urls.postgres) as conn:
        for i in range(RUNS):
            runs = [Run(f"r{i}-{k}", f"p{k}", k, 1_000 + i, 2_000 + i) for k in range(20)]
            async with conn.transaction():
                conflicts = await fingerprints.record(conn, board, runs, memory_ms=60_000)
                await moderation_db.held_windows(conn, board, [r.run_id for r in runs])
                await moderation_db.decisions(conn, board, [r.run_id for r in runs])
            assert conflicts == [False] * len(runs)
        # the statements ran (the runs are recorded), and none of them was prepared
        cur = await conn.execute(
            "SELECT count(*) FROM run_fingerprints WHERE board_id = %s", (board,)
        )
        assert (await cur.fetchone()) == (RUNS * 20,)
        assert await prepared_any_lookups(conn) == []
        # the check can fail: the same lookup through psycopg's default is prepared
        for _ in range(RUNS):
            await conn.execute(
                "SELECT run_id FROM run_fingerprints WHERE board_id = %s AND run_id = ANY(%s)",
                (board, ["r0-0"]),
            )
        assert len(await prepared_any_lookups(conn)) == 1
        await conn.execute("DELETE FROM run_fingerprints WHERE board_id = %s", (board,))
        await conn.commit()
