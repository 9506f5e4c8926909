"""The v1.2 admin routes against the real servers: the list of bans, `banned` on an admin's
view of a profile, the segments of a period, deleting a board and erasing a player.

Deleting and erasing are checked in every store (Redis, PostgreSQL, the run log) and
against what could bring them back: the log consumer, a replay of the whole log, a rebuild.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.errors import Unavailable
from rankd.runs import decode_batch
from rankd.runtime import Runtime
from rankd.services.registry import BoardRegistry
from rankd.services.replay import replay
from rankd.services.seasons import SeasonJob
from rankd.stores.redis import keys
from tests.support.common import ADMIN_H, SERVER_H, new_board_id
from tests.support.durable import during_second_sweep, wait_consumer_idle, wait_until
from tests.support.wire import assert_error, iso

DAY = timedelta(days=1)


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    """The boards here are unsharded, then split over 4 shards: the answers must not differ."""
    return make_sharded_board


async def submit(
    client: httpx.AsyncClient, board: str, run_id: str, player: str, score: int, **extra: Any
) -> dict[str, Any]:
    body = {"run_id": run_id, "player_id": player, "score": score, **extra}
    response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def get(client: httpx.AsyncClient, path: str, status: int = 200, **params: Any) -> Any:
    response = await client.get(path, params=params)
    assert response.status_code == status, response.text
    return response.json()


def ids(body: dict[str, Any]) -> list[str]:
    return [e["player_id"] for e in body["entries"]]


async def ban(client: httpx.AsyncClient, player: str, banned: bool = True) -> None:
    method = client.post if banned else client.delete
    response = await method(f"/v1/players/{player}/ban", headers=ADMIN_H)
    assert response.status_code == 200, response.text


async def board_keys(redis: Redis, board_id: str) -> list[bytes]:
    found: list[bytes] = []
    for pattern in keys.board_patterns(board_id):
        found += [k async for k in redis.scan_iter(match=pattern, count=1000)]
    return found


async def freeze(
    rt: Runtime, board_id: str, wait_s: float = 0.0, now_ms: int | None = None
) -> None:
    """One season pass over the board, settled at once (``wait_s``: for another's lease;
    ``now_ms``: at another time than now)."""
    job = SeasonJob(
        rt.redis.reads,
        rt.redis.seasons,
        rt.pg,
        rt.boards,
        rt.rebuilder,
        rt.seasons.applied_through,
        settle_ms=0,
    )
    report = await job.run_pass(now_ms, boards=[board_id], wait_for_lease_s=wait_s)
    assert report.lease and not report.failed


async def replay_everything(rt: Runtime) -> None:
    await replay(rt.runlog, rt.applier, 1)


# --- the list of bans and the admin's view of a profile -----------------------------------


async def test_bans_are_listed_newest_first_a_page_at_a_time(client: httpx.AsyncClient) -> None:
    players = [new_board_id("banned") for _ in range(3)]
    try:
        for player in players:
            await ban(client, player)
        response = await client.get("/v1/bans", params={"limit": 2}, headers=ADMIN_H)
        assert response.status_code == 200, response.text
        first = response.json()
        assert [b["player_id"] for b in first["bans"]] == players[::-1][:2]
        assert all(b["banned_at"].endswith("Z") for b in first["bans"])
        assert first["next"] is not None
        # the next page goes on after the cursor (other tests' bans may follow)
        response = await client.get(
            "/v1/bans", params={"limit": 1000, "after": first["next"]}, headers=ADMIN_H
        )
        rest = [b["player_id"] for b in response.json()["bans"]]
        assert rest[0] == players[0] and not set(rest) & set(players[1:])
        # unbanned: off the list
        await ban(client, players[1], False)
        listed = (await client.get("/v1/bans", params={"limit": 1000}, headers=ADMIN_H)).json()
        assert players[1] not in [b["player_id"] for b in listed["bans"]]
    finally:
        for player in players:
            await ban(client, player, False)


async def test_a_ban_keeps_its_reason_for_moderators(client: httpx.AsyncClient) -> None:
    player, plain = new_board_id("why"), new_board_id("why")
    path = f"/v1/players/{player}/ban"
    try:
        reason = "speed hack: 3 runs under the track record ✓"
        response = await client.post(path, json={"reason": reason}, headers=ADMIN_H)
        assert response.status_code == 200, response.text
        assert response.json() == {"player_id": player, "banned": True}
        assert (await client.post(f"/v1/players/{plain}/ban", headers=ADMIN_H)).status_code == 200

        async def listed() -> dict[str, str | None]:
            answer = await client.get("/v1/bans", params={"limit": 1000}, headers=ADMIN_H)
            return {b["player_id"]: b["reason"] for b in answer.json()["bans"]}

        assert (await listed())[player] == reason
        assert (await listed())[plain] is None
        # bad reasons change nothing
        for bad in (
            {"reason": ""},
            {"reason": "  "},
            {"reason": "x" * 501},
            {"reason": "two\nlines"},
            {"reason": 7},
            {"why": "x"},
            ["x"],
        ):
            answer = await client.post(path, json=bad, headers=ADMIN_H)
            assert_error(answer, 400, "invalid_request")
        assert (await listed())[player] == reason
        # a ban again replaces it; an unban and a new ban without one forget it
        await client.post(path, json={"reason": "second look"}, headers=ADMIN_H)
        assert (await listed())[player] == "second look"
        await ban(client, player, False)
        await ban(client, player)
        assert (await listed())[player] is None
        # the player's own profile, as a server key reads it, never says
        profile = (await client.get(f"/v1/players/{player}", headers=SERVER_H)).json()
        assert "reason" not in profile and "banned" not in profile
    finally:
        await ban(client, player, False)
        await ban(client, plain, False)


async def test_the_list_of_bans_refuses_bad_input_and_non_admins(
    client: httpx.AsyncClient,
) -> None:
    for params in ({"limit": 0}, {"limit": 1001}, {"after": "x"}, {"after": "-1"}):
        response = await client.get("/v1/bans", params=params, headers=ADMIN_H)
        assert_error(response, 400, "invalid_request")
    assert_error(await client.get("/v1/bans"), 401, "unauthorized")
    assert_error(await client.get("/v1/bans", headers=SERVER_H), 403, "forbidden")


async def test_an_admin_sees_whether_a_player_is_banned_a_server_never_does(
    client: httpx.AsyncClient,
) -> None:
    player = new_board_id("flag")
    path = f"/v1/players/{player}"
    assert (await client.get(path, headers=ADMIN_H)).json()["banned"] is False
    await ban(client, player)
    try:
        assert (await client.get(path, headers=ADMIN_H)).json()["banned"] is True
        as_server = (await client.get(path, headers=SERVER_H)).json()
        assert "banned" not in as_server
        assert as_server == {"player_id": player, "name": None, "segments": {}}
    finally:
        await ban(client, player, False)
    assert (await client.get(path, headers=ADMIN_H)).json()["banned"] is False


# --- the segments of a period -------------------------------------------------------------


async def test_segments_list_the_values_with_public_entries_most_first(
    client: httpx.AsyncClient, make_board: Any, runtime: Runtime
) -> None:
    board = await make_board(windows=["all-time", "daily"], segments=["country", "platform"])
    banned = new_board_id("seg-banned")
    runs = [
        ("a", {"country": "FR", "platform": "pc"}),
        ("b", {"country": "FR"}),
        ("c", {"country": "DE", "platform": "pc"}),
        (banned, {"country": "JP", "platform": "ps5"}),
    ]
    for i, (player, segments) in enumerate(runs):
        await submit(client, board, f"r{i}", player, 10 + i, segments=segments)
    await ban(client, banned)
    try:
        await wait_consumer_idle(client, runtime)
        expected = [
            {
                "dimension": "country",
                "values": [{"value": "FR", "total": 2}, {"value": "DE", "total": 1}],
            },
            {"dimension": "platform", "values": [{"value": "pc", "total": 2}]},
        ]
        for window in ("all-time", "daily"):
            body = await get(client, f"/v1/boards/{board}/segments", window=window)
            assert body["segments"] == expected
            assert body["window"] == window
        empty = await get(
            client, f"/v1/boards/{board}/segments", window="daily", period="2020-01-01"
        )
        assert empty["segments"] == [
            {"dimension": "country", "values": []},
            {"dimension": "platform", "values": []},
        ]
    finally:
        await ban(client, banned, False)
    assert_error(
        await client.get(f"/v1/boards/{board}/segments", params={"window": "weekly"}),
        400,
        "invalid_request",
    )
    assert_error(await client.get("/v1/boards/nope-nope/segments"), 404, "board_not_found")


# --- deleting a board ---------------------------------------------------------------------


@pytest.mark.parametrize("shards", [1, 4], ids=lambda n: f"shards{n}")
async def test_a_deleted_board_is_gone_everywhere_and_its_id_starts_afresh(
    client: httpx.AsyncClient,
    redis: Redis,
    pg: AsyncConnection[Any],
    runtime: Runtime,
    shards: int,
) -> None:
    board = new_board_id("del")
    path = f"/v1/boards/{board}"
    config = {
        "windows": ["all-time", "daily"],
        "segments": ["country"],
        "grace_seconds": 5 * 86_400,
        "shards": shards,
    }
    assert (await client.put(path, json=config, headers=ADMIN_H)).status_code == 201
    two_days_ago = iso(datetime.now(UTC) - DAY * 2)
    await submit(client, board, "old", "p1", 70, ended_at=two_days_ago, segments={"country": "FR"})
    await submit(client, board, "now", "p2", 50, segments={"country": "DE"})
    # a closed, frozen period in the archive, and a run held for review
    await client.put(path, json={"grace_seconds": 0, "hold_top": 1}, headers=ADMIN_H)
    await wait_consumer_idle(client, runtime)
    await freeze(runtime, board)
    held = await submit(client, board, "held", "p3", 99)
    assert held["standings"][0]["status"] == "held"
    await wait_consumer_idle(client, runtime)

    assert_error(await client.delete(path), 401, "unauthorized")
    assert_error(await client.delete(path, headers=SERVER_H), 403, "forbidden")
    response = await client.delete(path, headers=ADMIN_H)
    assert response.status_code == 200, response.text
    assert response.json() == {"board_id": board, "deleted": True}

    # gone from every read at once, its runs refused, a second delete is a 404
    for read in ("", "/top", "/players/p2", "/periods", "/segments", "/rank-of?score=1"):
        assert_error(await client.get(path + read), 404, "board_not_found")
    assert_error(await client.get(f"{path}/holds", headers=ADMIN_H), 404, "board_not_found")
    run = {"run_id": "late", "player_id": "p4", "score": 1}
    assert_error(
        await client.post(f"{path}/runs", json=run, headers=SERVER_H), 404, "board_not_found"
    )
    assert_error(await client.delete(path, headers=ADMIN_H), 404, "board_not_found")
    assert board not in [b["board_id"] for b in (await get(client, "/v1/boards"))["boards"]]
    tables = ("player_best", "sum_runs", "periods_seen", "holds", "period_archives")
    for table in (*tables, "run_fingerprints"):
        cur = await pg.execute(f"SELECT count(*) FROM {table} WHERE board_id = %s", (board,))
        assert (await cur.fetchone()) == (0,), table
    assert await wait_until(lambda: _no_keys(redis, board), timeout_s=15)

    # no replay brings it back, and the id can be used again, for an empty board
    await replay_everything(runtime)
    assert not await board_keys(redis, board)

    async def recreated() -> bool:
        response = await client.put(path, json={"windows": ["all-time"]}, headers=ADMIN_H)
        assert response.status_code in (201, 503), response.text
        return response.status_code == 201

    assert await wait_until(recreated, timeout_s=15, step_s=0.5)
    top = await get(client, f"{path}/top")
    assert (top["total"], top["entries"]) == (0, [])
    await submit(client, board, "now", "p9", 5)  # a run id of the old board: a new run
    await wait_consumer_idle(client, runtime)
    await replay_everything(runtime)
    await runtime.rebuilder.rebuild(board)
    assert ids(await get(client, f"{path}/top")) == ["p9"]
    cur = await pg.execute(
        "SELECT DISTINCT player_id FROM player_best WHERE board_id = %s", (board,)
    )
    assert await cur.fetchall() == [("p9",)]


async def test_a_deleted_boards_id_can_be_put_again_at_once(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    """PUT right after DELETE waits out the old keys' removal and answers 201; the new
    board's first runs survive the deleting instance's second sweep."""
    board = new_board_id("again")
    path = f"/v1/boards/{board}"
    assert (
        await client.put(path, json={"windows": ["all-time"]}, headers=ADMIN_H)
    ).status_code == 201
    for n in range(3):
        await submit(client, board, f"r{n}", f"p{n}", 10 + n)
    assert (await client.delete(path, headers=ADMIN_H)).status_code == 200
    response = await client.put(path, json={"windows": ["all-time"]}, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    await submit(client, board, "r0", "fresh", 1)
    # past the deleting instance's second sweep (settle time), the new run is still there
    await asyncio.sleep(runtime.deletions.settle_s + 0.5)
    top = await get(client, f"{path}/top")
    assert (top["total"], ids(top)) == (1, ["fresh"])


async def test_a_put_answers_503_while_a_dead_deleters_flag_lasts_and_changes_nothing(
    client: httpx.AsyncClient, runtime: Runtime
) -> None:
    """An instance that died mid-removal leaves its flag (it expires in ten minutes): a PUT
    of the id waits its bound out, answers 503 and creates nothing; once the flag is gone
    the id is created."""
    board = new_board_id("dead-deleter")
    path = f"/v1/boards/{board}"
    assert (
        await client.put(path, json={"windows": ["all-time"]}, headers=ADMIN_H)
    ).status_code == 201
    assert (await client.delete(path, headers=ADMIN_H)).status_code == 200
    flags = runtime.redis.board_keys
    assert await wait_until(lambda: _flag_gone(flags, board), timeout_s=60)
    await flags.set_deleting(board, 60)  # as if the deleter died before its second sweep
    registry = BoardRegistry(runtime.pg, runtime.redis, 0.0, recreate_wait_s=0.3)
    with pytest.raises(Unavailable, match="still being removed"):
        await registry.put(board, {"windows": ["all-time"]})
    assert await runtime.pg.get_board(board) is None
    await flags.set_deleting(board, 0)
    config, created = await registry.put(board, {"windows": ["all-time"]})
    assert created and config.windows == ("all-time",)


async def _flag_gone(flags: Any, board: str) -> bool:
    return not await flags.is_deleting(board)


async def redis_mentions(redis: Redis, board: str, player: str) -> list[bytes]:
    """The keys of ``board`` with a member or field that holds ``player``'s id."""
    found: list[bytes] = []
    for key in await board_keys(redis, board):
        kind = await redis.type(key)
        if kind == b"zset":
            items = [m async for m, _ in redis.zscan_iter(key)]
        elif kind == b"hash":
            items = list(await redis.hkeys(key))
        else:
            continue
        if any(player.encode() in item for item in items):
            found.append(key)
    return found


