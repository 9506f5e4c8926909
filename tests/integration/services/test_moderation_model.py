"""Moderation against an in-memory model: a random mix of submits (some concurrent), bans,
unbans, approvals and rejections on a board that holds runs entering its top 2.

After every step: the public top is exactly the model's (no banned player, no run waiting
for review), the holds listed are the model's, and every player's own view puts them at
the rank they would have if published.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.common import ADMIN_H, SERVER_H, new_board_id

HOLD_TOP = 2
PLAYERS = ["p0", "p1", "p2", "p3", "p4"]

submit_op = st.tuples(
    st.just("submit"),
    st.lists(
        st.tuples(st.sampled_from(PLAYERS), st.integers(1, 500)),
        min_size=1,
        max_size=3,
        unique_by=lambda run: run[0],
    ),
)
ban_op = st.tuples(st.sampled_from(["ban", "unban"]), st.sampled_from(PLAYERS))
decide_op = st.tuples(st.sampled_from(["approve", "reject"]), st.integers(0, 10))
operations = st.lists(st.one_of(submit_op, submit_op, ban_op, decide_op), min_size=4, max_size=18)


# An entry as the model orders it: (score, ended ms). Every run gets its own ms, so equal
# scores are ordered by who got there first, as the service orders them (to the ms).
Entry = tuple[int, int]


def ahead(a: Entry, b: Entry) -> bool:
    """Whether entry ``a`` ranks before ``b``: a higher score, or the same one earlier."""
    return a[0] > b[0] or (a[0] == b[0] and a[1] < b[1])


def best(a: Entry | None, b: Entry) -> Entry:
    return b if a is None or ahead(b, a) else a


@dataclass
class Model:
    published: dict[str, Entry] = field(default_factory=dict)  # best public entry per player
    waiting: dict[str, tuple[str, Entry]] = field(default_factory=dict)  # run id -> entry
    banned: set[str] = field(default_factory=set)

    def ranked(self) -> list[tuple[str, Entry]]:
        shown = [(p, e) for p, e in self.published.items() if p not in self.banned]
        return sorted(shown, key=lambda pe: (-pe[1][0], pe[1][1]))

    def public(self) -> list[tuple[str, int]]:
        return [(p, e[0]) for p, e in self.ranked()]

    def would_hold(self, player: str, entry: Entry) -> bool:
        if player in self.banned:
            return False
        above = sum(1 for _, e in self.ranked() if ahead(e, entry))
        held = self.published.get(player)
        return above < HOLD_TOP and (held is None or ahead(entry, held))

    def own(self, player: str) -> tuple[int, int] | None:
        """(score, rank) in the player's own view; None: no entry anywhere."""
        mine: Entry | None = self.published.get(player)
        for p, entry in self.waiting.values():
            if p == player:
                mine = best(mine, entry)
        if mine is None:
            return None
        rank = 1 + sum(1 for p, e in self.ranked() if p != player and ahead(e, mine))
        return mine[0], rank


def stamp(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


async def submit(
    client: httpx.AsyncClient, board: str, run_id: str, player: str, score: int, ended_ms: int
) -> str:
    body = {"run_id": run_id, "player_id": player, "score": score, "ended_at": stamp(ended_ms)}
    response = await client.post(f"/v1/boards/{board}/runs", json=body, headers=SERVER_H)
    assert response.status_code == 200, response.text
    [standing] = response.json()["standings"]
    status: str = standing["status"]
    return status


async def check(client: httpx.AsyncClient, board: str, model: Model, players: list[str]) -> None:
    top = (await client.get(f"/v1/boards/{board}/top", params={"n": 100})).json()
    assert [(e["player_id"], e["score"]) for e in top["entries"]] == model.public()
    assert top["total"] == len(model.public())
    holds = (await client.get(f"/v1/boards/{board}/holds", headers=ADMIN_H)).json()["holds"]
    assert {h["run_id"] for h in holds} == set(model.waiting)
    for player in players:
        response = await client.get(
            f"/v1/boards/{board}/players/{player}", params={"viewer": player}, headers=SERVER_H
        )
        expected = model.own(player)
        if expected is None:
            assert response.status_code == 404, (player, response.text)
            continue
        assert response.status_code == 200, response.text
        got = response.json()
        assert (got["score"], got["rank"]) == expected, player


# How long the reads may take to show the model after an operation. A ban's sweep moves
# the player's entries before the call returns, and sweeps again once every instance and
# the log consumer have surely caught up (ban_settle_s, 0.6 s). One whole-suite run saw an
# unbanned player's entry missing from the public top right after the unban (not
# reproduced since; see CHANGELOG): the check allows that second sweep's window, and
# still fails on anything that does not settle. The second sweep waits for the log
# consumer first (up to 5 s), which a loaded machine needs: the bound is that, with room.
SETTLE_S = 10.0


async def settled_check(
    client: httpx.AsyncClient, board: str, model: Any, players: list[str]
) -> None:
    deadline = time.monotonic() + SETTLE_S
    while True:
        try:
            await check(client, board, model, players)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=operations)
