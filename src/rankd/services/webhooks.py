"""Webhooks: a board's ``hooks.period_closed`` told of each period it freezes (CONTRACT v1.3).

When the season job freezes a board period's standings (the global ones; services/seasons.py)
it records, in the same transaction, one delivery whose body is fixed then: the period's
total and its top 100 entries. So a period is announced exactly once whichever instance
froze it, and every attempt sends the same bytes; ``Rankd-Delivery`` (``board:window:
period``) lets the receiver drop repeats, ``Rankd-Signature`` (HMAC-SHA256 of the body with
RANKD_WEBHOOK_SECRET) proves the sender.

Every instance runs the sender; each claims due deliveries under a lease in PostgreSQL
(stores/deliveries.py), so one attempt of a delivery is under way at a time. A non-2xx
answer, a timeout or a refused connection is retried with backoff (5 s doubling to an hour)
until a 2xx, for three days; then the delivery is marked failed. Every attempt's outcome is
in the delivery log (GET /v1/boards/{id}/deliveries) and ``rankd_webhook_attempts_total``.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson

from rankd import metrics
from rankd.aio import wait_or_stop
from rankd.boards import BoardConfig
from rankd.formats import format_time
from rankd.periods import PeriodRef
from rankd.schedules import SCHEDULED
from rankd.stores import deliveries
from rankd.stores.postgres import Conn, PostgresStore

logger = logging.getLogger("rankd.webhooks")

PERIOD_CLOSED = "period_closed"
TOP_ENTRIES = 100
FIRST_RETRY_MS = 5_000
LONGEST_WAIT_MS = 3_600_000
GIVE_UP_MS = 3 * 86_400_000  # the contract asks for at least 24 hours of retries
CLAIM = 16  # deliveries one pass claims (and sends at once)


def delivery_id(ref: PeriodRef) -> str:
    return f"{ref.board}:{ref.window}:{ref.period}"


def sign(secret: str, body: bytes) -> str:
    """The ``Rankd-Signature`` header's value for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def retry_in_ms(attempts: int) -> int:
    """How long after a failed attempt (the ``attempts``-th) the next is due."""
    return int(min(FIRST_RETRY_MS * 2 ** min(attempts - 1, 20), LONGEST_WAIT_MS))


async def record_period_closed(
    conn: Conn, board: BoardConfig, ref: PeriodRef, archive_id: int, total: int, now_ms: int
) -> None:
    """In the freeze's transaction: the delivery announcing ``ref`` (a board period's global
    standings, just frozen as ``archive_id``), if the board has a hook for it."""
    url = board.hooks.get(PERIOD_CLOSED)
    if url is None or ref.segment:
        return
    cur = await conn.execute(
        "SELECT rank, player_id, score, achieved_ms, name FROM archive_entries"
        " WHERE archive_id = %s AND rank <= %s ORDER BY rank",
        (archive_id, TOP_ENTRIES),
    )
    entries = [
        {
            "rank": int(rank),
            "player_id": player,
            "score": int(score),
            "achieved_at": format_time(int(achieved)),
            "name": name,
        }
        for rank, player, score, achieved, name in await cur.fetchall()
    ]
    body = orjson.dumps(
        {
            "board_id": ref.board,
            "window": ref.window,
            "period": ref.period,
            "total": total,
            "entries": entries,
        }
    )
    await deliveries.create(
        conn, delivery_id(ref), ref.board, board.generation, PERIOD_CLOSED, url, body, now_ms
    )


# how far back a pass looks for occurrences that closed with no run at all
EMPTY_LOOKBACK_MS = 3 * 86_400_000


