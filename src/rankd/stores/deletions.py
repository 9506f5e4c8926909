"""PostgreSQL's side of deleting a board and erasing a player (migrations/009_deletions.sql).

The log keeps every run ever sent, so what is deleted here is also recorded: the deleted
board's generation (``deleted_boards``) and the erased player's log position
(``erasures``). The log consumer and every replay ask these before applying a batch (inside
the batch's transaction, see services/applier.py), so no replay brings either back.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import orjson

from rankd.periods import PeriodRef
from rankd.runs import decode_batch, encode_message
from rankd.stores.postgres import Conn, PostgresStore


async def current_generations(
    conn: Conn, board_ids: Collection[str]
) -> dict[str, tuple[int, int | None, str]]:
    """For each board that exists now (a deleted one is absent): its generation, when an
    earlier incarnation of its id was last deleted (ms; None: never), and where its
    standings are written now (BoardConfig.layout_key: a resharding moves it)."""
    cur = await conn.execute(
        "SELECT b.board_id, b.generation, d.deleted_ms, concat_ws('/', b.config->>'shards',"
        " coalesce(b.config->>'shard_base', '0'), coalesce(b.config->'reshard'->>'phase', ''),"
        " coalesce(b.config->'reshard'->>'other_shards', ''),"
        " coalesce(b.config->'reshard'->>'other_base', '')) FROM boards b"
        " LEFT JOIN deleted_boards d ON d.board_id = b.board_id WHERE b.board_id = ANY(%s)",
        (list(board_ids),),
    )
    return {
        r[0]: (int(r[1]), None if r[2] is None else int(r[2]), str(r[3]))
        for r in await cur.fetchall()
    }


async def deleted_generation(pg: PostgresStore, board_id: str) -> int | None:
    """The newest deleted generation of a board id, or None if none was ever deleted."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT generation FROM deleted_boards WHERE board_id = %s", (board_id,)
        )
        row = await cur.fetchone()
    return None if row is None else int(row[0])


async def erased_through(conn: Conn, player_ids: Collection[str], first_seq: int) -> dict[str, int]:
    """For each erased player among ``player_ids`` whose erasure reaches log sequence
    ``first_seq`` or later: the last log sequence whose runs of theirs are erased (runs
    logged later are a new player's). A caught-up consumer's batches start past every
    erasure, so this is one index probe for them, whatever the batch holds."""
    if not player_ids:
        return {}
    cur = await conn.execute(
        "SELECT EXISTS (SELECT 1 FROM erasures WHERE log_seq >= %s)", (first_seq,)
    )
    row = await cur.fetchone()
    if not (row and row[0]):
        return {}
    cur = await conn.execute(
        "SELECT player_id, log_seq FROM erasures WHERE player_id = ANY(%s)", (list(player_ids),)
    )
    return {r[0]: int(r[1]) for r in await cur.fetchall()}


async def delete_board(conn: Conn, board_id: str, generation: int, now_ms: int) -> None:
    """Remove a board and everything PostgreSQL holds of it, and record its generation as
    deleted. Run inside a transaction holding the apply lock exclusively."""
    await conn.execute(
        "INSERT INTO deleted_boards (board_id, generation, deleted_ms) VALUES (%s, %s, %s)"
        " ON CONFLICT (board_id) DO UPDATE SET"
        " generation = GREATEST(deleted_boards.generation, EXCLUDED.generation),"
        " deleted_ms = EXCLUDED.deleted_ms",
        (board_id, generation, now_ms),
    )
    await conn.execute(
        "DELETE FROM archive_entries WHERE archive_id IN"
        " (SELECT archive_id FROM period_archives WHERE board_id = %s)",
        (board_id,),
    )
    for table in (
        "period_archives",
        "player_best",
        "sum_runs",
        "periods_seen",
        "holds",
        "run_fingerprints",
        "entry_removals",
        "period_closes",
        "deliveries",
        "tournament_entrants",
        "tournament_tries",
        "rolling_days",
        "rolling_state",
        "league_members",
        "league_waiting",
        "league_tiers",
        "league_history",
        "league_moves",
    ):
        await conn.execute(f"DELETE FROM {table} WHERE board_id = %s", (board_id,))
    await conn.execute("DELETE FROM boards WHERE board_id = %s", (board_id,))


