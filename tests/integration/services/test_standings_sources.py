"""The three standings sources answer alike: a period's entries on one Redis key, over four
shards, and frozen in the archive give every read the same rows and totals (ties included),
asked through the one interface (services/standings/)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from rankd.periods import parse_period
from rankd.runtime import Runtime
from rankd.services.reads import Reader
from rankd.services.scope import Scope
from rankd.services.seasons import SeasonJob
from rankd.services.standings import Row, Standings
from rankd.services.standings.archived import ArchiveStandings
from rankd.services.standings.live import KeyStandings, ShardedStandings
from rankd.stores.archive import ArchiveStore
from tests.support.common import ADMIN_H, SERVER_H, new_board_id
from tests.support.durable import wait_consumer_idle
from tests.support.wire import iso

LONG_GRACE_S = 45 * 86_400  # long enough to submit into a period three days old


async def put_board(client: httpx.AsyncClient, board_id: str, body: dict[str, Any]) -> None:
    response = await client.put(f"/v1/boards/{board_id}", json=body, headers=ADMIN_H)
    assert response.status_code in (200, 201), response.text


async def answers(
    source: Standings, players: list[str], floors: list[int], rng: random.Random
) -> list[Any]:
    """Every read of the interface, in one list (rows without their Redis position, which
    only live rows carry)."""
    return [strip(found) for found in await _answers(source, players, floors, rng)]


def strip(found: Any) -> Any:
    if isinstance(found, Row):
        return found._replace(position=None)
    if isinstance(found, list | tuple):
        return type(found)(strip(f) for f in found)
    return found


async def _answers(
    source: Standings, players: list[str], floors: list[int], rng: random.Random
) -> list[Any]:
    rows, total = await source.top(0, 1000)
    found: list[Any] = [rows, total, await source.total()]
    found += [await source.top(5, 7), await source.top(total, 3)]
    for player in [*players, "nobody"]:
        found += [await source.entry(player), await source.around(player, rng.choice([0, 1, 3]))]
    for _ in range(5):
        found.append(await source.group([*rng.sample(players, 6), "nobody"]))
    for floor in floors:
        found.append(await source.count_from(floor))
    return found


async def test_a_key_shards_and_the_archive_answer_alike(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    rng = random.Random(16)
    day = (datetime.now(UTC) - timedelta(days=3)).replace(hour=12, minute=0, microsecond=0)
    tag = new_board_id("src").split("-")[1][:6]
    players = [f"{tag}-p{i:02d}" for i in range(30)]
    runs: list[dict[str, Any]] = [
        {
            "run_id": f"r{i}",
            "player_id": rng.choice(players),
            "score": rng.randrange(0, 12) * 5,  # few values: many ties
            # the same instant for many runs: ties to the millisecond, then by player id
            "ended_at": iso(day + timedelta(seconds=rng.choice([0, 0, 1, 37]))),
        }
        for i in range(90)
    ]
    boards = {}
    for shards in (1, 4):
        board_id = new_board_id("sources")
        await put_board(
            client,
            board_id,
            {
                "windows": ["all-time", "daily"],
                "grace_seconds": LONG_GRACE_S,
                "retention_days": {"daily": 100},
                "shards": shards,
            },
        )
        response = await client.post(
            f"/v1/boards/{board_id}/runs:batch", json={"runs": runs}, headers=SERVER_H
        )
        assert response.status_code == 200, response.text
        boards[shards] = board_id
    for player in players[::3]:
        response = await client.put(
            f"/v1/players/{player}", json={"name": f"name of {player}"}, headers=SERVER_H
        )
        assert response.status_code == 200, response.text
    await wait_consumer_idle(client)
    for board_id in boards.values():
        await put_board(client, board_id, {"grace_seconds": 0})  # the day's period closes

    rt = runtime
    reader = Reader(rt.redis.reads, rt.names, archive=ArchiveStore(rt.pg), archive_state_s=0)
    period = parse_period("daily", day.date().isoformat())

    async def source(shards: int) -> Standings:
        board = await rt.boards.get(boards[shards])
        return await reader.standings(Scope(board, "daily", period))

    codec = (await rt.boards.get(boards[1])).codecs["daily"]
    scores = {run["score"] for run in runs}
    floors = [codec.score_floor(s) for s in sorted({0, *scores, *(s + 1 for s in scores)})]
    key, sharded = await source(1), await source(4)
    assert isinstance(key, KeyStandings) and isinstance(sharded, ShardedStandings)
    live = await answers(key, players, floors, random.Random(1))
    assert live[1] > 0
    assert await answers(sharded, players, floors, random.Random(1)) == live

    season = SeasonJob(
        rt.redis.reads,
        rt.redis.seasons,
        rt.pg,
        rt.boards,
        rt.rebuilder,
        applied_through=rt.seasons.applied_through,
        settle_ms=0,
    )
    assert (await season.run_pass(boards=[boards[1]])).frozen == 1
    await put_board(client, boards[1], {"retention_days": {"daily": 0}})
    assert (await season.run_pass(boards=[boards[1]])).archived == 1  # its keys leave Redis
    archived = await source(1)
    assert isinstance(archived, ArchiveStandings)
    assert await answers(archived, players, floors, random.Random(1)) == live
