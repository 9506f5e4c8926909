"""PostgreSQL's ``run_fingerprints``: the first logged content of each run id per board
(migrations/009_run_fingerprints.sql; services/run_ids.py says how it is used)."""

from __future__ import annotations

from collections.abc import Sequence

from rankd.runs import Run
from rankd.stores.postgres import ANY_IDS_UNPREPARED, Conn


async def record(conn: Conn, board_id: str, runs: Sequence[Run], memory_ms: int) -> list[bool]:
    """Record the first content of each run id of ``runs`` (in log order, in the caller's
    transaction); per run, whether it conflicts with the content recorded before it: another
    player or score, first received less than ``memory_ms`` apart. A recorded run that far
    apart is forgotten: the later send becomes the recorded one (Redis forgot it too)."""
    if not runs:
        return []
    ids = sorted({r.run_id for r in runs})
    # FOR UPDATE in id order: concurrent consumers of the same ids wait, never deadlock
    cur = await conn.execute(
        "SELECT run_id, player_id, score, ended_ms, received_ms FROM run_fingerprints"
        " WHERE board_id = %s AND run_id = ANY(%s) ORDER BY run_id FOR UPDATE",
        (board_id, ids),
        prepare=ANY_IDS_UNPREPARED,
    )
    known: dict[str, tuple[str, int, int, int]] = {
        r[0]: (r[1], int(r[2]), int(r[3]), int(r[4])) for r in await cur.fetchall()
    }
    changed: dict[str, tuple[str, int, int, int]] = {}
    conflicts: list[bool] = []
    for run in runs:
        held = known.get(run.run_id)
        if held is None or abs(run.received_at_ms - held[3]) >= memory_ms:
            held = (run.player_id, run.score, run.ended_at_ms, run.received_at_ms)
            known[run.run_id] = changed[run.run_id] = held
        conflicts.append(held[0] != run.player_id or held[1] != run.score)
    if changed:
        # COPY, not five arrays: psycopg dumps an array element by element in Python, which
        # the consumer's profile showed at 4% of its time (bench/write_behind.py)
        await conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS fingerprints_in (run_id text, player_id text,"
            " score bigint, ended_ms bigint, received_ms bigint) ON COMMIT DELETE ROWS"
        )
        # emptied first: a consumer batch records each of its boards in one transaction
        await conn.execute("TRUNCATE fingerprints_in")
        async with conn.cursor().copy("COPY fingerprints_in FROM STDIN") as copy:
            for run_id, held in changed.items():
                await copy.write_row((run_id, *held))
        # in id order: concurrent consumers lock the same rows in the same order
        await conn.execute(
            "INSERT INTO run_fingerprints"
            " (board_id, run_id, player_id, score, ended_ms, received_ms)"
            ' SELECT %s, * FROM fingerprints_in ORDER BY run_id COLLATE "C"'
            " ON CONFLICT (board_id, run_id) DO UPDATE SET player_id = EXCLUDED.player_id,"
            "  score = EXCLUDED.score, ended_ms = EXCLUDED.ended_ms,"
            "  received_ms = EXCLUDED.received_ms",
            (board_id,),
        )
    return conflicts


async def since(conn: Conn, board_id: str, since_ms: int) -> list[tuple[str, str, int, int, int]]:
    """(run_id, player, score, ended ms, received ms) of the board's runs first received
    at ``since_ms`` or later."""
    cur = await conn.execute(
        "SELECT run_id, player_id, score, ended_ms, received_ms FROM run_fingerprints"
        " WHERE board_id = %s AND received_ms >= %s",
        (board_id, since_ms),
    )
    return [(r[0], r[1], int(r[2]), int(r[3]), int(r[4])) for r in await cur.fetchall()]


async def forget_before(conn: Conn, board_id: str, before_ms: int) -> int:
    """Delete the board's rows first received before ``before_ms``; how many went."""
    cur = await conn.execute(
        "DELETE FROM run_fingerprints WHERE board_id = %s AND received_ms < %s",
        (board_id, before_ms),
    )
    return cur.rowcount