async def lock_board(conn: Conn, board_id: str) -> int | None:
    """The board's generation, its row locked until the transaction ends (None: no board)."""
    cur = await conn.execute(
        "SELECT generation FROM boards WHERE board_id = %s FOR UPDATE", (board_id,)
    )
    row = await cur.fetchone()
    return None if row is None else int(row[0])


async def _redact_deliveries(conn: Conn, player_id: str) -> None:
    """Webhook bodies still waiting to be delivered lose the player's entry: an erasure
    comes before "every attempt sends the same bytes" (services/webhooks.py)."""
    cur = await conn.execute(
        "SELECT delivery_id, body FROM deliveries WHERE status = 'pending'"
        " AND body IS NOT NULL AND position(%s::bytea in body) > 0",
        (orjson.dumps(player_id),),
    )
    for delivery_id, body in await cur.fetchall():
        content = orjson.loads(bytes(body))
        kept = [e for e in content["entries"] if e.get("player_id") != player_id]
        if len(kept) != len(content["entries"]):
            content["entries"] = kept
            await conn.execute(
                "UPDATE deliveries SET body = %s WHERE delivery_id = %s",
                (orjson.dumps(content), delivery_id),
            )


async def erase_player(conn: Conn, player_id: str, log_seq: int, now_ms: int) -> set[PeriodRef]:
    """Record the erasure and remove everything PostgreSQL holds of the player: entries,
    counted runs, holds, profile, ban, archived entries (ranks behind them close up) and
    their runs in parked log messages. Returns the board periods (and segments) where they
    had entries or holds. Run inside a transaction holding the apply lock exclusively."""
    await conn.execute(
        "INSERT INTO erasures (player_id, log_seq, erased_ms) VALUES (%s, %s, %s)"
        " ON CONFLICT (player_id) DO UPDATE SET"
        " log_seq = GREATEST(erasures.log_seq, EXCLUDED.log_seq),"
        " erased_ms = EXCLUDED.erased_ms, scrubbed_ms = NULL",
        (player_id, log_seq, now_ms),
    )
    cur = await conn.execute(
        "DELETE FROM player_best WHERE player_id = %s RETURNING board_id, win, period, segment",
        (player_id,),
    )
    refs = {PeriodRef(*r) for r in await cur.fetchall()}
    await conn.execute("DELETE FROM rolling_days WHERE player_id = %s", (player_id,))
    cur = await conn.execute(
        "DELETE FROM holds WHERE player_id = %s RETURNING board_id, win, period, segments",
        (player_id,),
    )
    for board_id, win, period, segments in await cur.fetchall():
        for segment in ("", *segments):
            refs.add(PeriodRef(board_id, win, period, segment))
    await conn.execute("DELETE FROM sum_runs WHERE player_id = %s", (player_id,))
    await _redact_deliveries(conn, player_id)
    for table in ("tournament_entrants", "tournament_tries"):  # their occurrences' admission
        cur = await conn.execute(
            f"DELETE FROM {table} WHERE player_id = %s RETURNING board_id, period", (player_id,)
        )
        refs.update(PeriodRef(b, "scheduled", p) for b, p in await cur.fetchall())
    await conn.execute("DELETE FROM players WHERE player_id = %s", (player_id,))
    # unbanned rather than deleted: every instance's ban list follows rows by their seq
    await conn.execute(
        "UPDATE bans SET banned = false, seq = nextval('ban_seq'), changed_ms = %s"
        " WHERE player_id = %s AND banned",
        (now_ms, player_id),
    )
    await _erase_archived(conn, player_id)
    await _erase_parked(conn, player_id)
    return refs


