"""Live resharding (services/resharding.py): a board's ``shards`` changed while it takes runs.

A plain model (all-time best entries, daily sums, per window, period and segment, ranked
by score, then the earlier entry, then the greater player id) checks every read made
during the move: between rounds of runs, the top lists, players' ranks, around and friends
views of every window and a segment must be exactly the model's, in whatever phase the
move is. The move runs in the session app's own background task, as in production.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import AsyncConnection
from psycopg.types.json import Jsonb
from redis.asyncio import Redis

from rankd.errors import Unavailable
from rankd.periods import period_at
from rankd.placement import Layout, next_base
from rankd.reshard import Reshard
from rankd.runtime import Runtime
from rankd.services.registry import IDLE_S, BoardRegistry
from rankd.services.resharding import RESHARD_LOCK
from rankd.stores import deletions, reshards
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis import keys
from tests.support.common import ADMIN_H, SERVER_H, Urls, new_board_id
from tests.support.durable import wait_consumer_idle
from tests.support.wire import send_batch

COUNTRIES = ["FR", "DE", "JP"]
MOVE_TIMEOUT_S = 120.0

Where = tuple[str, str, str]  # window, period, segment ("" for the whole board)


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


@dataclass
class Model:
    # where -> player -> (score, ended ms)
    entries: dict[Where, dict[str, tuple[int, int]]] = field(
        default_factory=lambda: defaultdict(dict)
    )

    def apply(self, player: str, country: str, score: int, ended_ms: int) -> None:
        for window in ("all-time", "daily"):
            period = "all-time" if window == "all-time" else period_at("daily", ended_ms).id
            for segment in ("", f"country:{country}"):
                held = self.entries[(window, period, segment)]
                best = held.get(player)
                if window == "daily":  # a sum: the total, reached with the latest run
                    total = score + (0 if best is None else best[0])
                    held[player] = (total, max(ended_ms, 0 if best is None else best[1]))
                elif best is None or score > best[0] or (score == best[0] and ended_ms < best[1]):
                    held[player] = (score, ended_ms)

    def ranking(self, where: Where) -> list[tuple[str, int]]:
        held = self.entries[where]
        by_id = sorted(held, key=lambda p: p.encode(), reverse=True)
        ordered = sorted(by_id, key=lambda p: (-held[p][0], held[p][1]))
        return [(p, held[p][0]) for p in ordered]


@dataclass
class Feed:
    board_id: str
    rng: random.Random
    players: list[str]
    country: dict[str, str]
    model: Model = field(default_factory=Model)
    clock_ms: int = 0
    sent: int = 0

    def runs(self, n: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            player = self.rng.choice(self.players)
            self.clock_ms += 1  # distinct end times: ties of score go to the earlier run
            score = self.rng.randrange(1_000_000)
            self.sent += 1
            out.append(
                {
                    "run_id": f"r{self.sent}",
                    "player_id": player,
                    "score": score,
                    "ended_at": iso(self.clock_ms),
                    "segments": {"country": self.country[player]},
                }
            )
            self.model.apply(player, self.country[player], score, self.clock_ms)
        return out


async def send(client: httpx.AsyncClient, feed: Feed, runs: list[dict[str, Any]]) -> None:
    results = await send_batch(client, feed.board_id, runs)
    assert all("error" not in r for r in results)


async def get(client: httpx.AsyncClient, url: str, **params: Any) -> dict[str, Any]:
    response = await client.get(url, params=params)
    assert response.status_code == 200, (url, params, response.text)
    body: dict[str, Any] = response.json()
    return body


async def check_reads(client: httpx.AsyncClient, feed: Feed, rng: random.Random) -> None:
    """Every read asked is exactly what the model says."""
    base = f"/v1/boards/{feed.board_id}"
    wheres = sorted(feed.model.entries)
    for where in [w for w in wheres if w[0] == "all-time"] + [rng.choice(wheres)]:
        window, period, segment = where
        ranking = feed.model.ranking(where)
        seg = {"segment": segment} if segment else {}
        top = await get(client, f"{base}/top", window=window, period=period, n=50, **seg)
        assert top["total"] == len(ranking), where
        got = [(e["player_id"], e["score"]) for e in top["entries"]]
        assert got == ranking[:50], where
        for player, _ in rng.sample(ranking, min(3, len(ranking))):
            rank = ranking.index((player, feed.model.entries[where][player][0])) + 1
            mine = await get(
                client, f"{base}/players/{player}", window=window, period=period, **seg
            )
            assert (mine["rank"], mine["score"]) == (rank, ranking[rank - 1][1]), (where, player)
        player = rng.choice(ranking)[0]
        around = await get(
            client, f"{base}/players/{player}/around", window=window, period=period, range=3, **seg
        )
        place = [p for p, _ in ranking].index(player)
        expected = ranking[max(0, place - 3) : place + 4]
        assert [(e["player_id"], e["score"]) for e in around["entries"]] == expected, where
        friends = [p for p, _ in rng.sample(ranking, min(4, len(ranking)))]
        group = await get(
            client,
            f"{base}/players/{player}/friends",
            window=window,
            period=period,
            ids=",".join(friends),
            **seg,
        )
        want = sorted(
            ((p, s) for p, s in ranking if p in {*friends, player}),
            key=lambda x: ranking.index(x),
        )
        assert [(e["player_id"], e["score"]) for e in group["entries"]] == want, where


async def board_with_runs(
    client: httpx.AsyncClient, shards: int, players: int, runs: int, seed: int
) -> Feed:
    board_id = new_board_id("reshard")
    body = {
        "windows": ["all-time", "daily"],
        "window_policies": {"daily": "sum"},  # each run counted once, in either layout
        "segments": ["country"],
        "shards": shards,
    }
    response = await client.put(f"/v1/boards/{board_id}", json=body, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    rng = random.Random(seed)
    ids = [f"p{i}-{rng.randrange(10**6)}" for i in range(players)]
    feed = Feed(board_id, rng, ids, {p: rng.choice(COUNTRIES) for p in ids})
    # the runs end a ms apart from half a minute ago: in today's day, or yesterday's within
    # its hour of grace
    feed.clock_ms = int(time.time() * 1000) - 30_000
    for i in range(0, runs, 500):
        await send(client, feed, feed.runs(min(500, runs - i)))
    return feed


async def reshard(client: httpx.AsyncClient, board_id: str, shards: int) -> dict[str, Any]:
    response = await client.put(f"/v1/boards/{board_id}", json={"shards": shards}, headers=ADMIN_H)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def moving(client: httpx.AsyncClient, board_id: str) -> dict[str, int] | None:
    body = await get(client, f"/v1/boards/{board_id}")
    found: dict[str, int] | None = body.get("resharding")
    return found


@pytest.mark.parametrize(("before", "after"), [(1, 4), (4, 3), (3, 1)])
async def test_reads_stay_exact_while_a_board_is_resharded_under_writes(
    client: httpx.AsyncClient, runtime: Runtime, redis: Redis, before: int, after: int
) -> None:
    feed = await board_with_runs(client, before, players=300, runs=2000, seed=before * 10 + after)
    rng = random.Random(7)
    await check_reads(client, feed, rng)
    answer = await reshard(client, feed.board_id, after)
    assert answer["shards"] == after and answer["resharding"]["done"] == 0
    seen: list[dict[str, int]] = []
    rounds = 0
    deadline = time.monotonic() + MOVE_TIMEOUT_S
    while (progress := await moving(client, feed.board_id)) is not None:
        assert time.monotonic() < deadline, f"still resharding: {progress}"
        seen.append(progress)
        await send(client, feed, feed.runs(rng.randint(1, 30)))
        await check_reads(client, feed, rng)
        rounds += 1
    assert rounds >= 5, "the move ended before reads could be checked during it"
    assert seen[-1]["done"] == seen[-1]["total"] > 0
    # settled: once more, and Redis holds the new layout's keys only
    await send(client, feed, feed.runs(50))
    await check_reads(client, feed, rng)
    board = await get(client, f"/v1/boards/{feed.board_id}")
    assert board["shards"] == after and "resharding" not in board
    names = {k.decode() async for k in redis.scan_iter(match=f"lb:{{{feed.board_id}:all-time*")}
    publics = {n for n in names if n.endswith("}")}
    config = await runtime.boards.reload(feed.board_id)
    want = {
        pk.public
        for pk in keys.shard_keys(feed.board_id, "all-time", "all-time", "", config.shards)
    }
    assert publics == want
    await wait_consumer_idle(client, runtime)


async def test_shards_cannot_change_again_while_a_move_runs(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    feed = await board_with_runs(client, 1, players=50, runs=100, seed=3)
    await reshard(client, feed.board_id, 2)
    again = await client.put(f"/v1/boards/{feed.board_id}", json={"shards": 5}, headers=ADMIN_H)
    assert again.status_code == 409, again.text
    error = again.json()["error"]
    assert error["code"] == "board_immutable_field" and "resharded" in error["message"]
    # a PUT refused for another field calls nothing off
    refused = await client.put(
        f"/v1/boards/{feed.board_id}", json={"shards": 1, "order": "asc"}, headers=ADMIN_H
    )
    assert refused.status_code == 409, refused.text
    stored = await runtime.boards.reload(feed.board_id)
    assert stored.reshard is not None and stored.reshard.phase == "copy", stored.reshard
    # restating the target, or changing another field, is fine meanwhile
    same = await client.put(
        f"/v1/boards/{feed.board_id}", json={"shards": 2, "grace_seconds": 60}, headers=ADMIN_H
    )
    assert same.status_code == 200, same.text
    assert same.json()["grace_seconds"] == 60 and same.json()["shards"] == 2
    await moved(client, feed.board_id)
    board = await get(client, f"/v1/boards/{feed.board_id}")
    assert (board["shards"], board["grace_seconds"]) == (2, 60)
    await check_reads(client, feed, random.Random(1))


async def test_a_move_redis_has_no_room_for_is_refused_and_changes_nothing(
    client: httpx.AsyncClient, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new layout sits beside the old one until the move drops it: a move that would
    take Redis past its memory ratio is refused at the PUT, before anything is written."""
    feed = await board_with_runs(client, 1, players=50, runs=100, seed=5)
    await wait_consumer_idle(client, runtime)  # the room is counted from PostgreSQL's copy
    used, limit = await runtime.redis.conn.memory()
    assert limit > 0  # the test Redis (each cluster primary) has a maxmemory
    # half of what Redis already uses: no move fits under it
    monkeypatch.setattr(runtime.boards, "memory_ratio", used / limit / 2)
    refused = await client.put(
        f"/v1/boards/{feed.board_id}", json={"shards": 4, "grace_seconds": 60}, headers=ADMIN_H
    )
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "board_immutable_field", error
    assert "RANKD_REDIS_MEMORY_WARN_RATIO" in error["message"], error
    board = await get(client, f"/v1/boards/{feed.board_id}")
    assert board["shards"] == 1 and board["grace_seconds"] != 60, board
    assert "resharding" not in board
    # with room, the same PUT starts the move, its count kept for other moves' checks
    monkeypatch.setattr(runtime.boards, "memory_ratio", 1.0)
    assert (await reshard(client, feed.board_id, 4))["resharding"] == {"done": 0, "total": 0}
    move = (await runtime.boards.reload(feed.board_id)).reshard
    assert move is not None and move.bytes > 0, move
    await moved(client, feed.board_id)
    await check_reads(client, feed, random.Random(2))