async def announce_empty_occurrences(
    conn: Conn, board: BoardConfig, now_ms: int, settle_ms: int
) -> int:
    """The season job's part for a scheduled board with a hook: an occurrence that closed
    (within EMPTY_LOOKBACK_MS, and after the board was created) with no run has no standings
    to freeze, and is announced all the same, with a total of 0. Returns how many were
    recorded now (a delivery id is recorded once, so a later pass records nothing)."""
    url = board.hooks.get(PERIOD_CLOSED)
    if url is None or board.schedule is None:
        return 0
    created = int(board.created_at.timestamp() * 1000) if board.created_at else 0
    since = max(now_ms - EMPTY_LOOKBACK_MS, created)
    cur = await conn.execute(
        "SELECT period FROM periods_seen WHERE board_id = %s AND win = %s AND segment = ''",
        (board.board_id, SCHEDULED),
    )
    with_runs = {str(r[0]) for r in await cur.fetchall()}
    recorded = 0
    lookback = since - board.schedule.duration.longest_ms - board.grace_seconds * 1000
    for period in board.schedule.occurrences_between(lookback, now_ms):
        closes = board.closes_at_ms(period)
        if period.id in with_runs or closes is None or closes < since:
            continue
        if closes + settle_ms > now_ms:
            continue
        ref = PeriodRef(board.board_id, SCHEDULED, period.id)
        body = orjson.dumps(
            {"board_id": ref.board, "window": SCHEDULED, "period": period.id, "total": 0,
             "entries": []}
        )  # fmt: skip
        recorded += await deliveries.create(
            conn, delivery_id(ref), ref.board, board.generation, PERIOD_CLOSED, url, body, now_ms
        )
    return recorded


def _clock_ms() -> int:
    return int(time.time() * 1000)


class Webhooks:
    """The sender (see the module docstring)."""

    def __init__(
        self,
        pg: PostgresStore,
        secret: str | None,
        timeout_s: float,
        clock: Callable[[], int] = _clock_ms,
    ) -> None:
        self.pg = pg
        self.secret = secret
        self.timeout_s = timeout_s
        self.clock = clock
        # bounded: at most CLAIM attempts at once, each with its own timeout
        limits = httpx.Limits(max_connections=CLAIM, max_keepalive_connections=4)
        self.http = httpx.AsyncClient(timeout=timeout_s, limits=limits, follow_redirects=False)

    async def close(self) -> None:
        await self.http.aclose()

    async def run_forever(self, interval_s: float, stop: asyncio.Event) -> None:
        while True:
            try:
                sent = await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # PostgreSQL away: try again next time
                logger.warning("webhooks: %s: %s", type(exc).__name__, exc)
                sent = 0
            # a full claim: more may be due, go on at once
            if stop.is_set() or (sent < CLAIM and await wait_or_stop(stop, interval_s)):
                return

    async def run_once(self) -> int:
        """Attempt every delivery due now (up to CLAIM); returns how many were attempted."""
        if self.secret is None:
            return 0
        lease_ms = int(self.timeout_s * 1000) * 3
        due = await deliveries.claim(self.pg, self.clock(), lease_ms, CLAIM)
        await asyncio.gather(*(self._attempt(d) for d in due))
        return len(due)

    async def _attempt(self, due: deliveries.Due) -> None:
        assert self.secret is not None
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "rankd-webhooks",
            "Rankd-Event": due.event,
            "Rankd-Delivery": due.delivery_id,
            "Rankd-Signature": sign(self.secret, due.body),
        }
        code: int | None = None
        error: str | None = None
        try:
            # the answer's body is never read: a receiver cannot make this process buffer
            async with self.http.stream("POST", due.url, content=due.body, headers=headers) as r:
                code = r.status_code
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        now = self.clock()
        outcome: dict[str, Any]
        if code is not None and 200 <= code < 300:
            outcome = {"status": "delivered", "next_ms": now}
            metrics.WEBHOOK_ATTEMPTS.labels("delivered").inc()
        elif now - due.created_ms >= GIVE_UP_MS:
            outcome = {"status": "failed", "next_ms": now}
            metrics.WEBHOOK_ATTEMPTS.labels("gave_up").inc()
            logger.warning("webhook %s: gave up after %d attempts", due.delivery_id, due.attempts)
        else:
            outcome = {"status": "pending", "next_ms": now + retry_in_ms(due.attempts)}
            metrics.WEBHOOK_ATTEMPTS.labels("failed").inc()
        if code is not None and error is None and outcome["status"] != "delivered":
            error = f"answered {code}"
        await deliveries.finish(
            self.pg, due, last_status=code, last_error=error, now_ms=now, **outcome
        )