async def _erase_archived(conn: Conn, player_id: str) -> None:
    # by (archive_id, player_id), the archive's own index, one archived period at a time
    cur = await conn.execute(
        "DELETE FROM archive_entries WHERE (archive_id, player_id) IN"
        " (SELECT archive_id, %s FROM period_archives) RETURNING archive_id, rank",
        (player_id,),
    )
    for archive_id, rank in await cur.fetchall():
        await close_up(conn, archive_id, rank)


async def close_up(conn: Conn, archive_id: int, rank: int) -> None:
    """The archived ranks behind a removed one move up one, and the period counts one less."""
    # ranks are the primary key: shift through negatives so no step collides
    await conn.execute(
        "UPDATE archive_entries SET rank = -(rank - 1) WHERE archive_id = %s AND rank > %s",
        (archive_id, rank),
    )
    await conn.execute(
        "UPDATE archive_entries SET rank = -rank WHERE archive_id = %s AND rank < 0",
        (archive_id,),
    )
    await conn.execute(
        "UPDATE period_archives SET entries = entries - 1 WHERE archive_id = %s", (archive_id,)
    )


async def _erase_parked(conn: Conn, player_id: str) -> None:
    """Parked log messages keep their payload: drop the player's runs from them."""
    needle = orjson.dumps(player_id)
    cur = await conn.execute(
        "SELECT stream_seq, payload FROM parked_messages WHERE position(%s IN payload) > 0",
        (needle,),
    )
    for seq, payload in await cur.fetchall():
        try:
            board_id, generation, runs = decode_batch(bytes(payload))
        except ValueError:
            # undecodable: it cannot be told apart, so it cannot be kept
            await conn.execute("DELETE FROM parked_messages WHERE stream_seq = %s", (seq,))
            continue
        kept = [r for r in runs if r.player_id != player_id]
        if len(kept) == len(runs):
            continue
        if kept:
            await conn.execute(
                "UPDATE parked_messages SET payload = %s WHERE stream_seq = %s",
                (encode_message(board_id, kept, generation), seq),
            )
        else:
            await conn.execute("DELETE FROM parked_messages WHERE stream_seq = %s", (seq,))


async def forget_fingerprints(conn: Conn, board_id: str, runs: Sequence[tuple[str, str]]) -> None:
    """Remove the run-id registry's rows of these (run id, player) on a board."""
    async with conn.cursor() as cur:
        await cur.executemany(
            "DELETE FROM run_fingerprints WHERE board_id = %s AND run_id = %s AND player_id = %s",
            [(board_id, run_id, player_id) for run_id, player_id in runs],
        )


async def forget_erased_bans(conn: Conn, before_ms: int) -> int:
    """Delete the ban rows an erasure left unbanned (erase_player keeps them so every
    instance's refresh sees the unban) once they are older than ``before_ms``; how many."""
    cur = await conn.execute(
        "DELETE FROM bans USING erasures WHERE bans.player_id = erasures.player_id"
        " AND NOT bans.banned AND bans.changed_ms < %s",
        (before_ms,),
    )
    return cur.rowcount


async def unscrubbed(conn: Conn) -> dict[str, int]:
    """Erasures whose log copies are not removed yet: player -> last erased log sequence."""
    cur = await conn.execute("SELECT player_id, log_seq FROM erasures WHERE scrubbed_ms IS NULL")
    return {r[0]: int(r[1]) for r in await cur.fetchall()}


async def mark_scrubbed(conn: Conn, done: dict[str, int], now_ms: int) -> None:
    """The log holds no copy of these erasures' runs any more (an erasure made again
    meanwhile, with a later sequence, stays to do)."""
    for player_id, log_seq in done.items():
        await conn.execute(
            "UPDATE erasures SET scrubbed_ms = %s WHERE player_id = %s AND log_seq = %s",
            (now_ms, player_id, log_seq),
        )
