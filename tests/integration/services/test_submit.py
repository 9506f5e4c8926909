"""The submit service's coalescing: one submit_best_many call per key answers exactly what
the single submit_best calls would have, run by run."""

from __future__ import annotations

import random
import time
import uuid

from redis.asyncio import Redis

from rankd.boards import BoardConfig
from rankd.plan import plan
from rankd.runs import Run
from rankd.stores.redis.scripts import SUBMIT_BEST_MANY, run_pipeline
from rankd.stores.redis.writes import coalesce, script_call

NOW = int(time.time() * 1000)  # periods must be open: runs within their grace apply


def runs(seed: int) -> list[Run]:
    rng = random.Random(seed)
    made = []
    for i in range(300):
        player = f"p{rng.randrange(25)}"
        ended = NOW - rng.randrange(0, 3 * 86_400_000)
        made.append(Run(f"r{rng.randrange(200)}", player, rng.randrange(50), ended, NOW))
        if i % 7 == 0:
            made.append(made[rng.randrange(len(made))])  # a resend, anywhere in the batch
    return made


async def test_coalesced_calls_answer_like_single_calls(redis: Redis) -> None:
    config = dict(windows=("all-time", "daily", "weekly"), grace_seconds=10 * 86_400)
    together = BoardConfig(f"co-{uuid.uuid4().hex[:8]}", **config)  # type: ignore[arg-type]
    one_by_one = BoardConfig(f"single-{uuid.uuid4().hex[:8]}", **config)  # type: ignore[arg-type]
    batch = runs(seed=3)

    calls = [script_call(together, t) for r in batch for t in plan(together, r) if t.applies]
    sent, spread = coalesce(calls)
    assert len(sent) < len(calls) / 10
    assert any(call[0] is SUBMIT_BEST_MANY for call in sent)
    coalesced = spread(await run_pipeline(redis, sent))

    single = []
    for r in batch:
        for t in plan(one_by_one, r):
            if t.applies:
                [reply] = await run_pipeline(redis, [script_call(one_by_one, t)])
                single.append(reply)
    assert [list(r) for r in coalesced] == [list(r) for r in single]
    for window_keys in {
        (c[1][0], c[1][0].replace(together.board_id, one_by_one.board_id)) for c in calls
    }:
        a, b = window_keys
        assert await redis.zrange(a, 0, -1, withscores=True) == await redis.zrange(
            b, 0, -1, withscores=True
        )
