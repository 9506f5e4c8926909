"""A shared holder of the apply lock that stalls is cut off by PostgreSQL.

PostgreSQL queues lock requests in order: while a rebuild waits for the apply lock
exclusively, every consumer batch that asks for it shared waits behind the rebuild. A
shared holder whose process stalls with the lock (SIGSTOP, a VM or GC pause; its TCP
connection stays up) would so hold up every instance's log consumer for as long as the
stall lasts. Each shared holder therefore sets an idle-in-transaction timeout on its
transaction and, while it lives, runs a statement on the connection every few seconds: a
stalled holder goes quiet, PostgreSQL ends its session (its transaction rolls back, so
its batch is applied again from the log), and the lock passes on.

What a shared holder is, says what a cut-off does to it (``Stalled``):

- ``refuse`` (a consumer batch, a late sum's count): it writes through the lock's
  connection, so its end raises when its session is gone;
- ``barrier`` (a ban sweep): it only orders itself against rebuilds and writes on other
  connections, after the ban is committed (a rebuild's snapshot has it; the second sweep
  moves what a swap dropped); its end says nothing;
- ``keep``: never cut off. The log scrubber publishes a copy of runs it decided under the
  lock, which an erasure taking the lock meanwhile would not cover; a hold decision cut off
  before its commit would let a rebuild snapshot the hold as pending and then drop the
  decision's Redis moves in its swap.

Exclusive holders (rebuilds) are kept too: one that resumed after losing the lock would
swap in a snapshot that misses batches committed meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal

import psycopg
from psycopg import AsyncConnection

# Readers of player_best (rebuild) take this exclusively; appliers share it, so a rebuild's
# snapshot and its RENAME see either all of a consumer batch or none of it
# (PostgresStore.apply_lock).
APPLY_LOCK = 0x72616E6B65

# A shared holder's session ends once idle inside its transaction this long; a live holder
# runs a statement every fifth of it, so only a stalled one goes idle that long.
SHARED_IDLE_S = 15.0
BEATS = 5

Stalled = Literal["refuse", "barrier", "keep"]

# The transaction's idle timeout (its value in ms a parameter), as a term of the statement
# that takes the lock: set in the same round trip.
IDLE_TIMEOUT = "set_config('idle_in_transaction_session_timeout', %s, true)"


@contextlib.asynccontextmanager
async def cut_off_if_stalled(
    conn: AsyncConnection[Any], idle_s: float = SHARED_IDLE_S, *, refuse: bool = True
) -> AsyncIterator[None]:
    """Within ``conn``'s transaction, its idle timeout ``idle_s`` set (IDLE_TIMEOUT): a task
    keeps it busy while this process runs. ``refuse``: the holder's end raises if the
    session is gone."""
    every_s = idle_s / BEATS
    done = asyncio.Event()

    async def beat() -> None:
        while not done.is_set():
            # psycopg's connection lock queues this behind the holder's own statement;
            # it is never cancelled mid-statement (psycopg would cancel it in PostgreSQL
            # and abort the transaction): it ends when ``done`` is set
            await conn.execute("SELECT 1")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), every_s)

    # a timer, not a task, for the common holder (a consumer batch of milliseconds): the
    # beats begin only once it has held the lock for a beat's interval
    beats: list[asyncio.Task[None]] = []
    loop = asyncio.get_running_loop()
    timer = loop.call_later(every_s, lambda: beats.append(loop.create_task(beat())))
    failed: Exception | None = None
    try:
        yield
    finally:
        timer.cancel()
        done.set()
        for task in beats:
            try:
                await task
            except Exception as exc:  # the session ended under the holder
                failed = exc
    # The holder's work ended without an error: it must not be taken as committed if the
    # session is gone. psycopg's transaction block skips the COMMIT of a broken connection
    # without a word, so the caller (a consumer batch about to ack its messages) would
    # think its writes durable.
    if refuse and (failed is not None or conn.broken or conn.closed):
        raise psycopg.OperationalError(
            "the apply lock's session ended while it was held (idle past"
            f" {idle_s:g}s: this process stalled); nothing of it was committed"
        ) from failed


async def turn(conn: AsyncConnection[Any], *, exclusive: bool) -> None:
    """One turn of the apply lock on ``conn`` (autocommit): taken and let go in a single
    statement once every holder it must wait for has let go. A barrier that holds no
    transaction and no pooled connection of its own."""
    lock = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    await conn.execute(f"SELECT {lock}(%s)", (APPLY_LOCK,))
