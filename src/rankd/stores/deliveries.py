"""The webhook deliveries table (migrations/017): created with a freeze, claimed under a
lease, finished, listed. services/webhooks.py decides what to send and when."""

from __future__ import annotations

from dataclasses import dataclass

from rankd.stores.postgres import Conn, PostgresStore


@dataclass(frozen=True, slots=True)
class Due:
    """A delivery claimed for one attempt."""

    delivery_id: str
    event: str
    url: str
    body: bytes
    attempts: int  # this attempt included
    created_ms: int
    leased_until_ms: int


@dataclass(frozen=True, slots=True)
class Delivery:
    """One row of the delivery log."""

    delivery_id: str
    event: str
    url: str
    status: str
    attempts: int
    created_ms: int
    next_ms: int
    last_status: int | None
    last_error: str | None
    done_ms: int | None


async def create(
    conn: Conn,
    delivery_id: str,
    board_id: str,
    generation: int,
    event: str,
    url: str,
    body: bytes,
    now_ms: int,
) -> bool:
    """Record a delivery due now, unless one with this id exists (its body stays: the
    receiver never gets two bodies for one delivery). In the caller's transaction."""
    cur = await conn.execute(
        "INSERT INTO deliveries (delivery_id, board_id, generation, event, url, body,"
        " created_ms, next_ms) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (delivery_id) DO NOTHING RETURNING 1",
        (delivery_id, board_id, generation, event, url, body, now_ms, now_ms),
    )
    return await cur.fetchone() is not None


async def claim(pg: PostgresStore, now_ms: int, lease_ms: int, limit: int) -> list[Due]:
    """Up to ``limit`` due deliveries, leased to this caller until ``now_ms + lease_ms``:
    another instance skips them meanwhile (SKIP LOCKED, then the lease), so one attempt of a
    delivery is under way at a time."""
    until = now_ms + lease_ms
    async with pg.connection() as conn:
        cur = await conn.execute(
            "UPDATE deliveries SET leased_until_ms = %(until)s, attempts = attempts + 1"
            " WHERE delivery_id IN (SELECT delivery_id FROM deliveries"
            "  WHERE status = 'pending' AND next_ms <= %(now)s AND leased_until_ms <= %(now)s"
            "  ORDER BY next_ms LIMIT %(n)s FOR UPDATE SKIP LOCKED)"
            " RETURNING delivery_id, event, url, body, attempts, created_ms",
            {"until": until, "now": now_ms, "n": limit},
        )
        return [
            Due(str(r[0]), str(r[1]), str(r[2]), bytes(r[3]), int(r[4]), int(r[5]), until)
            for r in await cur.fetchall()
        ]


async def finish(
    pg: PostgresStore,
    due: Due,
    *,
    status: str,
    next_ms: int,
    last_status: int | None,
    last_error: str | None,
    now_ms: int,
) -> None:
    """Record an attempt's outcome (``status`` pending: try again at ``next_ms``), if the
    lease is still this attempt's. A finished delivery keeps no body."""
    done = status != "pending"
    async with pg.connection() as conn:
        await conn.execute(
            "UPDATE deliveries SET status = %(status)s, next_ms = %(next)s,"
            " leased_until_ms = 0, last_status = %(code)s, last_error = %(error)s,"
            " done_ms = CASE WHEN %(done)s THEN %(now)s END,"
            " body = CASE WHEN %(done)s THEN NULL ELSE body END"
            " WHERE delivery_id = %(id)s AND leased_until_ms = %(until)s",
            {
                "status": status,
                "next": next_ms,
                "code": last_status,
                "error": None if last_error is None else last_error[:500],
                "done": done,
                "now": now_ms,
                "id": due.delivery_id,
                "until": due.leased_until_ms,
            },
        )


async def listed(pg: PostgresStore, board_id: str, limit: int) -> list[Delivery]:
    """A board's deliveries, newest first."""
    async with pg.connection() as conn:
        cur = await conn.execute(
            "SELECT delivery_id, event, url, status, attempts, created_ms, next_ms,"
            " last_status, last_error, done_ms FROM deliveries WHERE board_id = %s"
            " ORDER BY created_ms DESC, delivery_id LIMIT %s",
            (board_id, limit),
        )
        return [Delivery(*row) for row in await cur.fetchall()]


async def pending(pg: PostgresStore) -> int:
    """How many deliveries wait for a 2xx."""
    async with pg.connection() as conn:
        cur = await conn.execute("SELECT count(*) FROM deliveries WHERE status = 'pending'")
        row = await cur.fetchone()
    return 0 if row is None else int(row[0])