async def _no_keys(redis: Redis, board: str) -> bool:
    return not await board_keys(redis, board)


# --- erasing a player ---------------------------------------------------------------------


async def log_runs_of(rt: Runtime, player: str) -> list[tuple[int, str]]:
    """(sequence, run id) of every run of ``player`` still in the log."""
    found: list[tuple[int, str]] = []
    sub = await rt.runlog.read_from(1)
    last = await rt.runlog.last_sequence()
    try:
        while True:
            messages = await sub.fetch(1000, 2.0)
            if not messages:
                break
            for message in messages:
                try:
                    _, _, runs = decode_batch(message.data)
                except ValueError:  # other tests' malformed messages
                    continue
                found += [(message.seq, r.run_id) for r in runs if r.player_id == player]
            await sub.ack(messages)
            if messages[-1].seq >= last:
                break
    finally:
        await sub.close()
    return found


@pytest.mark.parametrize("shards", [1, 4], ids=lambda n: f"shards{n}")
async def test_an_erased_player_is_gone_from_every_store_and_the_log(
    client: httpx.AsyncClient,
    redis: Redis,
    pg: AsyncConnection[Any],
    runtime: Runtime,
    shards: int,
) -> None:
    board = new_board_id("erase")
    path = f"/v1/boards/{board}"
    config = {
        "windows": ["all-time", "daily"],
        "segments": ["country"],
        "grace_seconds": 5 * 86_400,
        "shards": shards,
    }
    assert (await client.put(path, json=config, headers=ADMIN_H)).status_code == 201
    gone = new_board_id("gone")
    await client.put(
        f"/v1/players/{gone}",
        json={"name": "secret_name", "segments": {"country": "FR"}},
        headers=SERVER_H,
    )
    two_days_ago = iso(datetime.now(UTC) - DAY * 2)
    # the erased player's runs share log messages with others' (a batch is one message)
    batch = [
        {"run_id": "o1", "player_id": "a", "score": 90, "ended_at": two_days_ago},
        {"run_id": "o2", "player_id": gone, "score": 80, "ended_at": two_days_ago},
        {"run_id": "o3", "player_id": "c", "score": 70, "ended_at": two_days_ago},
        {"run_id": "n1", "player_id": gone, "score": 60},
        {"run_id": "n2", "player_id": "b", "score": 50, "segments": {"country": "FR"}},
    ]
    response = await client.post(f"{path}/runs:batch", json={"runs": batch}, headers=SERVER_H)
    assert response.status_code == 200 and "error" not in response.text
    await ban(client, gone)  # a ban is erased too
    await wait_consumer_idle(client, runtime)
    await client.put(path, json={"grace_seconds": 0}, headers=ADMIN_H)
    await freeze(runtime, board)  # the closed daily period is in the archive, gone at #2
    await ban(client, gone, False)
    await ban(client, gone)
    old_day = (datetime.now(UTC) - DAY * 2).strftime("%Y-%m-%d")
    assert len(await log_runs_of(runtime, gone)) == 2
    assert await redis_mentions(redis, board, gone)

    assert_error(await client.delete(f"/v1/players/{gone}"), 401, "unauthorized")
    assert_error(await client.delete(f"/v1/players/{gone}", headers=SERVER_H), 403, "forbidden")
    assert_error(
        await client.delete("/v1/players/bad%20id", headers=ADMIN_H), 400, "invalid_request"
    )
    response = await client.delete(f"/v1/players/{gone}", headers=ADMIN_H)
    assert response.status_code == 200, response.text
    assert response.json() == {"player_id": gone, "erased": True}

    # reads: live, archived, segments; ranks close up
    assert ids(await get(client, f"{path}/top")) == ["a", "c", "b"]
    archived = await get(client, f"{path}/top", window="daily", period=old_day)
    assert [(e["rank"], e["player_id"]) for e in archived["entries"]] == [(1, "a"), (2, "c")]
    assert archived["total"] == 2
    assert_error(
        await client.get(f"{path}/players/{gone}", params={"window": "daily", "period": old_day}),
        404,
        "player_not_ranked",
    )
    assert_error(await client.get(f"{path}/players/{gone}"), 404, "player_not_ranked")
    fr = await get(client, f"{path}/top", segment="country:FR")
    assert ids(fr) == ["b"]
    profile = (await client.get(f"/v1/players/{gone}", headers=ADMIN_H)).json()
    assert profile == {"player_id": gone, "name": None, "segments": {}, "banned": False}
    assert gone not in [
        b["player_id"]
        for b in (await client.get("/v1/bans", params={"limit": 1000}, headers=ADMIN_H)).json()[
            "bans"
        ]
    ]

    # PostgreSQL holds nothing of them
    for table in ("player_best", "sum_runs", "holds", "players", "archive_entries"):
        cur = await pg.execute(f"SELECT count(*) FROM {table} WHERE player_id = %s", (gone,))
        assert (await cur.fetchone()) == (0,), table
    cur = await pg.execute("SELECT count(*) FROM bans WHERE player_id = %s AND banned", (gone,))
    assert (await cur.fetchone()) == (0,)
    # nor Redis: no member, mark, exact time, name or profile segments (the id is unique,
    # so any member or field holding it is theirs, whatever the member layout)
    assert not await redis_mentions(redis, board, gone)
    assert await redis.hget(keys.NAMES, gone) is None
    assert await redis.hget(keys.PROFILE_SEGMENTS, gone) is None

    # the log's copies are securely deleted; the other runs of their messages remain
    async def scrubbed() -> bool:
        return not await log_runs_of(runtime, gone)

    assert await wait_until(scrubbed, timeout_s=30, step_s=0.5)

    async def marked() -> bool:
        cur = await pg.execute(
            "SELECT scrubbed_ms IS NOT NULL FROM erasures WHERE player_id = %s", (gone,)
        )
        return await cur.fetchone() == (True,)

    assert await wait_until(marked, timeout_s=30, step_s=0.2)
    for player in ("a", "b", "c"):
        assert len(await log_runs_of(runtime, player)) >= 1
    # nor does the run-id registry remember their runs
    cur = await pg.execute("SELECT count(*) FROM run_fingerprints WHERE player_id = %s", (gone,))
    assert (await cur.fetchone()) == (0,)

    # no replay or rebuild brings them back; the others are all still there
    await wait_consumer_idle(client, runtime)
    await replay_everything(runtime)
    await runtime.rebuilder.rebuild(board)
    assert ids(await get(client, f"{path}/top")) == ["a", "c", "b"]
    cur = await pg.execute("SELECT count(*) FROM player_best WHERE player_id = %s", (gone,))
    assert (await cur.fetchone()) == (0,)

    # runs sent for the id from now on are a new player's
    await submit(client, board, "o2", gone, 10)  # even a reused run id
    await wait_consumer_idle(client, runtime)
    top = await get(client, f"{path}/top")
    assert ids(top) == ["a", "c", "b", gone] and top["entries"][3]["name"] is None
    await replay_everything(runtime)
    assert ids(await get(client, f"{path}/top")) == ["a", "c", "b", gone]


