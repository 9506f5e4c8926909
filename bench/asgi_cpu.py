"""CPU per request of the service's own layers, without an HTTP server or a load generator.

Under ``wrk`` on a shared two-core machine, req/s follows whatever else runs: runs of the
same code differ by tens of per cent, so a change worth a few per cent cannot be seen.
This stage drives the app (create_app, its lifespan entered, on real Redis, NATS and
PostgreSQL, as ``rankd serve`` runs it) straight through ASGI with 50 requests in flight,
and counts the CPU time of the process (``time.process_time``: this process's own CPU,
whatever the other processes take) per request: the ASGI stack, the routes, the Redis and
NATS clients, and for submits the in-process log consumer's PostgreSQL writes.

``--ab REF``: A (the code at git REF) against B (the working tree), each in a fresh process,
in A, B, B, A order for ``--rounds`` rounds, on the same servers and board (filled with
20,000 players as bench.wrk does):

    python -m bench.asgi_cpu --ab main --loads rank submit top10 --rounds 3
    python -m bench.asgi_cpu --ab main~1 --b main     # two commits, whatever the tree holds
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import MutableMapping, Sequence
from types import SimpleNamespace
from typing import Any

from bench.common import SERVER, create_board, servers, service_process
from bench.submits_measure import drain
from bench.wrk_ab import code_at
from bench.wrk_measure import fill_board, settle
from bench.wrk_runs import BOARD, PLAYERS

CONCURRENCY = 50


def request_for(
    load: str, i: int, rand: random.Random, prefix: str
) -> tuple[dict[str, Any], bytes]:
    """The ASGI scope and body of one request of ``load`` (as the wrk scripts send them)."""
    headers = [(b"host", b"bench"), (b"user-agent", b"bench")]
    body = b""
    if load == "rank":
        method, path = "GET", f"/v1/boards/{BOARD}/players/p{rand.randint(1, PLAYERS)}"
    elif load == "top10":
        method, path = "GET", f"/v1/boards/{BOARD}/top"
    else:
        method, path = "POST", f"/v1/boards/{BOARD}/runs"
        run = {"run_id": f"{prefix}-{i}", "player_id": f"p{rand.randint(1, PLAYERS)}"}
        body = json.dumps({**run, "score": rand.randrange(10**9)}).encode()
        headers += [
            (b"authorization", f"Bearer {SERVER}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 40000 + i % 50),
        "scheme": "http",
        "method": method,
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "state": {},
    }
    return scope, body


async def drive(load: str, requests: int) -> dict[str, Any]:
    """Run ``requests`` requests of ``load`` through the app; CPU and wall per request."""
    from rankd.api.app import create_app

    app = create_app(tune_gc=True)
    rand = random.Random(21)
    prefix = f"cpu{os.getpid()}t{time.time_ns()}"
    statuses: dict[int, int] = {}
    urls = SimpleNamespace(
        redis_url=os.environ["RANKD_REDIS_URL"],
        postgres_url=os.environ["RANKD_POSTGRES_URL"],
        nats_url=os.environ["RANKD_NATS_URL"],
    )
    async with app.router.lifespan_context(app):
        # the startup's own work (recovery, the log's backlog) settles before counting
        await asyncio.sleep(1.0)
        await drain(urls, 300)  # type: ignore[arg-type]
        queue = iter(range(requests))

        async def worker() -> None:
            for i in queue:
                scope, body = request_for(load, i, rand, prefix)
                sent = False

                async def receive(body: bytes = body) -> dict[str, Any]:
                    nonlocal sent
                    if not sent:
                        sent = True
                        return {"type": "http.request", "body": body, "more_body": False}
                    await asyncio.Event().wait()  # never: the client does not go away
                    raise AssertionError

                async def send(message: MutableMapping[str, Any]) -> None:
                    if message["type"] == "http.response.start":
                        statuses[message["status"]] = statuses.get(message["status"], 0) + 1

                await app(scope, receive, send)

        # warm up: imports, connection pools, caches
        warm = iter(range(requests, requests + 500))  # run ids of their own
        saved, queue = queue, warm
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        queue = saved
        statuses.clear()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        # a submit's work ends when the in-process log consumer has written it
        await drain(urls, 300)  # type: ignore[arg-type]
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {
        "load": load,
        "requests": requests,
        "cpu_us_per_request": round(cpu / requests * 1e6, 1),
        "wall_us_per_request": round(wall / requests * 1e6, 1),
        "statuses": statuses,
    }


def run_side(env: dict[str, str], load: str, requests: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.asgi_cpu", "--drive", load, "--requests", str(requests)]
    done = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    bad = {s: n for s, n in result["statuses"].items() if not 200 <= int(s) < 300}
    if bad:
        raise RuntimeError(f"{load}: answers other than 2xx: {bad}")
    return result


def ab(
    ref: str, loads: Sequence[str], requests: int, rounds: int, b_ref: str | None = None
) -> dict[str, Any]:
    slots: list[dict[str, Any]] = []
    with (
        code_at(ref) as a_src,
        contextlib.ExitStack() as trees,
        servers() as stack,
    ):
        b_src = trees.enter_context(code_at(b_ref)) if b_ref else None
        env = {
            "RANKD_REDIS_URL": stack.redis_url,
            "RANKD_POSTGRES_URL": stack.postgres_url,
            "RANKD_NATS_URL": stack.nats_url,
            "RANKD_ADMIN_KEYS": "bench-admin",
            "RANKD_SERVER_KEYS": SERVER,
            "RANKD_LOG_LEVEL": "warning",
        }
        with service_process(stack, 1) as (port, _):
            create_board(port, BOARD, windows=["all-time"])
            fill_board(port)
            settle(stack)
        envs = {"A": {**env, "PYTHONPATH": str(a_src)}, "B": env}
        if b_src is not None:
            envs["B"] = {**env, "PYTHONPATH": str(b_src)}
        for r in range(rounds):
            for side in "ABBA":
                for load in loads:
                    found = run_side(envs[side], load, requests)
                    slots.append({"round": r, "side": side, **found})
                    print(
                        f"  round {r + 1} {side} {load:6}: {found['cpu_us_per_request']:,.1f} µs"
                        f" CPU/request (wall {found['wall_us_per_request']:,.1f} µs)",
                        flush=True,
                    )
    summary = {}
    b_name = b_ref or "this tree"
    print(f"\nA/B: A = {ref}, B = {b_name}; {rounds} ABBA rounds of {requests:,} requests")
    for load in loads:
        cpu = {
            s: [x["cpu_us_per_request"] for x in slots if x["load"] == load and x["side"] == s]
            for s in "AB"
        }
        a, b = statistics.median(cpu["A"]), statistics.median(cpu["B"])
        spread = max(max(v) / min(v) - 1 for v in cpu.values())
        summary[load] = {
            "A": cpu["A"],
            "B": cpu["B"],
            "B_over_A": round(b / a, 3),
            "spread_within_side": round(spread, 3),
        }
        print(
            f"  {load:6}: A {a:,.1f} µs, B {b:,.1f} µs CPU/request: B/A {b / a:.3f} (runs of one"
            f" side differ by up to {spread:.1%})"
        )
    return {
        "ref": ref,
        "b_ref": b_name,
        "rounds": rounds,
        "requests": requests,
        "summary": summary,
        "slots": slots,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ab", metavar="REF", help="A/B the code at git REF against this tree")
    parser.add_argument(
        "--loads", nargs="+", default=["rank", "submit"], choices=["rank", "top10", "submit"]
    )
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--b", metavar="REF", help="B: the code at git REF (default: this tree)")
    parser.add_argument("--drive", choices=["rank", "top10", "submit"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drive:
        import uvloop

        print(json.dumps(uvloop.run(drive(args.drive, args.requests))))
        return
    if not args.ab:
        parser.error("--ab REF is required")
    from bench.common import write_result

    load_before = os.getloadavg()
    found = ab(args.ab, args.loads, args.requests, args.rounds, args.b)
    given = sys.argv[1:] if argv is None else list(argv)
    write_result(
        "asgi_cpu_ab",
        {
            "command": " ".join(["python -m bench.asgi_cpu", *given]),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            **found,
        },
    )


if __name__ == "__main__":
    main()
