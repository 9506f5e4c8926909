"""Concurrent callers' Redis calls share pipelines, and each gets exactly its own answers."""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from rankd.stores.redis import keys
from rankd.stores.redis.batch import Batcher, fold
from rankd.stores.redis.scripts import (
    ENTRY,
    FOLD_MAX_ARGS,
    RUN_IDS,
    SUBMIT_BEST,
    SUBMIT_BEST_MANY,
    Call,
    Command,
    load_all,
    send_requests,
)


def best(pk: keys.PeriodKeys, composite: int, member: str):  # type: ignore[no-untyped-def]
    args = (composite, member, 1000, "", 0, 0, "")
    return (SUBMIT_BEST, (pk.public, pk.public, pk.shadow, pk.applied), args)


async def test_each_caller_gets_its_own_results_from_shared_pipelines(redis: Redis) -> None:
    batcher = Batcher(redis, max_in_flight=2)
    pk = keys.period_keys(f"batch-{uuid.uuid4().hex[:8]}", "all-time", "all-time")
    sent = []

    async def caller(i: int) -> None:
        [reply] = await batcher.run([best(pk, 1000 + i, f"m{i}")])
        sent.append((i, reply))

    await asyncio.gather(*(caller(i) for i in range(200)))
    assert len(sent) == 200
    for i, reply in sent:
        assert reply[0] == 1 and reply[2] == 1000 + i  # its own entry, raised by its call
    # and the reads see every write
    found = await asyncio.gather(
        *(batcher.call((ENTRY, (pk.public,), (f"m{i}",))) for i in range(200))
    )
    assert [int(f[0]) for f in found] == [200] * 200
    assert sorted(int(f[2]) for f in found) == list(range(200))  # ranks 0..199


async def test_one_callers_error_is_its_own(redis: Redis) -> None:
    batcher = Batcher(redis)
    key = f"batch-err-{uuid.uuid4().hex[:8]}"
    await redis.set(key, "not a set")

    async def good() -> list[object]:
        return await batcher.run([], [("ZADD", (f"{key}:ok", 1, "m"))])

    async def bad() -> list[object]:
        return await batcher.run([], [("ZADD", (key, 1, "m"))])  # WRONGTYPE

    results = await asyncio.gather(good(), bad(), good(), return_exceptions=True)
    assert results[0] == [1] or results[0] == [0]
    assert isinstance(results[1], ResponseError)
    assert not isinstance(results[2], BaseException)


async def test_lost_scripts_are_reloaded_and_the_pipeline_resent(redis: Redis) -> None:
    batcher = Batcher(redis)
    pk = keys.period_keys(f"batch-ns-{uuid.uuid4().hex[:8]}", "all-time", "all-time")
    await redis.script_flush()
    [reply] = await batcher.run([best(pk, 5, "m")])
    assert reply[0] == 1


async def test_a_dead_connection_fails_every_waiter(urls) -> None:  # type: ignore[no-untyped-def]
    dead = Redis.from_url("redis://127.0.0.1:9/0", socket_connect_timeout=0.5)
    batcher = Batcher(dead)
    with pytest.raises(RedisConnectionError):
        await asyncio.gather(
            batcher.call((ENTRY, ("k",), ("m",))), batcher.call((ENTRY, ("k",), ("n",)))
        )
    await dead.aclose()


async def test_folded_calls_answer_as_single_calls_would(redis: Redis) -> None:
    """Concurrent submit_best calls on one period fold into one submit_best_many; each
    caller's reply is what its own call, sent in the same order, answers."""
    board = f"batch-fold-{uuid.uuid4().hex[:8]}"
    pk = keys.period_keys(board, "all-time", "all-time")
    single = keys.period_keys(board + "-single", "all-time", "all-time")
    scores = [(i * 7919) % 50 for i in range(60)]  # repeats: some calls change nothing
    batcher = Batcher(redis, max_in_flight=1)
    folded = await asyncio.gather(
        *(batcher.run([best(pk, s, f"m{i % 20}")]) for i, s in enumerate(scores))
    )
    alone = [await batcher.run([best(single, s, f"m{i % 20}")]) for i, s in enumerate(scores)]
    assert folded == alone
    assert await redis.zrange(pk.public, 0, -1, withscores=True) == await redis.zrange(
        single.public, 0, -1, withscores=True
    )


