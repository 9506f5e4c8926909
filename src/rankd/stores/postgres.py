"""PostgreSQL: numbered migrations, board configs, player names, and the connections the
durable copy (stores/standings.py) is written and read through.

Failures to reach PostgreSQL leave here as ``Unavailable`` (503: retry), so nothing above
the stores knows the driver.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import AsyncIterator, Iterator
from importlib import resources
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from rankd.aio import keep_task
from rankd.boards import BoardConfig
from rankd.errors import Deadlock, InvalidRequest, Unavailable
from rankd.placement import base_of
from rankd.stores import apply_lock, board_rows
from rankd.stores.apply_lock import APPLY_LOCK

# A connection handed to the durable-copy functions in stores/standings.py.
Conn = AsyncConnection[Any]

# ``prepare=`` for a lookup of many ids by ``= ANY(%s)`` on a table that grows (run
# fingerprints, holds). psycopg prepares a statement after a few runs, and PostgreSQL may
# then keep a generic plan chosen while the table was small: one that scans the board's rows
# and tests each against the whole array (a parameter, so not hashed), rows x ids. The log
# consumer's fingerprint lookup took seconds a batch that way after a few batch submits of
# 30,000 runs on a new board. Planned each time, the array is a constant: an index probe
# per id, or a hashed test.
ANY_IDS_UNPREPARED = False

# PostgreSQL's clock in ms, as SQL: one clock for every instance, whatever their skew.
NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"


@contextlib.contextmanager
def _reachable() -> Iterator[None]:
    """PostgreSQL's errors as the project's: ``Unavailable`` when the server cannot do the
    work now (unreachable, shutting down, deadlock, a missing table or privilege: retrying
    later, or after a fix, can succeed), ``InvalidRequest`` when it refuses the data itself
    (a NUL in text, a value out of range or too large for an index, a broken constraint).
    The log consumer parks a message only for the second kind."""
    try:
        yield
    except (psycopg.errors.ProgramLimitExceeded, psycopg.DataError, psycopg.IntegrityError) as exc:
        raise InvalidRequest(f"a value cannot be stored: {exc}"[:300]) from exc
    except psycopg.errors.DeadlockDetected as exc:
        raise Deadlock("PostgreSQL broke a deadlock; retry") from exc
    except (
        psycopg.OperationalError,
        psycopg.InterfaceError,
        psycopg.ProgrammingError,
        psycopg.InternalError,
        PoolTimeout,
    ) as exc:
        raise Unavailable("PostgreSQL is unavailable right now; retry shortly") from exc


_MIGRATION_NAME = re.compile(r"([0-9]{3})_[a-z0-9_]+\.sql")
# Any constant: serialises migrations when several instances start at once.
_MIGRATION_LOCK = 0x72616E6B64


@contextlib.asynccontextmanager
async def own_connections(url: str, count: int) -> AsyncIterator[list[Conn]]:
    """``count`` connections of their own (not the service's pool, whose connections the
    request paths need meanwhile: a parallel rebuild's readers), closed afterwards."""
    conns: list[Conn] = []
    try:
        with _reachable():
            for _ in range(count):
                conns.append(await AsyncConnection.connect(url, connect_timeout=10))
        yield conns
    finally:
        for conn in conns:
            with contextlib.suppress(Exception):
                await conn.close()


async def table_count(url: str) -> int:
    """How many tables the database at ``url`` holds outside PostgreSQL's own schemas (a
    restore must not mix two copies)."""
    with _reachable():
        async with await AsyncConnection.connect(url) as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_catalog.pg_tables "
                "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
            )
            row = await cur.fetchone()
    return 0 if row is None else int(row[0])


def migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) for every migration file, in order."""
    found = []
    for entry in resources.files("rankd.migrations").iterdir():
        match = _MIGRATION_NAME.fullmatch(entry.name)
        if match:
            found.append((int(match[1]), entry.name, entry.read_text("utf-8")))
    found.sort()
    for (version, name, _), (later, other, _) in itertools.pairwise(found):
        if version == later:  # one would be skipped as applied: never silently
            raise RuntimeError(f"migrations {name} and {other} share version {version}")
    return found


async def migrate(conn: AsyncConnection[Any]) -> list[str]:
    """Apply the migrations not applied yet; returns the names applied now."""
    applied_now: list[str] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version int PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        cur = await conn.execute("SELECT version FROM schema_migrations")
        done = {row[0] for row in await cur.fetchall()}
        for version, name, sql in migrations():
            if version in done:
                continue
            await conn.execute(sql.encode())
            await conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name)
            )
            applied_now.append(name)
    return applied_now


async def _server_start(conn: Conn) -> object:
    cur = await conn.execute("SELECT pg_postmaster_start_time()")
    row = await cur.fetchone()
    return row[0] if row else None


async def _close_quietly(conn: Conn) -> None:
    with contextlib.suppress(Exception):
        await conn.close()


async def _close_after(query: asyncio.Future[Any], conn: Conn) -> None:
    """Close ``conn`` once ``query`` on it has ended, however it ended."""
    with contextlib.suppress(BaseException):
        await query
    await _close_quietly(conn)


class PostgresStore:
    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 10, timeout_s: float = 5.0
    ) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.pool = AsyncConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            open=False,
            timeout=timeout_s,  # no request waits on a dead PostgreSQL for the default 30 s
            kwargs={"autocommit": True},
        )
        # A submit's own PostgreSQL work (a late run's count, a held run's decision) waits on
        # players' locks while holding its connection; a burst of it could take the whole
        # pool from the log consumer and the rest. At most half the pool (at least one).
        self._request_slots = asyncio.Semaphore(max(1, max_size // 2))
        # The health probe's connection, apart from the pool: a pool busy with requests is
        # not PostgreSQL down (it was: /readyz said "postgres: down" under a burst).
        self._probe: Conn | None = None
        self._probe_lock = asyncio.Lock()
        self._started: object = None  # the server's start time as the probe last saw it
        self._closed = False
        self._background: set[asyncio.Task[Any]] = set()  # probes cut short, pool checks
        self.shared_idle_s = apply_lock.SHARED_IDLE_S  # a stalled shared holder's grace

    async def open(self) -> None:
        await self.pool.open(wait=True, timeout=30)
        async with self.pool.connection() as conn:
            await migrate(conn)

    async def close(self) -> None:
        self._closed = True
        probe, self._probe = self._probe, None
        if probe is not None:
            await _close_quietly(probe)
        for task in list(self._background):
            task.cancel()
        await self.pool.close()

    async def ping(self) -> None:
        """Whether PostgreSQL answers, on the probe's own connection. A ping cut short
        (the health watch waits 1 s) returns at once: its query is left to finish (psycopg
        cancels it server-side, which can take seconds) on a connection no longer the
        probe's, closed when it ends. A server that restarted since the last ping has the
        pool's connections checked, as they died with it."""
        async with self._probe_lock:
            with _reachable():
                if self._probe is None or self._probe.closed:
                    probe = await AsyncConnection.connect(
                        self.url, autocommit=True, connect_timeout=2
                    )
                    if self._closed:
                        await _close_quietly(probe)
                        raise Unavailable("PostgreSQL store closed")
                    self._probe = probe
            probe = self._probe
            query = asyncio.ensure_future(_server_start(probe))
            try:
                with _reachable():
                    started = await asyncio.shield(query)
            except BaseException:
                if self._probe is probe:
                    self._probe = None
                keep_task(self._background, _close_after(query, probe))
                raise
        if self._started is not None and started != self._started:
            keep_task(self._background, self.pool.check())
        self._started = started

    @contextlib.asynccontextmanager
    async def request_slot(self) -> AsyncIterator[None]:
        """One of the pool's connections a request may hold (half the pool), waited for as
        long as a pooled connection is; Unavailable past that."""
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._request_slots.acquire()
        except TimeoutError as exc:
            raise Unavailable("PostgreSQL is busy right now; retry shortly") from exc
        try:
            yield
        finally:
            self._request_slots.release()

    @contextlib.asynccontextmanager
    async def connection(self, timeout_s: float | None = None) -> AsyncIterator[Conn]:
        """A pooled connection (autocommit), failures mapped to the project's errors."""
        with _reachable():
            async with self.pool.connection(timeout=timeout_s) as conn:
                yield conn

    @contextlib.asynccontextmanager
    async def apply_lock(
        self,
        *,
        exclusive: bool,
        lock_timeout_s: float | None = None,
        stalled: apply_lock.Stalled = "refuse",
    ) -> AsyncIterator[Conn]:
        """A transaction holding the apply lock: shared by consumer batches, exclusive for a
        rebuild (see APPLY_LOCK). With ``lock_timeout_s`` (a request waiting on it), a lock
        not had by then is Unavailable rather than a wait for a whole rebuild. ``stalled``:
        what a shared holder whose process stalls comes to (stores/apply_lock.py)."""
        lock = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        async with self.connection() as conn, conn.transaction():
            if lock_timeout_s is not None:
                await conn.execute(f"SET LOCAL lock_timeout = '{int(lock_timeout_s * 1000)}ms'")
            if exclusive or stalled == "keep":
                await conn.execute(f"SELECT {lock}(%s)", (APPLY_LOCK,))
                yield conn
                return
            # a stalled shared holder must not hold up everyone (stores/apply_lock.py); its
            # idle timeout set by the lock's own statement, no round trip more
            idle_ms = str(int(self.shared_idle_s * 1000))
            await conn.execute(
                f"SELECT {lock}(%s), {apply_lock.IDLE_TIMEOUT}", (APPLY_LOCK, idle_ms)
            )
            refuse = stalled == "refuse"
            async with apply_lock.cut_off_if_stalled(conn, self.shared_idle_s, refuse=refuse):
                yield conn

    @contextlib.asynccontextmanager
    async def lease(self, key: int, *, wait_s: float = 0.0) -> AsyncIterator[Conn | None]:
        """Hold the session advisory lock ``key`` on a connection of its own, or yield None
        if another session holds it (after waiting up to ``wait_s``).

        The lock lives exactly as long as that connection: closed here, or dropped by
        PostgreSQL when its holder dies (TCP keepalives notice a vanished host), and the
        next instance to ask takes over. Work done on the yielded connection can only
        commit while the lease is held.
        """
        with _reachable():
            conn = await AsyncConnection.connect(
                self.url,
                autocommit=True,
                connect_timeout=5,
                keepalives=1,
                keepalives_idle=10,
                keepalives_interval=5,
                keepalives_count=3,
            )
        try:
            with _reachable():
                if wait_s > 0:
                    await conn.execute(f"SET lock_timeout = {int(wait_s * 1000)}")
                    try:
                        await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                        held = True
                    except psycopg.errors.LockNotAvailable:
                        held = False
                    await conn.execute("RESET lock_timeout")
                else:
                    cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
                    row = await cur.fetchone()
                    held = bool(row and row[0])
            yield conn if held else None
        finally:
            await conn.close()  # ends the session, which releases the lock

    # boards

    async def get_board(self, board_id: str, timeout_s: float | None = None) -> BoardConfig | None:
        async with self.connection(timeout_s) as conn:
            cur = await conn.execute(
                f"SELECT config, created_at, generation, {board_rows.CLOSES} FROM boards"
                " WHERE board_id = %s",
                (board_id,),
            )
            row = await cur.fetchone()
        return None if row is None else board_rows.config_of(board_id, row)

    async def list_boards(self) -> list[BoardConfig]:
        async with self.connection() as conn:
            cur = await conn.execute(
                f"SELECT board_id, config, created_at, generation, {board_rows.CLOSES} FROM boards"
                " ORDER BY board_id"
            )
            rows = await cur.fetchall()
        return [board_rows.config_of(r[0], r[1:]) for r in rows]

    async def put_board(
        self, config: BoardConfig, *, layout: BoardConfig | None = None
    ) -> tuple[BoardConfig, bool] | None:
        """Upsert; returns the stored config (with created_at) and whether it was created.
        An update keeps the stored layout and resharding state, unless ``layout`` (the
        config as read before) is given: then ``config``'s are written, only if the row
        still has ``layout``'s and no move under way (else None: changed meanwhile)."""
        served = config.shards if layout is None else layout.shards
        async with self.connection() as conn:
            cur = await conn.execute(
                board_rows.PUT,
                {
                    "id": config.board_id,
                    "config": Jsonb(config.stored()),
                    "layout": layout is not None,
                    "shards": int(served),
                    "base": base_of(served),
                },
            )
            row = await cur.fetchone()
        if row is None:
            return None
        stored = board_rows.config_of(config.board_id, (row[0], row[1], row[3], row[4]))
        return stored, bool(row[2])

    async def board_has_periods(self, board_id: str) -> bool:
        async with self.connection() as conn:
            cur = await conn.execute(
                "SELECT EXISTS (SELECT 1 FROM periods_seen WHERE board_id = %s)", (board_id,)
            )
            row = await cur.fetchone()
        return bool(row and row[0])

    # players

    async def set_profile(
        self, player_id: str, name: str | None, segments: dict[str, str] | None
    ) -> tuple[str | None, dict[str, str]]:
        """Set the given parts of a profile (None: keep); returns the stored profile."""
        async with self.connection() as conn:
            cur = await conn.execute(
                "INSERT INTO players (player_id, name, segments)"
                " VALUES (%(p)s, %(n)s, COALESCE(%(s)s, '{}'::jsonb))"
                " ON CONFLICT (player_id) DO UPDATE SET"
                "  name = COALESCE(%(n)s, players.name),"
                "  segments = COALESCE(%(s)s, players.segments), updated_at = now()"
                " RETURNING name, segments",
                {"p": player_id, "n": name, "s": None if segments is None else Jsonb(segments)},
            )
            row = await cur.fetchone()
        assert row is not None
        return row[0], dict(row[1])

    async def get_profile(self, player_id: str) -> tuple[str | None, dict[str, str]]:
        """(name, segments) of a player; a player never seen has neither."""
        async with self.connection() as conn:
            cur = await conn.execute(
                "SELECT name, segments FROM players WHERE player_id = %s", (player_id,)
            )
            row = await cur.fetchone()
        return (None, {}) if row is None else (row[0], dict(row[1]))
