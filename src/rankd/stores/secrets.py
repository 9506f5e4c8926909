"""Secrets the service makes for itself (migration 012): random at first, then shared by
every instance through PostgreSQL, so any instance verifies what another signed."""

from __future__ import annotations

import secrets

from rankd.stores.postgres import PostgresStore

SECRET_BYTES = 32


async def service_secret(pg: PostgresStore, name: str) -> bytes:
    """The secret ``name``, made now if no instance has made it yet."""
    async with pg.connection() as conn:
        await conn.execute(
            "INSERT INTO service_secrets (name, secret) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (name, secrets.token_bytes(SECRET_BYTES)),
        )
        cursor = await conn.execute("SELECT secret FROM service_secrets WHERE name = %s", (name,))
        row = await cursor.fetchone()
    assert row is not None
    return bytes(row[0])
