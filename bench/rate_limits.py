"""Rate limits: one key flooding is refused, and another key's latency is not hurt by it.

Against ``rankd serve`` on embedded servers, with every key limited to ``--key-rate``
requests/s (burst the same). A polite key reads the top 10 at a fixed rate (open loop,
latency from each request's scheduled start): alone (idle), then while a second key floods
the same endpoint at several times its limit, alternating for a few rounds. Reported: the
flooder's share of 429s and the polite key's p50/p99 idle and during the flood, with their
ratio (the issue's bar: p99 within 2x of idle), and the polite key's 429s (must be none).
The same flood against a service with limits off is the control.

Then what the limiter costs: closed-loop top-10 reads with limits on and off
(``RANKD_RATE_KEY_PER_S=0``), each on a fresh ``rankd serve``.

    python -m bench.rate_limits [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from bench.common import (
    SERVER,
    SERVER_H,
    Latencies,
    closed_loop,
    create_board,
    machine_line,
    open_loop,
    servers,
    service,
    write_result,
)
from bench.rawhttp import Connection

FLOODER, POLITE = "bench-flooder", "bench-polite"


class KeyedPool:
    """Keep-alive connections that all send one bearer key."""

    def __init__(self, port: int, key: str, size: int) -> None:
        self.port, self.size = port, size
        self.headers = {"Authorization": f"Bearer {key}"}
        self.idle: asyncio.Queue[Connection] = asyncio.Queue()

    async def open(self) -> KeyedPool:
        for _ in range(self.size):
            self.idle.put_nowait(await Connection.open("127.0.0.1", self.port))
        return self

    async def get(self, path: str) -> int:
        conn = await self.idle.get()
        try:
            status, _ = await conn.request("GET", path, headers=self.headers)
        except (OSError, asyncio.IncompleteReadError):
            conn = await Connection.open("127.0.0.1", self.port)
            raise
        finally:
            self.idle.put_nowait(conn)
        return status

    async def close(self) -> None:
        while not self.idle.empty():
            await self.idle.get_nowait().close()


def counting(
    pool: KeyedPool, path: str, statuses: Counter[int]
) -> Callable[[int], Awaitable[bool]]:
    async def call(_: int) -> bool:
        try:
            status = await pool.get(path)
        except (OSError, asyncio.IncompleteReadError):
            statuses[0] += 1
            return False
        statuses[status] += 1
        return status == 200

    return call


def seed(port: int, board: str, players: int) -> None:
    create_board(port, board)
    url = f"http://127.0.0.1:{port}/v1/boards/{board}/runs:batch"
    for first in range(0, players, 1000):
        runs = [
            {"run_id": f"seed-{i}", "player_id": f"p{i}", "score": i * 7 % 100_003}
            for i in range(first, min(players, first + 1000))
        ]
        httpx.post(url, json={"runs": runs}, headers=SERVER_H, timeout=60).raise_for_status()


def summary(lat: Latencies) -> dict[str, float]:
    return {k: v for k, v in lat.summary().items() if k != "errors"}


class FloodProcess:
    """The flood, from a process of its own: in this one its event loop would delay the
    polite key's requests and the measurement would show the load generator. It starts
    (imports, connections) before a round and floods when told, so its start-up cost never
    lands in a measurement."""

    def __init__(self, child: asyncio.subprocess.Process) -> None:
        self.child = child

    @classmethod
    async def start(cls, port: int, path: str, rate: float, seconds: float) -> FloodProcess:
        spec = json.dumps({"port": port, "path": path, "rate": rate, "seconds": seconds})
        child = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "bench.rate_limits", "--flood-child", spec),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert child.stdout is not None
        if (await child.stdout.readline()).strip() != b"ready":
            raise RuntimeError("the flood process did not start")
        return cls(child)

    async def run(self, statuses: Counter[int]) -> Latencies:
        assert self.child.stdin is not None
        self.child.stdin.write(b"go\n")
        await self.child.stdin.drain()
        out, _ = await self.child.communicate()
        report = json.loads(out)
        statuses.update({int(k): v for k, v in report["statuses"].items()})
        return Latencies(report["seconds"], report["samples"])


async def flood_child(spec: dict[str, Any]) -> None:
    pool = await KeyedPool(spec["port"], FLOODER, 64).open()
    statuses: Counter[int] = Counter()
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    try:
        call = counting(pool, spec["path"], statuses)
        lat = await open_loop(call, spec["rate"], spec["seconds"], 64)
    finally:
        await pool.close()
    print(json.dumps({"statuses": statuses, "seconds": lat.seconds, "samples": lat.samples}))


def merged(records: list[Latencies]) -> Latencies:
    out = Latencies(sum(r.seconds for r in records))
    for r in records:
        out.samples += r.samples
        out.errors += r.errors
    return out


async def flood_phases(
    port: int,
    board: str,
    polite_rate: float,
    flood_rates: list[float],
    seconds: float,
    rounds: int,
    label: str,
) -> list[dict[str, Any]]:
    """For each flood rate, ``rounds`` times: the polite key alone, then beside the flood.
    Rounds alternate so that the machine's noise falls on both sides alike; the p99s are
    over every round's samples together."""
    path = f"/v1/boards/{board}/top?n=10"
    polite = await KeyedPool(port, POLITE, 16).open()
    try:
        await open_loop(counting(polite, path, Counter()), polite_rate, 1.0)  # warm-up
        phases = []
        for flood_rate in flood_rates:
            idle_statuses: Counter[int] = Counter()
            polite_statuses: Counter[int] = Counter()
            flood_statuses: Counter[int] = Counter()
            idles, durings, floods, round_ratios = [], [], [], []
            for _ in range(rounds):
                flooder = await FloodProcess.start(port, path, flood_rate, seconds)
                idle = await open_loop(counting(polite, path, idle_statuses), polite_rate, seconds)
                await asyncio.sleep(1.0)  # the flooder's key starts with its full burst again
                during, flood = await asyncio.gather(
                    open_loop(counting(polite, path, polite_statuses), polite_rate, seconds),
                    flooder.run(flood_statuses),
                )
                idles.append(idle)
                durings.append(during)
                floods.append(flood)
                round_ratios.append(round(during.pct(99) / idle.pct(99), 2))
            idle, during, flood = merged(idles), merged(durings), merged(floods)
            sent = sum(flood_statuses.values())
            phase = {
                "flood_offered_per_s": flood_rate,
                "flood_achieved_per_s": round(flood.rate, 1),
                "flood_statuses": {str(k): v for k, v in sorted(flood_statuses.items())},
                "flood_429_share": round(flood_statuses[429] / sent, 4) if sent else 0.0,
                "flood_200_per_s": round(flood_statuses[200] / flood.seconds, 1),
                "polite_idle": summary(idle),
                "polite_during_flood": summary(during),
                "polite_statuses_idle": {str(k): v for k, v in sorted(idle_statuses.items())},
                "polite_statuses_during": {str(k): v for k, v in sorted(polite_statuses.items())},
                "polite_429s": idle_statuses[429] + polite_statuses[429],
                "p50_ratio": round(during.pct(50) / idle.pct(50), 2),
                "p99_ratio": round(during.pct(99) / idle.pct(99), 2),
                "p99_ratio_per_round": round_ratios,
            }
            phases.append(phase)
            print(
                f"  {label}: flood {flood_rate:>6,.0f}/s offered ({flood.rate:,.0f}/s answered,"
                f" {phase['flood_429_share']:.1%} 429, {phase['flood_200_per_s']:,.0f}/s 200):"
                f" polite p50 {idle.pct(50):.2f} -> {during.pct(50):.2f} ms,"
                f" p99 {idle.pct(99):.2f} -> {during.pct(99):.2f} ms"
                f" ({phase['p99_ratio']:.2f}x; rounds {round_ratios}),"
                f" polite 429s {phase['polite_429s']}",
                flush=True,
            )
        return phases
    finally:
        await polite.close()


