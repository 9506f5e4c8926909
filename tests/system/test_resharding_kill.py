"""A live resharding survives its driver's death: `rankd serve` is killed (SIGKILL) in the
middle of the copy, started again, and the move resumes where its recorded progress says
and ends; runs keep arriving throughout, and every period's standings are then exactly a
plain model's, with none of the old layout's keys left in Redis.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
from redis.asyncio import Redis

from rankd.periods import period_at
from tests.support.wire import from_ms, iso
from tests.system.test_failures import ADMIN_H, SERVER_H, Deployment, deployment

DAY_MS = 86_400_000
DAYS = 120  # daily periods: the copy builds them one by one, long enough to be killed in

Where = tuple[str, str]


class Model:
    def __init__(self) -> None:
        self.best: dict[Where, dict[str, tuple[int, int]]] = defaultdict(dict)

    def apply(self, player: str, score: int, ended_ms: int) -> None:
        for window in ("all-time", "daily"):
            period = "all-time" if window == "all-time" else period_at("daily", ended_ms).id
            held = self.best[(window, period)]
            old = held.get(player)
            if old is None or score > old[0] or (score == old[0] and ended_ms < old[1]):
                held[player] = (score, ended_ms)

    def top(self, where: Where) -> list[tuple[str, int]]:
        held = self.best[where]
        by_id = sorted(held, key=lambda p: p.encode(), reverse=True)
        return [(p, held[p][0]) for p in sorted(by_id, key=lambda p: (-held[p][0], held[p][1]))]


class Sender:
    def __init__(self, d: Deployment, board: str, seed: int) -> None:
        self.d, self.board, self.rng = d, board, random.Random(seed)
        self.model = Model()
        self.sent = 0
        self.now_ms = int(time.time() * 1000)

    async def batch(self, n: int) -> None:
        runs: list[dict[str, Any]] = []
        ended: list[int] = []
        for _ in range(n):
            self.sent += 1
            # a day of the last DAYS, a distinct ms (ties of score go to the earlier run)
            ended.append(self.now_ms - self.rng.randrange(DAYS) * DAY_MS - self.sent)
            run: dict[str, Any] = {
                "run_id": f"r{self.sent}",
                "player_id": f"p{self.rng.randrange(400)}",
            }
            runs.append(
                run | {"score": self.rng.randrange(10**6), "ended_at": iso(from_ms(ended[-1]))}
            )
        for _ in range(100):  # 503 or no answer while the service restarts: resend
            try:
                response = await self.d.http.post(
                    f"/v1/boards/{self.board}/runs:batch", json={"runs": runs}, headers=SERVER_H
                )
                if response.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
        assert response.status_code == 200, response.text
        for run, at in zip(runs, ended, strict=True):
            self.model.apply(run["player_id"], run["score"], at)


async def board_state(d: Deployment, board: str) -> dict[str, Any]:
    response = await d.http.get(f"/v1/boards/{board}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_move_resumes_after_its_driver_is_killed_mid_copy(server_dir: Path) -> None:
    async with deployment(server_dir, RANKD_CONFIG_CACHE_TTL_S="0.5") as d:
        board = "reshard-kill"
        config = {
            "windows": ["all-time", "daily"],
            "grace_seconds": 31_536_000,
            "retention_days": {"daily": 3650},
        }
        response = await d.http.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)
        assert response.status_code == 201, response.text
        sender = Sender(d, board, seed=11)
        for _ in range(20):
            await sender.batch(1000)
        response = await d.http.put(f"/v1/boards/{board}", json={"shards": 4}, headers=ADMIN_H)
        assert response.status_code == 200, response.text

        # killed once the copy has built some periods and not all
        deadline = time.monotonic() + 60
        while True:
            moving = (await board_state(d, board)).get("resharding")
            assert moving is not None, "the move ended before it could be killed"
            if 0 < moving["done"] < moving["total"]:
                break
            assert time.monotonic() < deadline, moving
            await asyncio.sleep(0.02)
        d.kill_service()
        killed_at = moving
        await d.start_service()
        # runs keep coming while the move resumes and ends
        began = time.monotonic()
        while (moving := (await board_state(d, board)).get("resharding")) is not None:
            assert time.monotonic() - began < 120, moving
            await sender.batch(50)
        resumed_s = time.monotonic() - began
        await sender.batch(200)

        settled = await board_state(d, board)
        assert settled["shards"] == 4
        for where in sorted(sender.model.best):
            window, period = where
            expected = sender.model.top(where)
            response = await d.http.get(
                f"/v1/boards/{board}/top", params={"window": window, "period": period, "n": 1000}
            )
            assert response.status_code == 200, response.text
            page = response.json()
            assert page["total"] == len(expected), where
            assert [(e["player_id"], e["score"]) for e in page["entries"]] == expected, where

        # only the new layout's keys hold standings: no unsharded key is left
        redis = Redis.from_url(d.servers.redis_url)
        try:
            left = [k async for k in redis.scan_iter(match=f"lb:{{{board}:*", count=1000)]
        finally:
            await redis.aclose()
        tags = {k.decode().split("}")[0] + "}" for k in left}
        assert tags and all("#" in t for t in tags), sorted(tags)[:5]
        print(
            f"killed at {killed_at}; the move ended {resumed_s:.1f}s after the restart;"
            f" {sender.sent} runs acknowledged, 0 lost: {len(sender.model.best)} periods match"
        )
