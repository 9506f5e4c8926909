"""Ties to the millisecond on every window: the member layout (codec.member) and the reads.

Equal scores rank by the exact ``achieved_at``, earliest first, then by player id in
descending byte order, on every window and for any ``max_score``; ``tie_resolution_ms`` is 1
everywhere. The layout is checked alone against a model (pure), then Python, Lua and SQL are
checked to build the same members, then the whole service is read back against a model:
equal scores 1 ms, 1 s and 10 min apart, every window, ``asc`` and ``desc``, ``best`` and
``sum``, the default and the largest ``max_score``, before and after a rebuild and a replay.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import AsyncConnection
from redis.asyncio import Redis

from rankd.codec import (
    MAX_SCORE_LIMIT,
    STAMP_EPOCH_MS,
    STAMP_MAX,
    STAMP_WIDTH,
    Codec,
    Order,
    achieved_of,
    member,
    player_of,
    stamp,
)
from rankd.periods import EPOCH_MS, SPAN_MS, period_at
from rankd.runtime import Runtime
from rankd.services.replay import replay
from rankd.stores.redis import keys
from rankd.stores.redis.scripts import OWN_ENTRY, SUBMIT_BEST, run_pipeline
from rankd.stores.standings import member_sql
from tests.support.common import ADMIN_H, SERVER_H, Urls, new_board_id, zmembers
from tests.support.durable import delete_board_keys, wait_consumer_idle
from tests.support.wire import from_ms, iso, now_ms

WINDOWS = ["all-time", "daily", "weekly", "monthly"]
# ids whose byte order disagrees with their time order, and with "natural" order
IDS = ["a", "B", "z", "_x", "-y", "9", "aa", "Z1", "zz", "\u00e9t\u00e9"]
DEFAULT_MAX = 1_000_000_000
ORDERS: list[Order] = ["desc", "asc"]


# --- the layout alone ----------------------------------------------------------------------


def model_order(entries: dict[str, tuple[int, int]], order: str) -> list[str]:
    """The rule as written: score (per order), then the earlier exact time, then the player id
    in descending byte order."""
    by_id = sorted(entries, key=lambda p: p.encode(), reverse=True)
    sign = -1 if order == "desc" else 1
    return sorted(by_id, key=lambda p: (sign * entries[p][0], entries[p][1]))


def redis_order(codec: Codec, start_ms: int, entries: dict[str, tuple[int, int]]) -> list[str]:
    """What a reversed range reads: composite descending, then member descending bytewise."""
    rows = [
        (codec.pack(score, at - start_ms), member(p, at).encode())
        for p, (score, at) in entries.items()
    ]
    return [player_of(m.decode()) for _, m in sorted(rows, reverse=True)]


@st.composite
def tie_cases(draw: st.DrawFn) -> tuple[Codec, int, dict[str, tuple[int, int]]]:
    order = draw(st.sampled_from(ORDERS))
    max_score = draw(st.sampled_from([1, 3, 1000, DEFAULT_MAX, 2**40, MAX_SCORE_LIMIT]))
    window = draw(st.sampled_from(list(SPAN_MS)))
    codec = Codec.create(max_score, order, SPAN_MS[window])
    start = period_at(window, 1_790_000_000_000).start_ms
    span = SPAN_MS[window]
    # few scores and times close together (and near a unit's edges): many equal composites
    base = draw(st.integers(0, span - 1))
    near = st.integers(max(0, base - 3), min(span - 1, base + 3 * codec.resolution_ms))
    offset = st.one_of(near, st.integers(0, span - 1), st.sampled_from([0, span - 1]))
    score = st.one_of(st.sampled_from([0, max_score]), st.integers(0, max_score))
    players = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=len(IDS), unique=True))
    return codec, start, {p: (draw(score), start + draw(offset)) for p in players}


@settings(max_examples=400, deadline=None)
@given(tie_cases())
def test_member_order_is_score_then_exact_time_then_id_descending(
    case: tuple[Codec, int, dict[str, tuple[int, int]]],
) -> None:
    codec, start, entries = case
    assert redis_order(codec, start, entries) == model_order(entries, codec.order)


@settings(max_examples=300, deadline=None)
@given(st.integers(STAMP_EPOCH_MS, STAMP_EPOCH_MS + STAMP_MAX), st.sampled_from(IDS))
def test_stamps_are_fixed_width_reversed_and_round_trip(at: int, player: str) -> None:
    m = member(player, at)
    assert len(stamp(at)) == STAMP_WIDTH and m == stamp(at) + player
    assert all(48 <= ord(c) < 112 for c in stamp(at))  # printable, ascending with the digit
    assert player_of(m) == player
    assert achieved_of(m) == (at if at != STAMP_EPOCH_MS else 0)
    if at > STAMP_EPOCH_MS:
        assert stamp(at).encode() < stamp(at - 1).encode()  # earlier sorts higher


def test_stamp_epoch_is_the_first_time_a_run_may_have() -> None:
    assert STAMP_EPOCH_MS == EPOCH_MS
    # a century of all-time fits, and "not recorded" (0) reads back as 0
    assert SPAN_MS["all-time"] < STAMP_MAX
    assert achieved_of(member("p", 0)) == 0


# --- Python, Lua and SQL build the same members --------------------------------------------

EDGE_TIMES = [
    0,
    1,
    STAMP_EPOCH_MS - 1,
    STAMP_EPOCH_MS,
    STAMP_EPOCH_MS + 1,
    STAMP_EPOCH_MS + 63,
    STAMP_EPOCH_MS + 64,
    1_790_000_000_123,
    STAMP_EPOCH_MS + SPAN_MS["all-time"] - 1,
    STAMP_EPOCH_MS + STAMP_MAX,
    STAMP_EPOCH_MS + STAMP_MAX + 5,
]


async def test_python_lua_and_sql_build_the_same_members(
    redis: Redis, urls: Urls, migrated: Any
) -> None:
    pk = keys.period_keys(f"tm-{uuid.uuid4().hex[:8]}", "all-time", "all-time")
    players = [f"p{i}" for i in range(len(EDGE_TIMES))]
    calls = [
        (SUBMIT_BEST, (pk.public, pk.public, pk.shadow, pk.applied), (5, p, at, "", 0, 0))
        for p, at in zip(players, EDGE_TIMES, strict=True)
    ]
    replies = await run_pipeline(redis, calls)
    assert [r[4] for r in replies] == EDGE_TIMES  # the exact time as sent
    stored = {m.decode() for m in zmembers(await redis.zrange(pk.public, 0, -1))}
    expected = [member(p, at) for p, at in zip(players, EDGE_TIMES, strict=True)]
    assert stored == set(expected)
    async with await psycopg.AsyncConnection.connect(urls.postgres, autocommit=True) as conn:
        cur = await conn.execute(
            f"SELECT {member_sql('p', 'at')} FROM unnest(%s::text[], %s::bigint[]) AS u(p, at)",
            (players, EDGE_TIMES),
        )
        assert [r[0] for r in await cur.fetchall()] == expected
    await redis.delete(pk.public)


# --- the scripts against the model ---------------------------------------------------------


async def test_a_best_entry_moves_to_an_earlier_equal_run_in_any_order(redis: Redis) -> None:
    """The better entry is the higher composite, or the equal one reached earlier, whatever
    order the runs come in; the old member goes."""
    codec = Codec.create(MAX_SCORE_LIMIT, "desc", SPAN_MS["all-time"])  # no time bits at all
    composite = codec.pack(42, 0)
    at = 1_790_000_000_000
    for sends in ([at + 5, at + 1, at + 3, at + 1], [at + 1, at + 5, at + 3]):
        pk = keys.period_keys(f"tb-{uuid.uuid4().hex[:8]}", "all-time", "all-time")
        calls = [
            (
                SUBMIT_BEST,
                (pk.public, pk.public, pk.shadow, pk.applied),
                (composite, "p", ms, "", 0, 0),
            )
            for ms in sends
        ]
        answers = [(r[0], r[3], r[4]) for r in await run_pipeline(redis, calls)]
        assert await redis.zrange(pk.public, 0, -1) == [member("p", at + 1).encode()]
        expected = []
        for i, ms in enumerate(sends):
            held = min(sends[:i], default=None)
            improved = held is None or ms < held
            expected.append((int(improved), int(ms == min(sends[: i + 1])), min(sends[: i + 1])))
        assert answers == expected
        await redis.delete(pk.public)


@settings(max_examples=40, deadline=None)
@given(tie_cases(), st.data())
def test_own_view_rank_of_a_shadowed_entry_counts_earlier_ties(
    urls: Urls, case: tuple[Codec, int, dict[str, tuple[int, int]]], data: Any
) -> None:
    """A shadow-banned player's own rank (rank_in in lib.lua: the public entries above, and
    the equal composites whose members sort after) is where they would stand if public."""
    codec, start, entries = case
    hidden = data.draw(st.sampled_from(sorted(entries)))

    async def go() -> tuple[int, int]:
        client = Redis.from_url(urls.redis)
        pk = keys.period_keys(f"to-{uuid.uuid4().hex[:8]}", "all-time", "all-time")
        try:
            calls = []
            for p, (score, at) in entries.items():
                where = (
                    (pk.shadow, pk.public, pk.public)
                    if p == hidden
                    else (pk.public, pk.public, pk.shadow)
                )
                composite = codec.pack(score, at - start)
                args = (composite, p, at, "", 0, 0)
                calls.append((SUBMIT_BEST, (*where, pk.applied), args))
            await run_pipeline(client, calls)
            reply = await run_pipeline(
                client, [(OWN_ENTRY, (pk.public, pk.shadow, pk.pending), (hidden,))]
            )
            side, _, _, rank, _ = reply[0]
            return int(side), int(rank)
        finally:
            await client.delete(pk.public, pk.shadow)
            await client.aclose()

    side, rank = asyncio.run(go())
    assert side == 1
    assert rank == model_order(entries, codec.order).index(hidden) + 1


# --- the service against the model ---------------------------------------------------------

GAPS_MS = [1, 1000, 600_000]


@dataclass
class Tied:
    """One board's runs and what every read must answer."""

    board_id: str
    policy: str
    order: str
    max_score: int
    base_ms: int
    runs: list[tuple[str, str, int, int]] = field(default_factory=list)  # run, player, score, ms
    entries: dict[str, tuple[int, int]] = field(default_factory=dict)  # player: score, ms

    def add(self, player: str, score: int, at: int) -> None:
        self.runs.append((f"r{len(self.runs)}", player, score, at))
        held = self.entries.get(player)
        if self.policy == "sum":
            total = score if held is None else min(held[0] + score, self.max_score)
            self.entries[player] = (total, at if held is None else max(held[1], at))
            return
        sign = -1 if self.order == "desc" else 1
        if held is None or (sign * score, at) < (sign * held[0], held[1]):
            self.entries[player] = (score, at)

    def ranking(self) -> list[str]:
        return model_order(self.entries, self.order)

    def top(self) -> list[tuple[int, str, int, str]]:
        return [
            (i + 1, p, self.entries[p][0], iso(from_ms(self.entries[p][1])))
            for i, p in enumerate(self.ranking())
        ]

    def rank_of(self, score: int) -> int:
        """After every entry already holding the score (or better)."""
        better: Callable[[int], bool] = (
            (lambda s: s >= score) if self.order == "desc" else (lambda s: s <= score)
        )
        return 1 + sum(1 for s, _ in self.entries.values() if better(s))