async def test_a_move_called_off_during_its_copy_leaves_the_served_layout_alone(
    client: httpx.AsyncClient, runtime: Runtime, redis: Redis
) -> None:
    feed = await board_with_runs(client, 2, players=100, runs=500, seed=5)
    await reshard(client, feed.board_id, 5)
    # while the move waits out its settle time before it copies: called off
    off = await reshard(client, feed.board_id, 2)
    assert off["shards"] == 2
    rng = random.Random(2)
    deadline = time.monotonic() + MOVE_TIMEOUT_S
    while await moving(client, feed.board_id) is not None:
        assert time.monotonic() < deadline
        await send(client, feed, feed.runs(rng.randint(1, 20)))
        await check_reads(client, feed, rng)
    config = await runtime.boards.reload(feed.board_id)
    assert (int(config.shards), keys.base_of(config.shards), config.reshard) == (2, 0, None)
    tags = {
        k.decode().split("}")[0] + "}"
        async for k in redis.scan_iter(match=f"lb:{{{feed.board_id}:*", count=1000)
    }
    assert {t.rsplit("#", 1)[-1] for t in tags} == {"0}", "1}"}, sorted(tags)[:5]
    await check_reads(client, feed, rng)


async def test_the_consumer_reads_the_layout_as_the_config_names_it(
    client: httpx.AsyncClient, runtime: Runtime, pg: AsyncConnection[Any]
) -> None:
    """The log consumer compares its cached config's layout_key with the stored one under
    the apply lock (services/applier.py): both must spell a layout alike."""
    feed = await board_with_runs(client, 1, players=20, runs=40, seed=9)
    for shards in (None, 3):
        if shards is not None:
            await reshard(client, feed.board_id, shards)
        config = await runtime.boards.reload(feed.board_id)
        stored = await deletions.current_generations(pg, [feed.board_id])
        assert stored[feed.board_id][2] == config.layout_key, config.reshard
    await moved(client, feed.board_id)  # no move left running under later tests