async def test_a_run_of_the_id_during_the_erasures_second_sweep_is_kept(
    client: httpx.AsyncClient, pg: AsyncConnection[Any], runtime: Runtime
) -> None:
    """The id's new run lands between the second sweep's read of the durable copy (no
    entry) and its drop from Redis; the log consumer applies it meanwhile if it can. Under
    the apply lock it cannot: it applies after the drop, finds its mark gone, and writes
    the entry itself. Without the lock it commits first, trusting the submit path's mark,
    and the drop takes the entry from Redis for good (seen once on Sentinel)."""
    board = new_board_id("erase-race")
    path = f"/v1/boards/{board}"
    response = await client.put(path, json={"windows": ["all-time"]}, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    gone = new_board_id("gone")
    await submit(client, board, "r1", gone, 50)
    await submit(client, board, "r2", "stays", 40)
    await wait_consumer_idle(client, runtime)

    async def new_run() -> None:
        await submit(client, board, "r3", gone, 30)

    async def committed() -> bool:
        cur = await pg.execute(
            "SELECT count(*) FROM player_best WHERE board_id = %s AND player_id = %s",
            (board, gone),
        )
        return await cur.fetchone() == (1,)

    async def erase() -> None:
        response = await client.delete(f"/v1/players/{gone}", headers=ADMIN_H)
        assert response.status_code == 200, response.text

    sweeps = await during_second_sweep(
        runtime, runtime.deletions, gone, act=erase, new_run=new_run, committed=committed
    )
    assert sweeps == [False]  # the consumer waited for the sweep
    await wait_consumer_idle(client, runtime)
    top = await get(client, f"{path}/top")
    assert [(e["player_id"], e["score"]) for e in top["entries"]] == [("stays", 40), (gone, 30)]


async def test_erasing_a_player_never_seen_is_harmless(client: httpx.AsyncClient) -> None:
    player = new_board_id("never")
    response = await client.delete(f"/v1/players/{player}", headers=ADMIN_H)
    assert response.json() == {"player_id": player, "erased": True}
    await asyncio.sleep(0)
    assert orjson.loads((await client.get(f"/v1/players/{player}", headers=SERVER_H)).content) == {
        "player_id": player,
        "name": None,
        "segments": {},
    }


async def test_an_erased_banned_players_ban_row_goes_once_every_instance_saw_the_unban(
    client: httpx.AsyncClient, runtime: Runtime, pg: AsyncConnection[Any]
) -> None:
    player = new_board_id("banned-erased")
    assert (await client.post(f"/v1/players/{player}/ban", headers=ADMIN_H)).status_code < 300
    assert (await client.delete(f"/v1/players/{player}", headers=ADMIN_H)).status_code == 200

    async def rows() -> list[Any]:
        cur = await pg.execute("SELECT banned FROM bans WHERE player_id = %s", (player,))
        return list(await cur.fetchall())

    deletions = runtime.deletions
    await deletions.scrub_once()
    # kept, unbanned, while an instance's refresh may not have seen it
    assert await rows() == [(False,)]
    assert player not in runtime.moderation.bans

    async def gone() -> bool:
        await deletions.scrub_once()  # (0 while another pass holds the scrubber's lease)
        return await rows() == []

    keep, deletions.ban_row_keep_ms = deletions.ban_row_keep_ms, 0
    try:
        assert await wait_until(gone), await rows()
    finally:
        deletions.ban_row_keep_ms = keep


async def test_held_runs_show_in_no_segment_and_leave_with_an_erasure(
    client: httpx.AsyncClient, make_board: Any, runtime: Runtime, redis: Redis
) -> None:
    board = await make_board(windows=["all-time"], segments=["country"])
    await submit(client, board, "r1", "a", 10, segments={"country": "FR"})
    response = await client.put(f"/v1/boards/{board}", json={"hold_top": 1}, headers=ADMIN_H)
    assert response.status_code == 200, response.text
    player = new_board_id("held")
    held = await submit(client, board, "r2", player, 99, segments={"country": "JP"})
    assert held["standings"][0]["status"] == "held"
    await wait_consumer_idle(client, runtime)
    body = await get(client, f"/v1/boards/{board}/segments")
    assert body["segments"] == [{"dimension": "country", "values": [{"value": "FR", "total": 1}]}]
    holds = (await client.get(f"/v1/boards/{board}/holds", headers=ADMIN_H)).json()["holds"]
    assert [h["player_id"] for h in holds] == [player]

    assert await redis_mentions(redis, board, player)  # :pending and its exact time
    response = await client.delete(f"/v1/players/{player}", headers=ADMIN_H)
    assert response.status_code == 200, response.text
    holds = (await client.get(f"/v1/boards/{board}/holds", headers=ADMIN_H)).json()["holds"]
    assert holds == []
    assert not await redis_mentions(redis, board, player)
    await replay_everything(runtime)
    assert (await client.get(f"/v1/boards/{board}/holds", headers=ADMIN_H)).json()["holds"] == []
    assert ids(await get(client, f"/v1/boards/{board}/top")) == ["a"]
