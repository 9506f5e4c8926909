"""League boards (CONTRACT v1.3 "Leagues") from outside, against a model, on 1 and 4 shards:
placement in arrival order (players who came before their tiers were known wait, then
are placed in order), cohort ranks and zones, a ban inside a cohort, the moves at the
freeze (exactly once), the next period's tiers, the history, a rebuild and a replay that
place everyone the same, and an erasure.

An hourly league with a day's grace lets the test use past hours as its periods: each is
closed by an admin when the test wants its moves made."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.leagues import League
from rankd.periods import period_at
from rankd.runtime import Runtime
from rankd.services.replay import replay
from rankd.stores.redis import keys
from tests.integration.services.test_admin import ban, freeze
from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, new_board_id
from tests.support.durable import wait_consumer_idle, wipe_board
from tests.support.wire import assert_error

HOUR_MS = 3_600_000
LEAGUE = League("hourly", ("bronze", "silver", "gold"), cohort_size=5, promote=2, relegate=1)


@pytest.fixture
def make_board(make_sharded_board):  # type: ignore[no-untyped-def]
    return make_sharded_board


class Model:
    """What the contract says a league holds: placements in arrival order per tier, each
    player's best, the tiers moves leave."""

    def __init__(self, league: League) -> None:
        self.league = league
        self.tiers: dict[str, int] = {}
        self.placed: dict[str, dict[str, tuple[int, int]]] = {}  # period -> player -> (t, o)
        self.fill: dict[str, dict[int, int]] = {}
        self.best: dict[str, dict[str, tuple[int, int]]] = {}  # period -> player -> (s, ms)

    def run(self, period: str, player: str, score: int, ended_ms: int) -> None:
        placed = self.placed.setdefault(period, {})
        if player not in placed:
            tier = self.tiers.get(player, 0)
            fill = self.fill.setdefault(period, {})
            placed[player] = (tier, fill.get(tier, 0))
            fill[tier] = fill.get(tier, 0) + 1
        best = self.best.setdefault(period, {})
        if player not in best or (score, -ended_ms) > (best[player][0], -best[player][1]):
            best[player] = (score, ended_ms)

    def cohort(
        self, period: str, tier: int, number: int, hidden: set[str]
    ) -> list[tuple[str, int, str]]:
        """(player, score, zone) best first, as the public sees it."""
        size = self.league.cohort_size
        members = [
            p
            for p, (t, o) in self.placed[period].items()
            if t == tier and o // size == number and p not in hidden
        ]
        best = self.best[period]
        ranked = sorted(members, key=lambda p: (-best[p][0], best[p][1], p))
        n = len(ranked)
        return [
            (p, best[p][0], self.league.zone(tier, i, n)) for i, p in enumerate(ranked, start=1)
        ]

    def cohorts(self, period: str) -> set[tuple[int, int]]:
        size = self.league.cohort_size
        return {(t, o // size) for t, o in self.placed[period].values()}

    def freeze(self, period: str, hidden: set[str]) -> dict[str, str]:
        """The moves: player -> up, down or stay; the tiers follow."""
        moved: dict[str, str] = {}
        for tier, number in self.cohorts(period):
            ranked = self.cohort(period, tier, number, hidden)
            for i, (player, _, _) in enumerate(ranked, start=1):
                moved[player] = self.league.moved(tier, i, len(ranked))
        for player in self.placed[period]:
            moved.setdefault(player, "stay")
            step = {"up": 1, "down": -1, "stay": 0}[moved[player]]
            self.tiers[player] = self.placed[period][player][0] + step
        return moved


async def batch(client: httpx.AsyncClient, board: str, first: int) -> None:
    """Players p<first> to p<first + 499>'s runs in one request, scores spread."""
    runs = [
        {"run_id": f"r{i}", "player_id": f"p{i:05d}", "score": (i * 7919) % 10_007}
        for i in range(first, first + 500)
    ]
    sent = await client.post(
        f"/v1/boards/{board}/runs:batch", json={"runs": runs}, headers=SERVER_H
    )
    assert sent.status_code == 200, sent.text


def hour(ms: int) -> str:
    return period_at("hourly", ms).id


async def send(
    client: httpx.AsyncClient, board: str, run_id: str, player: str, score: int, ended_ms: int
) -> None:
    ended = datetime.fromtimestamp(ended_ms / 1000, UTC).isoformat()
    body = {"run_id": run_id, "player_id": player, "score": score, "ended_at": ended}
    response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text


async def close(client: httpx.AsyncClient, board: str, period: str) -> None:
    response = await client.post(
        f"/v1/boards/{board}/periods/{period}/close", params={"window": "hourly"}, headers=ADMIN_H
    )
    assert response.status_code == 200, response.text


async def read_cohort(
    client: httpx.AsyncClient, board: str, period: str, cohort: str, **params: str
) -> list[tuple[str, int, str]]:
    response = await client.get(
        f"/v1/boards/{board}/cohorts/{cohort}", params={"period": period, **params}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["cohort"] == cohort and body["period"] == period and body["window"] == "hourly"
    assert [e["rank"] for e in body["entries"]] == list(range(1, len(body["entries"]) + 1))
    return [(e["player_id"], e["score"], e["zone"]) for e in body["entries"]]


async def check_all(
    client: httpx.AsyncClient, board: str, model: Model, period: str, hidden: set[str]
) -> None:
    """Every cohort of the period by id, and every visible player's own league read."""
    for tier, number in sorted(model.cohorts(period)):
        cohort = LEAGUE.cohort_id(tier, number)
        expected = model.cohort(period, tier, number, hidden)
        assert await read_cohort(client, board, period, cohort) == expected, cohort
        for player, _, _ in expected:
            response = await client.get(
                f"/v1/boards/{board}/players/{player}/league", params={"period": period}
            )
            assert response.status_code == 200, response.text
            body = response.json()
            assert (body["tier"], body["cohort"]) == (LEAGUE.tiers[tier], cohort)
            assert [(e["player_id"], e["score"], e["zone"]) for e in body["entries"]] == expected


async def test_a_league_places_ranks_and_moves_players_against_a_model(
    client: httpx.AsyncClient, make_board: MakeBoard, runtime: Runtime, redis: Redis
) -> None:
    first_seq = await runtime.runlog.last_sequence() + 1
    board = await make_board(
        windows=["hourly", "all-time"], grace_seconds=86_400, league=LEAGUE.as_json()
    )
    now = int(datetime.now(UTC).timestamp() * 1000)
    pa, pb = hour(now - 3 * HOUR_MS), hour(now - 2 * HOUR_MS)
    pa_ms, pb_ms = now - 3 * HOUR_MS, now - 2 * HOUR_MS
    model = Model(LEAGUE)
    players = [new_board_id("lg") for _ in range(12)]
    scores = [17, 40, 23, 40, 8, 91, 55, 12, 60, 33, 71, 2]

    # before the hour before pa is over, pa's tiers are unknown: the first six wait (their
    # runs ended in the reverse of the order they came: they are placed as they came)
    for i in range(6):
        await send(client, board, f"a{i}", players[i], scores[i], pa_ms + 100 - i)
        model.run(pa, players[i], scores[i], pa_ms + 100 - i)
    waiting = await client.get(
        f"/v1/boards/{board}/players/{players[0]}/league", params={"period": pa}
    )
    assert_error(waiting, 404, "player_not_ranked")
    assert "waits for their tier" in waiting.json()["error"]["message"]
    await wait_consumer_idle(client, runtime)
    # Redis lost while they wait: the rebuild queues them again in the order they came
    await wipe_board(redis, board)
    await runtime.rebuilder.rebuild(board=board)
    await close(client, board, hour(pa_ms - HOUR_MS))  # no one played that hour
    await freeze(runtime, board)
    for i in range(6, 12):
        await send(client, board, f"a{i}", players[i], scores[i], pa_ms + i)
        model.run(pa, players[i], scores[i], pa_ms + i)
    # a better run changes a rank, never a placement
    await send(client, board, "a-better", players[4], 95, pa_ms + 20)
    model.run(pa, players[4], 95, pa_ms + 20)
    await check_all(client, board, model, pa, set())

    # a ban: gone from the public cohort (the next player takes the place), there in the
    # player's own view
    cohort1 = model.cohort(pa, 0, 0, set())
    banned = cohort1[0][0]
    await ban(client, banned)
    try:
        await asyncio.sleep(0.3)
        await check_all(client, board, model, pa, {banned})
        assert_error(
            await client.get(f"/v1/boards/{board}/players/{banned}/league", params={"period": pa}),
            404,
            "player_not_ranked",
        )
        own = await client.get(
            f"/v1/boards/{board}/players/{banned}/league",
            params={"period": pa, "viewer": banned},
            headers=SERVER_H,
        )
        assert own.status_code == 200, own.text
        assert own.json()["entries"][0]["player_id"] == banned

        # the freeze makes the moves, once: the banned player takes no promotion place
        await wait_consumer_idle(client, runtime)
        await close(client, board, pa)
        await freeze(runtime, board)
        await freeze(runtime, board)  # a second pass moves no one again
    finally:
        await ban(client, banned, False)
    moved = model.freeze(pa, {banned})
    assert moved[banned] == "stay"
    await ban(client, banned)
    try:  # a banned player's history: the public sees a player never seen, they the truth
        await asyncio.sleep(0.3)
        hidden = await client.get(f"/v1/players/{banned}/leagues", params={"board": board})
        assert hidden.json()["history"] == [] and hidden.json()["tier"] == "bronze"
        own = await client.get(
            f"/v1/players/{banned}/leagues",
            params={"board": board, "viewer": banned},
            headers=SERVER_H,
        )
        assert [r["period"] for r in own.json()["history"]] == [pa]
    finally:
        await ban(client, banned, False)
    await asyncio.sleep(0.3)
    for player in players:
        history = await client.get(f"/v1/players/{player}/leagues", params={"board": board})
        assert history.status_code == 200, history.text
        body = history.json()
        assert body["tier"] == LEAGUE.tiers[model.tiers[player]], (player, body)
        [row] = body["history"]
        assert (row["period"], row["moved"]) == (pa, moved[player])
        tier, ordinal = model.placed[pa][player]
        assert row["cohort"] == LEAGUE.cohort_id(tier, ordinal // LEAGUE.cohort_size)
    assert any(m == "up" for m in moved.values())

    # the next hour places each player in the tier the moves left, a newcomer first tier
    newcomer = new_board_id("lg-new")
    for i, player in enumerate([*reversed(players), newcomer]):
        await send(client, board, f"b{i}", player, 10 + i, pb_ms + i)
        model.run(pb, player, 10 + i, pb_ms + i)
    await check_all(client, board, model, pb, set())
    assert {t for t, _ in model.cohorts(pb)} == {0, 1}

    # Redis lost, rebuilt from the durable copy: every cohort the same
    await wait_consumer_idle(client, runtime)

    await wipe_board(redis, board)
    await runtime.rebuilder.rebuild(board=board)
    await check_all(client, board, model, pa, set())
    await check_all(client, board, model, pb, set())
    # a replay into an empty Redis: the log carries every placement
    await wipe_board(redis, board)
    await replay(runtime.runlog, runtime.applier, first_seq)
    await wait_consumer_idle(client, runtime)
    await check_all(client, board, model, pb, set())

    # an erasure takes the player out of every cohort and history
    gone = players[5]
    erased = await client.delete(f"/v1/players/{gone}", headers=ADMIN_H)
    assert erased.status_code == 200, erased.text
    await check_all(client, board, model, pb, {gone})
    history = await client.get(f"/v1/players/{gone}/leagues", params={"board": board})
    assert history.json() == {"board_id": board, "player_id": gone, "tier": "bronze", "history": []}

    # two days on, pa is archived (an hourly window keeps no retention): its placements leave
    # Redis with its standings, and its cohorts read from the archive (frozen while the ban
    # was on: without the banned player) and the durable copy
    await freeze(runtime, board, now_ms=now + 2 * 86_400_000)
    left = redis.scan_iter(match=f"{keys.LeagueKeys(board).tag}:{pa}:*")
    assert [k async for k in left] == []
    await check_all(client, board, model, pa, {banned, gone})


async def test_league_validation_and_reads_refuse_bad_input(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    bad: list[dict[str, Any]] = [
        {"league": "weekly"},
        {"league": {"window": "weekly", "tiers": ["a"]}},  # the board has no weekly window
        {"windows": ["weekly", "daily"], "league": {"window": "weekly", "tiers": ["a"]}},
        {"windows": ["weekly"], "league": {"window": "weekly", "tiers": []}},
        {"windows": ["weekly"], "league": {"window": "weekly", "tiers": ["a", "a"]}},
        {"windows": ["weekly"], "league": {"window": "weekly", "tiers": ["a b"]}},
        {"windows": ["weekly"], "league": {"window": "weekly", "tiers": ["a\n"]}},
        {"windows": ["weekly"], "league": {"window": "weekly", "tiers": ["a"], "cohort_size": 4}},
        {"windows": ["weekly"], "league": {"window": "weekly", "tiers": ["a"], "promote": 16}},
        {"windows": ["weekly"], "league": {"window": "weekly", "tiers": ["a"], "zones": 1}},
        {"windows": ["all-time"], "league": {"window": "all-time", "tiers": ["a"]}},
        # players would wait past the periods a season pass looks at
        {
            "windows": ["hourly"],
            "grace_seconds": 398 * 3600 + 1,
            "league": {"window": "hourly", "tiers": ["a"]},
        },
        {
            "windows": ["weekly"],
            "league": {"window": "weekly", "tiers": [str(i) for i in range(17)]},
        },
    ]
    for body in bad:
        board = new_board_id("lg-bad")
        response = await client.put(f"/v1/boards/{board}", json=body, headers=ADMIN_H)
        assert_error(response, 400, "invalid_request")
        assert (await client.get(f"/v1/boards/{board}")).status_code == 404
    board = await make_board(windows=["weekly"], league={"window": "weekly", "tiers": ["a", "b"]})
    got = (await client.get(f"/v1/boards/{board}")).json()
    assert got["league"] == {
        "window": "weekly",
        "tiers": ["a", "b"],
        "cohort_size": 30,
        "promote": 5,
        "relegate": 5,
    }
    for name in ("window", "segment"):
        refused = await client.get(f"/v1/boards/{board}/cohorts/a-1", params={name: "weekly"})
        assert_error(refused, 400, "invalid_request")
    for cohort in ("c-1", "a-0", "a", "a-1%0A", "a-x", "a-01"):
        response = await client.get(f"/v1/boards/{board}/cohorts/{cohort}")
        assert_error(response, 400, "invalid_request")
    empty = await client.get(f"/v1/boards/{board}/cohorts/b-7")
    assert empty.status_code == 200 and empty.json()["entries"] == []
    assert_error(await client.get("/v1/players/p1/leagues"), 400, "invalid_request")
    plain = await make_board(windows=["weekly"])
    assert_error(await client.get(f"/v1/boards/{plain}/players/p1/league"), 400, "invalid_request")
    # immutable once the board has runs
    await client.post(
        f"/v1/boards/{board}/runs",
        json={"run_id": "x", "player_id": "p1", "score": 1},
        headers=SERVER_H,
    )
    changed = await client.put(
        f"/v1/boards/{board}",
        json={"league": {"window": "weekly", "tiers": ["a", "b", "c"]}},
        headers=ADMIN_H,
    )
    assert_error(changed, 409, "board_immutable_field")


async def placements(redis: Redis, pg: AsyncConnection[Any], board: str, period: str) -> Any:
    """Every placement of the period, in Redis and in the durable copy."""
    in_redis: dict[Any, Any] = {}
    async for key in redis.scan_iter(match=f"{keys.LeagueKeys(board).tag}:{period}:m:*"):
        in_redis |= await redis.hgetall(key)
    cur = await pg.execute(
        "SELECT player_id, tier || ':' || ordinal FROM league_members"
        " WHERE board_id = %s AND period = %s",
        (board, period),
    )
    durable = dict(await cur.fetchall())
    text = {str(k, "utf-8"): str(v, "utf-8") for k, v in in_redis.items()}
    return text, durable


async def test_ten_thousand_players_are_placed_alike_by_a_rebuild_and_a_replay(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    first_seq = await runtime.runlog.last_sequence() + 1
    board = new_board_id("lg-10k")
    league = League("hourly", ("bronze", "silver"), cohort_size=30, promote=5, relegate=5)
    body = {"windows": ["hourly"], "league": league.as_json()}
    assert (await client.put(f"/v1/boards/{board}", json=body, headers=ADMIN_H)).status_code == 201
    period = hour(int(datetime.now(UTC).timestamp() * 1000))

    # four requests at a time: their placements interleave as they come
    for first in range(0, 10_000, 2_000):
        await asyncio.gather(*(batch(client, board, f) for f in range(first, first + 2_000, 500)))
    await wait_consumer_idle(client, runtime)
    placed, durable = await placements(redis, pg, board, period)
    assert placed == durable and len(placed) == 10_000
    assert sorted(int(at.split(":")[1]) for at in placed.values()) == list(range(10_000))
    sample = [league.cohort_id(0, n) for n in (0, 57, 333)]
    reads = [await read_cohort(client, board, period, cohort) for cohort in sample]
    assert [len(r) for r in reads] == [30, 30, 10]

    # Redis lost, rebuilt from the durable copy
    await wipe_board(redis, board)
    await runtime.rebuilder.rebuild(board=board)
    assert await placements(redis, pg, board, period) == (placed, durable)
    assert [await read_cohort(client, board, period, c) for c in sample] == reads
    # both stores emptied of the board's entries and placements, then the log replayed
    await wipe_board(redis, board)
    for table in ("league_members", "player_best"):
        await pg.execute(f"DELETE FROM {table} WHERE board_id = %s", (board,))
    await pg.commit()
    await replay(runtime.runlog, runtime.applier, first_seq)
    await wait_consumer_idle(client, runtime)
    assert await placements(redis, pg, board, period) == (placed, durable)
    assert [await read_cohort(client, board, period, c) for c in sample] == reads


async def test_a_held_run_counts_in_its_cohort_once_approved_and_cohorts_span_segments(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    league = {"window": "weekly", "tiers": ["bronze", "silver"], "cohort_size": 5}
    board = await make_board(windows=["weekly"], segments=["country"], league=league)
    players = [new_board_id("lgh") for _ in range(4)]
    for i, player in enumerate(players[:3]):
        body = {
            "run_id": f"h{i}",
            "player_id": player,
            "score": 10 + i,
            "segments": {"country": "FR" if i % 2 else "DE"},
        }
        sent = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
        assert sent.status_code == 200, sent.text
    # above the board's top 1: held, so not in the cohort yet (but placed: its place kept)
    held_top = await client.put(f"/v1/boards/{board}", json={"hold_top": 1}, headers=ADMIN_H)
    assert held_top.status_code == 200, held_top.text
    body = {"run_id": "big", "player_id": players[3], "score": 999, "segments": {"country": "FR"}}
    sent = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert sent.json()["standings"][0]["status"] == "held", sent.text

    async def cohort() -> list[str]:
        got = await client.get(f"/v1/boards/{board}/cohorts/bronze-1")
        assert got.status_code == 200, got.text
        return [e["player_id"] for e in got.json()["entries"]]

    # one cohort across both countries; the segment's own standings as usual
    assert await cohort() == [players[2], players[1], players[0]]
    fr = await client.get(f"/v1/boards/{board}/top", params={"segment": "country:FR"})
    assert [e["player_id"] for e in fr.json()["entries"]] == [players[1]]
    assert_error(
        await client.get(f"/v1/boards/{board}/players/{players[3]}/league"),
        404,
        "player_not_ranked",
    )
    approved = await client.post(f"/v1/boards/{board}/holds/big/approve", headers=ADMIN_H)
    assert approved.status_code == 200, approved.text
    assert await cohort() == [players[3], players[2], players[1], players[0]]
    mine = await client.get(f"/v1/boards/{board}/players/{players[3]}/league")
    assert [e["zone"] for e in mine.json()["entries"]] == ["promote", "promote", "stay", "stay"]


async def test_a_place_taken_meanwhile_is_not_given_twice(
    client: httpx.AsyncClient,
    runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
) -> None:
    """A logged placement that reaches the consumer after Redis was rebuilt without it, and
    after another player took its place: the late player gets a new place, in both stores."""
    board = new_board_id("lg-taken")
    league = {"window": "weekly", "tiers": ["bronze", "silver"], "cohort_size": 5}
    body = {"windows": ["weekly"], "league": league}
    assert (await client.put(f"/v1/boards/{board}", json=body, headers=ADMIN_H)).status_code == 201
    sent = await client.post(
        f"/v1/boards/{board}/runs",
        json={"run_id": "a", "player_id": "pa", "score": 5},
        headers=SERVER_H,
    )
    assert sent.status_code == 200, sent.text
    await wait_consumer_idle(client, runtime)
    config = await runtime.boards.get(board)
    period = config.current_period("weekly", int(datetime.now(UTC).timestamp() * 1000)).id
    late = [(period, "px", "0:0", True), (period, "py", "0:1", True)]
    async with runtime.pg.connection() as conn, conn.transaction():
        await runtime.applier.leagues.apply(conn, config, late)
    placed, durable = await placements(redis, pg, board, period)
    assert placed == durable == {"pa": "0:0", "px": "0:2", "py": "0:1"}


async def test_a_sum_league_ranks_each_players_total_in_the_cohort(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    league = {"window": "weekly", "tiers": ["bronze", "silver"], "cohort_size": 5}
    board = await make_board(windows=["weekly"], policy="sum", league=league)
    a, b, c = (new_board_id(f"sum-{x}") for x in "abc")
    runs = [(a, 30), (b, 25), (a, 10), (c, 50), (b, 30)]
    for i, (player, score) in enumerate(runs):
        body = {"run_id": f"s{i}", "player_id": player, "score": score}
        sent = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
        assert sent.status_code == 200, sent.text
    got = await client.get(f"/v1/boards/{board}/players/{a}/league")
    assert got.status_code == 200, got.text
    entries = [(e["player_id"], e["score"], e["zone"]) for e in got.json()["entries"]]
    assert entries == [(b, 55, "promote"), (c, 50, "promote"), (a, 40, "stay")]