async def test_a_call_between_on_the_same_keys_keeps_the_order(redis: Redis) -> None:
    """A call on a folded group's keys ends the group: a later submit_best goes after it."""
    board = f"batch-order-{uuid.uuid4().hex[:8]}"
    pk = keys.period_keys(board, "all-time", "all-time")
    batcher = Batcher(redis, max_in_flight=1)
    first, read, last = await asyncio.gather(
        batcher.run([best(pk, 10, "a")]),
        batcher.call((ENTRY, (pk.public,), ("b",))),
        batcher.run([best(pk, 20, "b")]),
    )
    assert first[0][0] == 1 and last[0][0] == 1
    assert int(read[0]) == 1  # the read ran between the writes: one entry, not yet b's


async def test_run_id_claims_fold(redis: Redis) -> None:
    board = f"batch-ids-{uuid.uuid4().hex[:8]}"
    armed, bucket = keys.run_ids_armed(board), keys.run_ids(board, 1)
    await redis.set(armed, "1")
    batcher = Batcher(redis, max_in_flight=1)

    def claim(run_id: str, score: int) -> Call:
        return (RUN_IDS, (armed, bucket), (2_000_000_000, run_id, "p", str(score), "5", "1"))

    replies = await asyncio.gather(
        batcher.call(claim("r1", 1)),
        batcher.call(claim("r2", 2)),
        batcher.call(claim("r1", 3)),
        batcher.call(claim("r1", 1)),
    )
    # gather's result is a list (typeshed calls it a tuple)
    assert list(replies) == [[5], [5], [-1], [5]]  # the first send of r1 wins, its resend agrees
    await redis.delete(armed)
    assert await batcher.call(claim("r3", 1)) == -2


def random_requests(seed: int, board: str) -> list[tuple[list[Call], list[Command]]]:
    """A pipeline's worth of requests on two periods (each player on the public side or
    shadowed) and one run-id registry: submit_best and submit_best_many calls, run-id
    claims (the buckets in either order), reads, and commands between them (the registry
    armed or disarmed, a count); ``now`` within 50 ms, as one pipeline's requests have."""
    rng = random.Random(seed)
    pks = [keys.period_keys(board, "all-time", p) for p in ("a", "b")]
    armed, buckets = keys.run_ids_armed(board), [keys.run_ids(board, b) for b in (1, 2)]
    players = [f"p{i}" for i in range(4)]

    def item() -> list[Any]:
        mark = rng.choice(["", f"{rng.choice(players)}|r{rng.randint(0, 9)}"])
        meta = rng.choice(["", f'{{"car":{rng.randint(0, 9)}}}'])
        ended = 1_700_000_000_000 + rng.randint(0, 5)
        return [rng.randint(0, 9), rng.choice(players), ended, mark, meta]

    requests: list[tuple[list[Call], list[Command]]] = []
    for _ in range(rng.randint(1, 12)):
        calls: list[Call] = []
        for _ in range(rng.randint(1, 3)):
            pk = rng.choice(pks)
            shadowed = rng.random() < 0.3
            sides = (
                (pk.shadow, pk.public, pk.public) if shadowed else (pk.public, pk.public, pk.shadow)
            )
            now = 1_700_000_000_000 + rng.randint(0, 50)
            kind = rng.random()
            if kind < 0.4:
                one = item()
                args = (*one[:4], now, now - 15_000, one[4])
                calls.append((SUBMIT_BEST, (*sides, pk.applied), args))
            elif kind < 0.55:
                quads = [a for _ in range(rng.randint(1, 3)) for a in item()]
                calls.append((SUBMIT_BEST_MANY, (*sides, pk.applied), (now, now - 15_000, *quads)))
            elif kind < 0.8:
                runs: list[Any] = []
                for _ in range(rng.randint(1, 2)):
                    run_id, player = f"r{rng.randint(0, 5)}", rng.choice(players)
                    runs += [run_id, player, str(rng.randint(0, 2)), str(rng.randint(0, 2))]
                    runs.append(rng.choice(["0", "1"]))
                order = buckets if rng.random() < 0.8 else buckets[::-1]
                calls.append((RUN_IDS, (armed, *order), (2_000_000_000, *runs)))
            else:
                calls.append((ENTRY, (pk.public,), (rng.choice(players),)))
        extra: list[Command] = []
        r = rng.random()
        if r < 0.05:
            extra.append(("DEL", (armed,)))
        elif r < 0.15:
            extra.append(("SET", (armed, "1")))
        elif r < 0.25:
            extra.append(("ZCARD", (rng.choice(pks).public,)))
        requests.append((calls, extra))
    return requests