async def test_public_reads_and_own_views_follow_the_model(
    client: httpx.AsyncClient, ops: list[tuple[str, Any]]
) -> None:
    board = new_board_id("mod")
    # bans are global: this example's players are its own
    name = {p: f"{board}-{p}" for p in PLAYERS}
    ops = [
        (op, [(name[p], s) for p, s in arg] if op == "submit" else name.get(arg, arg))
        for op, arg in ops
    ]
    # a weekly window and a max_score of 2^20 leave the composite 1 ms of time resolution,
    # so the hold check (composites strictly above) and the model's ties agree exactly
    config = {"hold_top": HOLD_TOP, "windows": ["weekly"], "max_score": 1 << 20}
    response = await client.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)
    assert response.status_code == 201
    model = Model()
    counter = itertools.count()
    # each run ends 1 ms after the one before, from a few seconds ago (within this week)
    now_ms = int(time.time() * 1000)
    week_ms = 7 * 86_400_000
    week_start = (now_ms - 4 * 86_400_000) // week_ms * week_ms + 4 * 86_400_000  # Monday
    start_ms = max(now_ms - 5_000, week_start)
    for op, arg in ops:
        if op == "submit":
            runs = []
            for n, (player, score) in enumerate(arg):
                k = next(counter)
                runs.append((f"r{k}", player, score * 1000 + n, start_ms + k))
            if len(runs) == 1:
                [(run_id, player, score, ended)] = runs
                expected = "held" if model.would_hold(player, (score, ended)) else "ranked"
                statuses = [await submit(client, board, run_id, player, score, ended)]
                assert statuses == [expected], (run_id, player, score)
            else:  # concurrent: the service decides, in some order; the model follows
                statuses = list(
                    await asyncio.gather(*(submit(client, board, *run) for run in runs))
                )
            for (run_id, player, score, ended), status in zip(runs, statuses, strict=True):
                if status == "held":
                    model.waiting[run_id] = (player, (score, ended))
                else:
                    model.published[player] = best(model.published.get(player), (score, ended))
        elif op in ("ban", "unban"):
            method = client.post if op == "ban" else client.delete
            response = await method(f"/v1/players/{arg}/ban", headers=ADMIN_H)
            assert response.status_code == 200
            # a player id is global: this board's model only needs the set
            (model.banned.add if op == "ban" else model.banned.discard)(arg)
        else:
            if not model.waiting:
                continue
            run_id = sorted(model.waiting)[arg % len(model.waiting)]
            response = await client.post(f"/v1/boards/{board}/holds/{run_id}/{op}", headers=ADMIN_H)
            assert response.status_code == 200, response.text
            player, entry = model.waiting.pop(run_id)
            if op == "approve":
                model.published[player] = best(model.published.get(player), entry)
        await settled_check(client, board, model, list(name.values()))
    # leave no player banned for the next example (bans are global)
    for player in model.banned:
        await client.delete(f"/v1/players/{player}/ban", headers=ADMIN_H)