async def moved(client: httpx.AsyncClient, board_id: str) -> None:
    """Until the board's move has ended."""
    deadline = time.monotonic() + MOVE_TIMEOUT_S
    while await moving(client, board_id) is not None:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.2)


async def test_an_instance_idle_on_a_board_loads_its_config_before_serving_it(
    client: httpx.AsyncClient, bare_runtime: Runtime
) -> None:
    """Other instances count on every instance knowing a change a settle time after it:
    a config cached long ago is not served as it was once its refresh is overdue."""
    board_id = new_board_id("idle")
    response = await client.put(f"/v1/boards/{board_id}", json={}, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    assert (await bare_runtime.boards.get(board_id)).grace_seconds == 3600
    response = await client.put(
        f"/v1/boards/{board_id}", json={"grace_seconds": 77}, headers=ADMIN_H
    )
    assert response.status_code == 200, response.text
    await asyncio.sleep(bare_runtime.settings.config_cache_ttl_s + IDLE_S + 0.2)
    assert (await bare_runtime.boards.get(board_id)).grace_seconds == 77


async def move_due_in_an_hour(pg: AsyncConnection[Any], board_id: str) -> Reshard:
    """A move of the board to 2 shards stored as starting in an hour: the session's own
    driver leaves it alone meanwhile."""
    move = Reshard("copy", Layout(2, next_base(1, 2)), since_ms=int(time.time() * 1000) + 3_600_000)
    await pg.execute(
        "UPDATE boards SET config = config || %s WHERE board_id = %s",
        (Jsonb({"reshard": move.as_json()}), board_id),
    )
    await pg.commit()
    return move


async def test_a_step_is_recorded_only_over_the_move_as_read_and_while_the_lease_lives(
    client: httpx.AsyncClient, runtime: Runtime, pg: AsyncConnection[Any]
) -> None:
    """stores/reshards.step: a driver that read the move before another one went on, or
    whose lease's connection is gone, records nothing (and its successor's steps stand)."""
    board_id = new_board_id("step")
    response = await client.put(f"/v1/boards/{board_id}", json={}, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    move = await move_due_in_an_hour(pg, board_id)
    read = await runtime.boards.reload(board_id)
    assert read.reshard == move
    ahead = replace(move, cursor="all-time/all-time", done=3, total=3)
    async with runtime.pg.lease(RESHARD_LOCK + 1) as held:
        assert held is not None
        assert await reshards.step(runtime.pg, read, ahead, conn=held)
        # same phase, other progress: the stale driver's step is refused
        assert not await reshards.step(runtime.pg, read, replace(move, total=99), conn=held)
    assert (await runtime.boards.reload(board_id)).reshard == ahead
    gone = held  # closed with its lease
    with pytest.raises(psycopg.OperationalError):
        await reshards.step(runtime.pg, replace(read, reshard=ahead), None, conn=gone)
    assert (await runtime.boards.reload(board_id)).reshard == ahead
    response = await client.delete(f"/v1/boards/{board_id}", headers=ADMIN_H)
    assert response.status_code == 200, response.text


async def test_a_moving_boards_config_is_not_served_past_its_settle_time_unconfirmed(
    client: httpx.AsyncClient, runtime: Runtime, urls: Urls, pg: AsyncConnection[Any]
) -> None:
    """Other instances go on with a move a settle time after each step: an instance that
    cannot reach PostgreSQL answers 503 for a moving board once its config is that old,
    rather than serve a layout the move may have left. Boards not moving keep being
    served from the config held."""
    still, moving_id = new_board_id("still"), new_board_id("held")
    for board_id in (still, moving_id):
        response = await client.put(f"/v1/boards/{board_id}", json={}, headers=ADMIN_H)
        assert response.status_code == 201, response.text
    move = await move_due_in_an_hour(pg, moving_id)
    ttl_s = 0.3
    registry = BoardRegistry(runtime.pg, runtime.redis, ttl_s)
    held = await registry.get(moving_id)
    assert held.reshard == move
    assert (await registry.get(still)).reshard is None
    # PostgreSQL out of reach from here on: a store whose pool never opened
    registry.pg = PostgresStore(urls.postgres)
    # within the TTL, and past it while a background refresh is tried (and fails); the
    # config's age set, not slept for: a loaded machine's pause would eat the settle time
    registry._cache.put(moving_id, held)
    assert (await registry.get(moving_id)).reshard == move
    registry._cache.put(moving_id, held, age_s=ttl_s + 0.05)
    assert (await registry.get(moving_id)).reshard == move
    registry._cache.put(moving_id, held, age_s=ttl_s + IDLE_S + 0.05)
    with pytest.raises(Unavailable, match="being resharded"):
        await registry.get(moving_id)
    await asyncio.sleep(ttl_s + IDLE_S)
    assert (await registry.get(still)).reshard is None
    with pytest.raises(Unavailable, match="being resharded"):
        await registry.get(moving_id)
    # PostgreSQL back: served again
    registry.pg = runtime.pg
    assert (await registry.get(moving_id)).reshard == move
    response = await client.delete(f"/v1/boards/{moving_id}", headers=ADMIN_H)
    assert response.status_code == 200, response.text


async def test_the_room_check_counts_metadata_and_a_latest_windows_run_ids(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    """A move copies each entry's :meta field and a latest window's :rid field too: a
    board that keeps them needs more room than one that does not."""
    counted = {}
    for kind in ("plain", "meta"):
        board_id = new_board_id(f"room-{kind}")
        body = {"windows": ["all-time", "daily"], "window_policies": {"daily": "latest"}}
        response = await client.put(f"/v1/boards/{board_id}", json=body, headers=ADMIN_H)
        assert response.status_code == 201, response.text
        runs = []
        for i in range(20):
            run: dict[str, Any] = {"run_id": f"run-{i:04d}", "player_id": f"p{i}", "score": i}
            if kind == "meta":
                run["metadata"] = {"car": "x" * 100}
            runs.append(run)
        sent = await client.post(
            f"/v1/boards/{board_id}/runs:batch", json={"runs": runs}, headers=SERVER_H
        )
        assert sent.status_code == 200, sent.text
        await wait_consumer_idle(client, runtime)
        config = await runtime.boards.reload(board_id)
        counted[kind] = await reshards.footprint(runtime.pg, config, 4)
    plain, meta = counted["plain"], counted["meta"]
    # 20 players in two windows; each in its own exact-times hash at most
    assert (plain.entries, plain.bucket_keys) == (40, 40), plain
    assert (meta.entries, meta.id_bytes) == (plain.entries, plain.id_bytes), meta
    # the latest window's :rid field of each player; with metadata, a :meta field per entry
    assert plain.fields == 20 and meta.fields == 20 + 40, (plain, meta)
    assert meta.field_bytes - plain.field_bytes >= 40 * 100, (plain, meta)
    assert meta.bytes() > plain.bytes()