def tie_base_ms() -> int:
    """A time 30 minutes of runs can follow inside one period of every window, in the past."""
    now = int(now_ms().timestamp() * 1000)
    day = period_at("daily", now).start_ms
    return now - 30 * 60_000 if now - day > 40 * 60_000 else day - 30 * 60_000


def tied_runs(board: Tied) -> None:
    """Per gap: equal scores, the earlier run's player sorting *below* the later one's (so
    the player-id rule alone would get it wrong), sent later run first; a third player at
    the later one's exact ms (the id rule decides); a sum total reached by its latest run."""
    top = board.max_score
    for k, gap in enumerate(GAPS_MS):
        # scores near the very top of the largest max_score
        score = top - 2 * (k + 1) if top == MAX_SCORE_LIMIT else 2 * (777_777 + 1000 * k)
        at = board.base_ms + 1000 * k
        board.add(f"zz{k}-later", score, at + gap)
        board.add(f"aa{k}-first", score, at)
        board.add(f"bb{k}-same-ms", score, at + gap)
        # a player whose equal runs came in reverse: the entry keeps the earlier time
        board.add(f"mm{k}-again", score // 2, at + gap)
        board.add(f"mm{k}-again", score // 2, at + gap - 1 if gap > 1 else at)
    # sum: a total of 2 * h reached at +20 min ranks after a single 2 * h run at +10 min;
    # best: each keeps its best run
    half = (top - 2) // 2 if top == MAX_SCORE_LIMIT else 777_777
    board.add("s-two-runs", half, board.base_ms)
    board.add("s-two-runs", half, board.base_ms + 20 * 60_000)
    board.add("t-one-run", 2 * half, board.base_ms + 10 * 60_000)


async def send_all(client: httpx.AsyncClient, board: Tied) -> None:
    for run_id, player, score, at in board.runs:
        body = {"run_id": run_id, "player_id": player, "score": score, "ended_at": iso(from_ms(at))}
        response = await client.post(
            f"/v1/boards/{board.board_id}/runs", json=body, headers=SERVER_H
        )
        assert response.status_code == 200, response.text


async def check_reads(client: httpx.AsyncClient, board: Tied) -> None:
    base = f"/v1/boards/{board.board_id}"
    expected = board.top()
    ranking = board.ranking()
    for window in WINDOWS:
        scope = {"window": window, "period": period_at(window, board.base_ms).id}
        got = (await client.get(f"{base}/top", params={**scope, "n": 1000})).json()
        rows = [(e["rank"], e["player_id"], e["score"], e["achieved_at"]) for e in got["entries"]]
        assert rows == expected, (window, board.policy, board.order, board.max_score)
        assert got["total"] == len(expected)
        for rank, player, _, _ in expected:
            one = await client.get(f"{base}/players/{player}", params=scope)
            assert one.json()["rank"] == rank, (window, player)
        middle = ranking[len(ranking) // 2]
        around = await client.get(f"{base}/players/{middle}/around", params={**scope, "range": 2})
        at = ranking.index(middle)
        want = ranking[max(0, at - 2) : at + 3]
        assert [e["player_id"] for e in around.json()["entries"]] == want, window
        friends = ranking[::2]
        group = await client.get(
            f"{base}/players/{ranking[1]}/friends",
            params={**scope, "ids": ",".join(reversed(friends))},
        )
        members = [p for p in ranking if p in {*friends, ranking[1]}]
        assert [e["player_id"] for e in group.json()["entries"]] == members, window
        assert [e["rank"] for e in group.json()["entries"]] == [
            ranking.index(p) + 1 for p in members
        ]
        for score in {s for s, _ in board.entries.values()}:
            got_rank = await client.get(f"{base}/rank-of", params={**scope, "score": score})
            assert got_rank.json()["rank"] == board.rank_of(score), (window, score)


CASES = [
    (policy, order, max_score)
    for policy in ("best", "sum")
    for order in ("desc", "asc")
    for max_score in (DEFAULT_MAX, MAX_SCORE_LIMIT)
]


@pytest.mark.parametrize(("policy", "order", "max_score"), CASES)
async def test_equal_scores_rank_by_exact_time_on_every_window_through_rebuild_and_replay(
    client: httpx.AsyncClient,
    runtime: Runtime,
    bare_runtime: Runtime,
    redis: Redis,
    pg: AsyncConnection[Any],
    policy: str,
    order: str,
    max_score: int,
) -> None:
    board_id = new_board_id("ties")
    config = {
        "windows": WINDOWS,
        "policy": policy,
        "order": order,
        "max_score": max_score,
        "grace_seconds": 86_400,
    }
    response = await client.put(f"/v1/boards/{board_id}", json=config, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    assert response.json()["tie_resolution_ms"] == dict.fromkeys(WINDOWS, 1)
    board = Tied(board_id, policy, order, max_score, tie_base_ms())
    tied_runs(board)
    first = await bare_runtime.runlog.last_sequence() + 1
    await send_all(client, board)
    await check_reads(client, board)

    # a rebuild from PostgreSQL keeps every tie
    await wait_consumer_idle(client, runtime)
    await runtime.rebuilder.rebuild(board=board_id)
    await check_reads(client, board)

    # so does a replay of the log into empty stores
    await delete_board_keys(redis, board_id, WINDOWS)
    for table in ("player_best", "sum_runs"):
        await pg.execute(f"DELETE FROM {table} WHERE board_id = %s", (board_id,))
    report = await replay(bare_runtime.runlog, bare_runtime.applier, first)
    assert report.parked == 0
    await check_reads(client, board)
