"""The run-id registry's durable rows (stores/fingerprints.py): one consumer batch records
each of its boards in one transaction, and each board keeps its own rows."""

from __future__ import annotations

import uuid

import psycopg

from rankd.runs import Run
from rankd.stores import fingerprints
from tests.support.common import Urls


async def test_boards_recorded_in_one_transaction_keep_their_own_rows(
    urls: Urls, migrated: None
) -> None:
    boards = [f"fp-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    now = 1_800_000_000_000
    async with await psycopg.AsyncConnection.connect(urls.postgres) as conn:
        async with conn.transaction():
            for k, board in enumerate(boards):
                runs = [Run(f"r{i}", f"{board}-p{i}", 10 * k + i, now, now) for i in range(3)]
                assert await fingerprints.record(conn, board, runs, 60_000) == [False] * 3
            # a second look in the same transaction: recorded, and no conflict
            again = [Run("r1", f"{boards[1]}-p1", 11, now, now)]
            assert await fingerprints.record(conn, boards[1], again, 60_000) == [False]
        for k, board in enumerate(boards):
            cur = await conn.execute(
                "SELECT run_id, player_id, score FROM run_fingerprints WHERE board_id = %s"
                " ORDER BY run_id",
                (board,),
            )
            assert await cur.fetchall() == [
                (f"r{i}", f"{board}-p{i}", 10 * k + i) for i in range(3)
            ]
        await conn.execute("DELETE FROM run_fingerprints WHERE board_id = ANY(%s)", (boards,))
        await conn.commit()
