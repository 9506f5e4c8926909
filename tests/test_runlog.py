"""The run log: every board id the contract allows can be logged, and read back."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import AsyncConnection

from rankd.boards import BOARD_ID
from rankd.periods import ALL_TIME
from rankd.stores.runlog import subject_token
from tests.conftest import ADMIN_H, Urls
from tests.durable_helpers import pg_best, submit, wait_until
from tests.wire import ago


@pytest.fixture(scope="module")
async def pg(urls: Urls) -> AsyncIterator[AsyncConnection[Any]]:
    async with await psycopg.AsyncConnection.connect(urls.postgres, autocommit=True) as conn:
        yield conn


# ``.`` separates tokens in a NATS subject: these would make empty or extra tokens if the
# board id went into the subject as is (``runs.a..b``, ``runs.x.``).
DOTTED = ["a..b", "x.", "a.b", "..", "a.-_.9"]


@pytest.mark.parametrize("board_id", DOTTED)
async def test_a_board_id_with_dots_takes_runs(
    client: httpx.AsyncClient, pg: AsyncConnection[Any], board_id: str
) -> None:
    if board_id == "..":
        board_id = "0.."  # a board id starts with a letter or digit
    # fixed ids: the board may exist already when the servers are reused
    created = await client.put(
        f"/v1/boards/{board_id}", json={"windows": ["all-time"]}, headers=ADMIN_H
    )
    assert created.status_code in (200, 201), created.text
    player = f"dot-{uuid.uuid4().hex[:8]}"
    result = await submit(client, board_id, f"r-{player}", player, 77, ago(seconds=5))
    assert result["standings"][0]["status"] == "ranked"

    read = await client.get(f"/v1/boards/{board_id}/players/{player}")
    assert read.status_code == 200, read.text
    assert read.json()["score"] == 77

    # the log consumer applied it too: the message reached the log under a valid subject
    async def copied() -> bool:
        return (ALL_TIME, ALL_TIME, player) in await pg_best(pg, board_id)

    assert await wait_until(copied, timeout_s=10), f"{board_id}: not in player_best"


def test_subject_tokens_are_distinct_and_valid_for_every_board_id_shape() -> None:
    ids = ["a", "a.b", "a..b", "a~b", "x.", "x..", "0..", "a-b", "a_b", "a.b.c", "ab.c"]
    ids = [i for i in ids if BOARD_ID.match(i)]
    tokens = [subject_token(i) for i in ids]
    assert len(set(tokens)) == len(ids)
    for token in tokens:
        assert token and not set(token) & {".", "*", ">", " ", "\t"}
    assert subject_token("plain-board_1") == "plain-board_1"  # old subjects unchanged