async def period_state(redis: Redis, board: str) -> dict[str, Any]:
    """Every key the requests above can write, by name with the board left out (the marks
    without their times: a folded call stamps its members' marks with the latest now)."""
    names = [keys.run_ids_armed(board), *(keys.run_ids(board, b) for b in (1, 2))]
    for p in ("a", "b"):
        pk = keys.period_keys(board, "all-time", p)
        names += [pk.public, pk.shadow, pk.applied, pk.meta]
        for i in range(4):  # each player's exact-times hash (lib.lua at_key)
            h = 0
            for byte in f"p{i}".encode():
                h = (h * 256 + byte) % 65521
            names.append(f"{pk.public}:at:{h}")
    state: dict[str, Any] = {}
    for name in names:
        raw_kind = await redis.type(name)
        assert isinstance(raw_kind, bytes)
        kind = raw_kind.decode()
        if kind == "zset":
            if name.endswith(":applied"):
                state[name.replace(board, "B")] = sorted(await redis.zrange(name, 0, -1))
            else:
                state[name.replace(board, "B")] = await redis.zrange(name, 0, -1, withscores=True)
        elif kind == "hash":
            state[name.replace(board, "B")] = await redis.hgetall(name)
        elif kind == "string":
            state[name.replace(board, "B")] = await redis.get(name)
    return state


async def test_folded_pipelines_answer_and_write_as_unfolded_ones(redis: Redis) -> None:
    """fold() against the pipeline it replaces, on random mixes of foldable calls, calls
    and commands between them on shared keys, and requests whose calls fold only in part:
    every request's replies, and every key afterwards, are the same."""
    await load_all(redis)  # a NOSCRIPT resend would run the plain pipeline's commands twice
    for seed in range(300):
        tag = uuid.uuid4().hex[:8]
        plain_board, folded_board = f"fold-p-{tag}", f"fold-f-{tag}"
        if seed % 4:
            await redis.set(keys.run_ids_armed(plain_board), "1")
            await redis.set(keys.run_ids_armed(folded_board), "1")
        plain = random_requests(seed, plain_board)
        flat = await send_requests(redis, plain)
        unfolded: list[list[Any]] = []
        for calls, extra in plain:
            unfolded.append(flat[: len(calls) + len(extra)])
            flat = flat[len(calls) + len(extra) :]
        sent, replies = fold(random_requests(seed, folded_board))
        assert replies(await send_requests(redis, sent)) == unfolded, seed
        state = await period_state(redis, plain_board)
        assert state == await period_state(redis, folded_board), seed


async def test_a_fold_keeps_within_what_redis_takes_per_command(redis: Redis) -> None:
    """25,000 calls on one key (125,000 item arguments) fold into calls of at most
    FOLD_MAX_ARGS item arguments, in order, and answer as the single calls would."""
    board = f"batch-bound-{uuid.uuid4().hex[:8]}"
    pk = keys.period_keys(board, "all-time", "all-time")
    calls = [best(pk, (i * 7919) % 5000, f"m{i % 3000}") for i in range(25_000)]
    sent, replies = fold([(calls, [])])
    [(folded, _)] = sent
    assert len(folded) == -(-25_000 * 5 // FOLD_MAX_ARGS)
    assert all(len(args) - 2 <= FOLD_MAX_ARGS for _, _, args in folded)
    together = replies(await send_requests(redis, sent))[0]
    single = keys.period_keys(board + "-single", "all-time", "all-time")
    pipe_calls = [best(single, (i * 7919) % 5000, f"m{i % 3000}") for i in range(25_000)]
    alone = await send_requests(redis, [(pipe_calls, [])])
    assert together == alone
    await redis.delete(pk.public, pk.applied, single.public, single.applied)
