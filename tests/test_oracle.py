"""An oracle test through the HTTP API: thousands of runs against a plain in-memory model.

Two boards (policy ``best`` and ``sum``, both ``desc``, every window) receive the same few
thousand runs of ~200 players over the last ~20 days, shuffled, with resends and equal
scores: first one by one (each response is checked against the model as it goes), then as
concurrent single submits, then as batches. Every period touched is then read back (top,
player, around, friends, rank-of, periods) and compared with the model.

The model is written out plainly here and shares no code with the service beyond
``rankd.periods.period_at`` (which period a time falls in) and the board's reported
``tie_resolution_ms``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from rankd.periods import period_at
from tests.conftest import ADMIN_H, SERVER_H, new_board_id

SEED = 20261103
WINDOWS = ["all-time", "daily", "weekly", "monthly"]
MAX_SCORE = 1_000_000_000  # the boards' default
DAY_MS = 86_400_000
N_PLAYERS = 200
N_RUNS = 3000
HIGH_SCORES = [100_000, 99_000, 95_000]  # popular top scores: many ties on the best board
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
_UNIX = datetime(1970, 1, 1, tzinfo=UTC)


def iso(ms: int) -> str:
    return (_UNIX + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def iso_with_offset(ms: int, minutes: int) -> str:
    moment = (_UNIX + timedelta(milliseconds=ms)).astimezone(timezone(timedelta(minutes=minutes)))
    return moment.isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class RunIn:
    run_id: str
    player_id: str
    score: int
    ended_ms: int
    ended_at: str  # as sent (sometimes with a non-UTC offset)

    def body(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "player_id": self.player_id,
            "score": self.score,
            "ended_at": self.ended_at,
        }


@dataclass
class Entry:
    score: int
    unit: int  # time units since the period start: best run's (best) / latest run's (sum)
    at_ms: int  # the exact end time of that run, which reads report

    @property
    def composite(self) -> tuple[int, int]:
        """What the service orders and compares by: the score, then the tie bucket."""
        return (self.score, -self.unit)


@dataclass
class Model:
    """A board as a dict per (window, period); ranks by sorting the whole period."""

    policy: str
    resolution: dict[str, int]
    periods: dict[tuple[str, str], dict[str, Entry]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    starts: dict[tuple[str, str], int] = field(default_factory=dict)
    counted: set[tuple[str, str, str]] = field(default_factory=set)

    def apply(self, run: RunIn) -> list[dict[str, Any]]:
        """Apply one run; return the standings the service should answer for it."""
        standings = []
        for window in WINDOWS:
            period = period_at(window, run.ended_ms)
            where = (window, period.id)
            self.starts[where] = period.start_ms
            entries = self.periods[where]
            unit = (run.ended_ms - period.start_ms) // self.resolution[window]
            old = entries.get(run.player_id)
            if self.policy == "best":
                new = Entry(run.score, unit, run.ended_ms)
                better = old is None or new.composite > old.composite
                stored = new if better else old
                improved = better
                is_best = stored.composite == new.composite
            else:
                counted = (window, period.id, run.run_id) not in self.counted
                stored = old
                if counted:  # first sight of this run id in the period
                    self.counted.add((window, period.id, run.run_id))
                    if old is None:
                        stored = Entry(min(run.score, MAX_SCORE), unit, run.ended_ms)
                    else:
                        stored = Entry(
                            min(old.score + run.score, MAX_SCORE),
                            max(old.unit, unit),
                            max(old.at_ms, run.ended_ms),
                        )
                improved = counted and (old is None or stored.composite != old.composite)
                is_best = True  # counted now or by an earlier send of the same run
            assert stored is not None
            entries[run.player_id] = stored
            standings.append(
                {
                    "window": window,
                    "period": period.id,
                    "segment": None,
                    "status": "ranked",
                    "rank": self.ranking(where).index(run.player_id) + 1,
                    "score": stored.score,
                    "achieved_at": self.achieved_at(where, stored),
                    "improved": improved,
                    "is_best": is_best,
                }
            )
        return standings

    def ranking(self, where: tuple[str, str]) -> list[str]:
        """Player ids best first: score desc, earlier time unit, then player id descending."""
        entries = self.periods[where]
        by_id = sorted(entries, key=lambda p: p.encode(), reverse=True)
        return sorted(by_id, key=lambda p: (-entries[p].score, entries[p].unit))

    def achieved_at(self, where: tuple[str, str], entry: Entry) -> str:
        return iso(entry.at_ms)

    def entry(self, where: tuple[str, str], player_id: str, rank: int) -> dict[str, Any]:
        e = self.periods[where][player_id]
        return {
            "rank": rank,
            "player_id": player_id,
            "score": e.score,
            "achieved_at": self.achieved_at(where, e),
            "name": None,
        }

    def top(self, where: tuple[str, str]) -> list[dict[str, Any]]:
        return [self.entry(where, p, i + 1) for i, p in enumerate(self.ranking(where))]


def generate(rng: random.Random, now_ms: int) -> tuple[list[RunIn], list[RunIn], list[str]]:
    """(distinct runs, everything to send shuffled, player ids)."""
    players: set[str] = set()
    while len(players) < N_PLAYERS:
        players.add("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 10))))
    ids = sorted(players)
    clones, sources = ids[-6:], ids[:6]  # clones play only copies of their source's runs
    playing = ids[:-6]
    weights = [rng.uniform(0.2, 3.0) for _ in playing]  # some players play far more
    newest = now_ms - 120_000
    runs: list[RunIn] = []

    def add(player: str, score: int, ended_ms: int) -> None:
        n = len(runs)
        if rng.random() < 0.05:
            ended_at = iso_with_offset(ended_ms, rng.choice([-300, 330, 60, 840]))
        else:
            ended_at = iso(ended_ms)
        runs.append(RunIn(f"r{n}.{rng.getrandbits(24):06x}", player, score, ended_ms, ended_at))

    for _ in range(N_RUNS):
        roll = rng.random()
        if roll < 0.12 and runs:
            # a twin: someone else with the same score within a few ms
            twin = rng.choice(runs)
            player = rng.choices(playing, weights)[0]
            add(player, twin.score, min(newest, twin.ended_ms + rng.randint(-4, 4)))
            continue
        if roll < 0.3:
            score = rng.choice(HIGH_SCORES)
        elif roll < 0.35:
            score = 0
        else:
            score = rng.randint(0, 100_000)
        add(rng.choices(playing, weights)[0], score, newest - rng.randrange(20 * DAY_MS))
    # clones: players whose every run copies another's: exact ties on both boards
    for source, clone in zip(sources, clones, strict=True):
        for run in [r for r in runs if r.player_id == source]:
            add(clone, run.score, run.ended_ms)
    resends = [rng.choice(runs) for _ in range(len(runs) // 10)]
    sends = runs + resends
    rng.shuffle(sends)
    return runs, sends, ids


@dataclass
class Board:
    board_id: str
    policy: str
    resolution: dict[str, int]
    model: Model
    # sequential phase: (run, the model's standings, the service's standings)
    checked: list[tuple[RunIn, list[dict[str, Any]], list[dict[str, Any]]]] = field(
        default_factory=list
    )
    # every other response: (run, the service's standings)
    answered: list[tuple[RunIn, list[dict[str, Any]]]] = field(default_factory=list)


async def submit_one(client: httpx.AsyncClient, board: Board, run: RunIn) -> list[dict[str, Any]]:
    response = await client.post(
        f"/v1/boards/{board.board_id}/runs", json=run.body(), headers=SERVER_H
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["run_id"], body["player_id"], body["score"]) == (
        run.run_id,
        run.player_id,
        run.score,
    )
    standings: list[dict[str, Any]] = body["standings"]
    return standings


async def feed(client: httpx.AsyncClient, board: Board, sends: list[RunIn]) -> None:
    n = len(sends)
    sequential, concurrent, batched = sends[: n // 5], sends[n // 5 : n // 2], sends[n // 2 :]
    for run in sequential:
        got = await submit_one(client, board, run)
        board.checked.append((run, board.model.apply(run), got))
    for i in range(0, len(concurrent), 50):
        group = concurrent[i : i + 50]
        answers = await asyncio.gather(*(submit_one(client, board, run) for run in group))
        board.answered.extend(zip(group, answers, strict=True))
    for i in range(0, len(batched), 400):
        group = batched[i : i + 400]
        response = await client.post(
            f"/v1/boards/{board.board_id}/runs:batch",
            json={"runs": [run.body() for run in group]},
            headers=SERVER_H,
        )
        assert response.status_code == 200, response.text
        results = response.json()["results"]
        assert [r["run_id"] for r in results] == [run.run_id for run in group]
        assert all("error" not in r for r in results), results
        board.answered.extend((run, r["standings"]) for run, r in zip(group, results, strict=True))
    for run in concurrent + batched:  # the model's end state does not depend on the order
        board.model.apply(run)


@pytest.fixture(scope="module")
async def boards(client: httpx.AsyncClient) -> dict[str, Board]:
    rng = random.Random(SEED)
    now_ms = int(time.time() * 1000)
    runs, sends, _ = generate(rng, now_ms)
    made: dict[str, Board] = {}
    for policy in ("best", "sum"):
        board_id = new_board_id(f"oracle-{policy}")
        config = {"windows": WINDOWS, "policy": policy, "grace_seconds": 31_536_000}
        response = await client.put(f"/v1/boards/{board_id}", json=config, headers=ADMIN_H)
        assert response.status_code == 201, response.text
        response = await client.get(f"/v1/boards/{board_id}")
        assert response.status_code == 200, response.text
        resolution = response.json()["tie_resolution_ms"]
        assert set(resolution) == set(WINDOWS)
        made[policy] = Board(board_id, policy, resolution, Model(policy, resolution))
    for board in made.values():  # one board at a time: at most 50 submits in flight
        await feed(client, board, sends)
    for board in made.values():
        assert len(board.checked) + len(board.answered) == len(sends)
    assert len({r.run_id for r in runs}) == len(runs)
    return made


BOARDS = pytest.mark.parametrize("policy", ["best", "sum"])


@BOARDS
async def test_sequential_submits_answer_what_the_model_says(
    boards: dict[str, Board], policy: str
) -> None:
    board = boards[policy]
    for run, expected, got in board.checked:
        assert got == expected, run


@BOARDS
async def test_every_answer_is_consistent_with_its_run(
    boards: dict[str, Board], policy: str
) -> None:
    board = boards[policy]
    for run, standings in board.answered:
        assert [s["window"] for s in standings] == WINDOWS
        for s in standings:
            assert s["period"] == period_at(s["window"], run.ended_ms).id
            assert s["status"] == "ranked"
            assert s["rank"] >= 1
            # the entry after this run holds at least this run
            assert s["score"] >= run.score, (run, s)
            if policy == "best" and s["is_best"]:
                assert s["score"] == run.score
            if s["improved"]:
                assert s["is_best"], (run, s)


async def read(client: httpx.AsyncClient, url: str, **params: Any) -> dict[str, Any]:
    response = await client.get(url, params=params)
    assert response.status_code == 200, (url, params, response.text)
    body: dict[str, Any] = response.json()
    return body


@BOARDS
async def test_top_of_every_period_matches_the_model(
    client: httpx.AsyncClient, boards: dict[str, Board], policy: str
) -> None:
    board = boards[policy]
    model = board.model
    assert {w for w, _ in model.periods} == set(WINDOWS)
    assert len([p for w, p in model.periods if w == "daily"]) >= 20
    url = f"/v1/boards/{board.board_id}/top"
    for (window, period), entries in sorted(model.periods.items()):
        expected = model.top((window, period))
        assert len(expected) == len(entries)
        got: list[dict[str, Any]] = []
        while True:
            page = await read(client, url, window=window, period=period, n=1000, offset=len(got))
            assert (page["board_id"], page["window"], page["period"]) == (
                board.board_id,
                window,
                period,
            )
            assert page["total"] == len(expected)
            got.extend(page["entries"])
            if not page["entries"] or len(got) >= page["total"]:
                break
        assert got == expected, (window, period)
    # paging in small steps gives the same list
    where = ("all-time", "all-time")
    expected = model.top(where)
    got = []
    for offset in range(0, len(expected) + 37, 37):
        page = await read(client, url, window="all-time", period="all-time", n=37, offset=offset)
        got.extend(page["entries"])
    assert got == expected


def sample_places(
    board: Board, rng: random.Random, count: int
) -> list[tuple[str, str, str, int, list[str]]]:
    """(window, period, player, rank, the period's ranking) for random ranked players."""
    places = []
    wheres = sorted(board.model.periods)
    for _ in range(count):
        where = rng.choice(wheres)
        ranking = board.model.ranking(where)
        # favour the edges: first, last, and exact ties live there
        rank = rng.choice([1, 2, len(ranking), rng.randint(1, len(ranking))])
        places.append((*where, ranking[rank - 1], rank, ranking))
    return places


@BOARDS
async def test_player_around_and_friends_match_the_model(
    client: httpx.AsyncClient, boards: dict[str, Board], policy: str
) -> None:
    board = boards[policy]
    model = board.model
    rng = random.Random(SEED + 1)
    base = f"/v1/boards/{board.board_id}/players"
    all_players = sorted({p for entries in model.periods.values() for p in entries})
    for window, period, player, rank, ranking in sample_places(board, rng, 60):
        where = (window, period)
        total = len(ranking)
        got = await read(client, f"{base}/{player}", window=window, period=period)
        assert got == {
            "board_id": board.board_id,
            "window": window,
            "period": period,
            **model.entry(where, player, rank),
            "total": total,
            "percentile": pytest.approx(100 * (total - rank + 1) / total, abs=1e-3),
        }

        got = await read(client, f"{base}/{player}/around", window=window, period=period, range=3)
        first = max(0, rank - 1 - 3)
        near = ranking[first : rank + 3]
        assert got["entries"] == [model.entry(where, p, first + i + 1) for i, p in enumerate(near)]
        assert got["entries"][rank - 1 - first]["player_id"] == player

        friends = [*rng.sample(all_players, 12), "nobody-here", player]
        got = await read(
            client,
            f"{base}/{player}/friends",
            window=window,
            period=period,
            ids=",".join(friends),
        )
        present = sorted(
            {player, *(f for f in friends if f in model.periods[where])}, key=ranking.index
        )
        assert got["entries"] == [
            {**model.entry(where, p, ranking.index(p) + 1), "position": i + 1}
            for i, p in enumerate(present)
        ]

    # a player with no entry in a period is not ranked there
    for where, entries in sorted(model.periods.items()):
        absent = [p for p in all_players if p not in entries]
        if absent:
            window, period = where
            response = await client.get(
                f"{base}/{absent[0]}", params={"window": window, "period": period}
            )
            assert response.status_code == 404, response.text
            assert response.json()["error"]["code"] == "player_not_ranked"
            break
    else:
        pytest.fail("every player is in every period: the data set is too dense")


@BOARDS
async def test_rank_of_matches_the_model(
    client: httpx.AsyncClient, boards: dict[str, Board], policy: str
) -> None:
    board = boards[policy]
    model = board.model
    rng = random.Random(SEED + 2)
    url = f"/v1/boards/{board.board_id}/rank-of"
    for where in [*rng.sample(sorted(model.periods), 8), ("all-time", "all-time")]:
        scores = [e.score for e in model.periods[where].values()]
        probes = {0, 1, MAX_SCORE, max(scores), max(scores) + 1, min(scores), *HIGH_SCORES}
        for s in rng.sample(scores, min(6, len(scores))):
            probes |= {s - 1, s, s + 1}
        for score in sorted(p for p in probes if p >= 0):
            got = await read(client, url, window=where[0], period=where[1], score=score)
            assert got["rank"] == 1 + sum(1 for s in scores if s >= score), (where, score)
            assert got["total"] == len(scores)


@BOARDS
async def test_every_touched_period_is_listed_open(
    client: httpx.AsyncClient, boards: dict[str, Board], policy: str
) -> None:
    board = boards[policy]
    for window in WINDOWS[1:]:
        got = await read(client, f"/v1/boards/{board.board_id}/periods", window=window)
        status = {p["period"]: p["status"] for p in got["periods"]}
        touched = {p for w, p in board.model.periods if w == window}
        assert touched <= set(status), (window, touched - set(status))
        assert all(status[p] == "open" for p in touched)


async def test_a_resent_counted_run_is_reported_as_counted_on_a_sum_board(
    boards: dict[str, Board],
) -> None:
    """CONTRACT: ``is_best`` on a sum board is "true when this run was counted", and a
    resend must be harmless; like a resent best run (``improved: false, is_best: true``),
    a resent counted run is still counted in the entry. A game server retrying after a lost
    response must not be told its run did not count."""
    board = boards["sum"]
    seen: set[str] = set()
    resends = 0
    for run, _, got in board.checked:
        if run.run_id in seen:
            resends += 1
            for s in got:
                assert not s["improved"], (run, s)
                assert s["is_best"], (run, s)
        seen.add(run.run_id)
    assert resends > 0


async def test_many_concurrent_submits_are_all_accepted(client: httpx.AsyncClient) -> None:
    """200 single submits in flight at once (a modest burst for a game backend) must all be
    accepted and applied: a 503 here would leave logged runs missing from the boards."""
    board_id = new_board_id("burst")
    response = await client.put(
        f"/v1/boards/{board_id}", json={"windows": ["all-time", "daily"]}, headers=ADMIN_H
    )
    assert response.status_code == 201, response.text
    responses = await asyncio.gather(
        *(
            client.post(
                f"/v1/boards/{board_id}/runs",
                json={"run_id": f"burst-{i}", "player_id": f"p{i}", "score": i},
                headers=SERVER_H,
            )
            for i in range(200)
        )
    )
    failed = [r.json() for r in responses if r.status_code != 200]
    assert not failed, f"{len(failed)} of 200 failed, e.g. {failed[0]}"
    top = await read(client, f"/v1/boards/{board_id}/top", n=1000)
    assert top["total"] == 200
    assert [e["score"] for e in top["entries"]] == list(range(199, -1, -1))