async def throughput(port: int, board: str, seconds: float) -> dict[str, float]:
    """Closed-loop top-10 reads, 32 connections, one key well under its limit."""
    path = f"/v1/boards/{board}/top?n=10"
    pool = await KeyedPool(port, POLITE, 32).open()
    try:
        statuses: Counter[int] = Counter()
        await closed_loop(counting(pool, path, statuses), 32, 1.0)  # warm-up
        statuses.clear()
        lat = await closed_loop(counting(pool, path, statuses), 32, seconds)
        return {**summary(lat), "non_200": sum(v for k, v in statuses.items() if k != 200)}
    finally:
        await pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter phases")
    parser.add_argument("--key-rate", type=float, default=200.0, help="each key's limit, /s")
    parser.add_argument("--polite-rate", type=float, default=100.0)
    parser.add_argument("--flood-rates", type=float, nargs="+", default=[1000.0, 2000.0])
    parser.add_argument("--flood-child", help=argparse.SUPPRESS)  # internal: one flood, JSON
    args = parser.parse_args()
    if args.flood_child:
        asyncio.run(flood_child(json.loads(args.flood_child)))
        return
    seconds = 3.0 if args.quick else 6.0
    rounds = 1 if args.quick else 3
    print(f"machine: {machine_line()}")
    keys = f"{SERVER},{FLOODER},{POLITE}"
    board = "bench-rate"
    rate = str(args.key_rate)
    result: dict[str, Any] = {}
    load = (args.polite_rate, args.flood_rates, seconds, rounds)
    with servers() as stack:
        limited = {
            "RANKD_SERVER_KEYS": keys,
            "RANKD_RATE_KEY_PER_S": rate,
            "RANKD_RATE_KEY_BURST": str(int(args.key_rate)),
        }
        with service(stack, extra_env=limited) as port:
            seed(port, board, 10_000)
            print(f"every key limited to {args.key_rate:g}/s; polite key at {args.polite_rate:g}/s")
            result["flood"] = asyncio.run(flood_phases(port, board, *load, "limited"))
        # the control: the same flood with limits off, every request served in full
        with service(stack, extra_env={**limited, "RANKD_RATE_KEY_PER_S": "0"}) as port:
            result["flood_unlimited"] = asyncio.run(flood_phases(port, board, *load, "no limit"))
        cost: dict[str, Any] = {}
        for label, key_rate in (("limits_on", "1000000"), ("limits_off", "0")):
            settings = {"RANKD_SERVER_KEYS": keys, "RANKD_RATE_KEY_PER_S": key_rate}
            with service(stack, extra_env=settings) as port:
                cost[label] = asyncio.run(throughput(port, board, seconds))
            print(
                f"  {label:<10}: {cost[label]['achieved_per_s']:,.0f} reads/s,"
                f" p50 {cost[label]['p50_ms']:.2f} ms, p99 {cost[label]['p99_ms']:.2f} ms",
                flush=True,
            )
        on, off = cost["limits_on"]["achieved_per_s"], cost["limits_off"]["achieved_per_s"]
        cost["throughput_ratio_on_to_off"] = round(on / off, 3) if off else None
        result["cost"] = cost
    write_result(
        "rate_limits",
        {
            **result,
            "workload": {
                "endpoint": "GET /v1/boards/{b}/top?n=10 (10,000 entries), bearer keys",
                "key_rate_per_s": args.key_rate,
                "key_burst": int(args.key_rate),
                "polite_rate_per_s": args.polite_rate,
                "flood_rates_per_s": args.flood_rates,
                "seconds_per_phase": seconds,
                "rounds": rounds,
                "service_workers": 1,
            },
        },
    )


if __name__ == "__main__":
    main()
