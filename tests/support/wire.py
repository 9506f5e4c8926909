"""Small helpers the API tests share: wire times, period ids, the error shape, a batch
sent until it is acknowledged."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from tests.support.common import SERVER_H

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def now_ms() -> datetime:
    """Now, truncated to whole milliseconds (what the wire format carries)."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def ago(**delta: float) -> datetime:
    return now_ms() - timedelta(**delta)


def iso(moment: datetime) -> str:
    """RFC 3339 in UTC with milliseconds, as the service writes it."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_ms(millis: int) -> datetime:
    """The moment ``millis`` ms after the epoch, in UTC (exact: integer arithmetic)."""
    return _EPOCH + timedelta(milliseconds=millis)


def daily_id(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


def weekly_id(moment: datetime) -> str:
    year, week, _ = moment.astimezone(UTC).isocalendar()
    return f"{year}-W{week:02d}"


def monthly_id(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return f"{moment.year}-{moment.month:02d}"


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The contract's error: this status, exactly {"error": {"code", "message"}}."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message"}, body
    assert body["error"]["code"] == code, body
    assert body["error"]["message"].strip()
    error: dict[str, Any] = body["error"]
    return error


async def send_batch(
    client: httpx.AsyncClient, board_id: str, runs: list[dict[str, Any]], tries: int = 50
) -> list[dict[str, Any]]:
    """Submit ``runs`` as one batch, sent again on a 503 (the contract's "retry": the runs
    were logged or refused whole, so resending them is harmless) until it is acknowledged;
    the batch's results."""
    for _ in range(tries):
        response = await client.post(
            f"/v1/boards/{board_id}/runs:batch", json={"runs": runs}, headers=SERVER_H
        )
        if response.status_code != 503:
            break
        await asyncio.sleep(0.2)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results
