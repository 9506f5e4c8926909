"""Live updates: how soon a submit reaches a connected event stream, and what idle streams cost.

1. Latency: one client holds GET /v1/boards/{id}/events?n=10; single submits, each taking
   the top spot, are sent one at a time with a pause longer than the 10-per-second bound
   between them. Measured: from the submit's 2xx arriving to the `top` event that shows
   it arriving, on the same client clock. Baseline: a bare Redis PUBLISH to a redis-py
   subscriber, on the same servers (the floor of any pub/sub fan-out).
2. Idle streams: N streams (default 1,000) held by one `rankd serve` process; its RSS
   before and after they connect and its CPU while they idle (heartbeats only), then one
   submit and how long until every stream has its event.

python -m bench.events [--quick] [--submits 300] [--streams 1000] [--idle-s 30]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
from redis.asyncio import Redis

from bench.common import ADMIN_H, SERVER_H, servers, service_process, write_result

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


class RawStream:
    """One event stream over a plain socket: cheap enough to hold a thousand in one client."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.tops: list[tuple[float, dict[str, Any]]] = []
        self.heartbeats = 0
        self.changed = asyncio.Event()

    @classmethod
    async def open(cls, port: int, path: str) -> RawStream:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head.decode(errors="replace"))
        return cls(reader, writer)

    async def run(self) -> None:
        """Read chunked SSE until the server closes; note each top event's arrival."""
        kind, data = "", b""
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                for line in chunk[:-2].replace(b"\r\n", b"\n").split(b"\n"):
                    if line.startswith(b":"):
                        self.heartbeats += 1
                    elif line.startswith(b"event:"):
                        kind = line[6:].strip().decode()
                    elif line.startswith(b"data:"):
                        data += line[5:].strip()
                    elif not line and data:
                        if kind == "top":
                            self.tops.append((time.perf_counter(), orjson.loads(data)))
                            self.changed.set()
                        kind, data = "", b""

    def close(self) -> None:
        self.writer.close()


async def submit(http: httpx.AsyncClient, board: str, player: str, score: int) -> float:
    run = {"run_id": f"{player}-{score}", "player_id": player, "score": score}
    response = await http.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
    response.raise_for_status()
    return time.perf_counter()


def leader(top: dict[str, Any]) -> str | None:
    return top["entries"][0]["player_id"] if top["entries"] else None


async def latency(port: int, submits: int) -> dict[str, Any]:
    board = "live-latency"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
        created = await http.put(f"/v1/boards/{board}", json={}, headers=ADMIN_H)
        created.raise_for_status()
        stream = await RawStream.open(port, f"/v1/boards/{board}/events?n=10")
        reading = asyncio.create_task(stream.run())
        try:
            while not stream.tops:  # noqa: ASYNC110 (the first list)
                await asyncio.sleep(0.01)
            delays, submit_ms = [], []
            for i in range(submits):
                player = f"p{i}"
                began = time.perf_counter()
                acked = await submit(http, board, player, 1000 + i)
                submit_ms.append((acked - began) * 1000)
                while True:
                    arrived = next(
                        (at for at, top in stream.tops if leader(top) == player),
                        None,
                    )
                    if arrived is not None:
                        break
                    stream.changed.clear()
                    await asyncio.wait_for(stream.changed.wait(), 5)
                delays.append((arrived - acked) * 1000)
                stream.tops.clear()
                await asyncio.sleep(0.15)  # past the 10-per-second bound: no throttling
        finally:
            stream.close()
            reading.cancel()
    return {
        "submits": submits,
        "event_after_2xx_p50_ms": round(pct(delays, 50), 3),
        "event_after_2xx_p99_ms": round(pct(delays, 99), 3),
        "event_after_2xx_max_ms": round(max(delays), 3),
        "event_after_2xx_mean_ms": round(statistics.fmean(delays), 3),
        "submit_p50_ms": round(pct(submit_ms, 50), 3),
        "submit_p99_ms": round(pct(submit_ms, 99), 3),
    }


async def pubsub_baseline(redis_url: str, rounds: int) -> dict[str, Any]:
    """PUBLISH on one connection to receipt on a subscribed one: Redis and redis-py alone."""
    publisher, subscriber = Redis.from_url(redis_url), Redis.from_url(redis_url)
    pubsub = subscriber.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe("bench:pubsub")
    delays = []
    try:
        for _ in range(rounds):
            began = time.perf_counter()
            await publisher.publish("bench:pubsub", b'["b",[["all-time","all-time",""]]]')
            while await pubsub.get_message(timeout=5) is None:
                pass
            delays.append((time.perf_counter() - began) * 1000)
            await asyncio.sleep(0.01)
    finally:
        await pubsub.aclose()
        await publisher.aclose()
        await subscriber.aclose()
    return {"p50_ms": round(pct(delays, 50), 3), "p99_ms": round(pct(delays, 99), 3)}


async def idle_streams(port: int, pid: int, count: int, idle_s: float) -> dict[str, Any]:
    board = "live-idle"
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        (await http.put(f"/v1/boards/{board}", json={}, headers=ADMIN_H)).raise_for_status()
        for i in range(10):
            await submit(http, board, f"seed{i}", 100 + i)
        # warm the process (one stream, closed) so the figures are about the streams
        warm = await RawStream.open(port, f"/v1/boards/{board}/events?n=10")
        warm.close()
        await asyncio.sleep(1)
        rss_before = rss_mib(pid)
        began = time.perf_counter()
        streams: list[RawStream] = []
        for i in range(0, count, 50):
            streams += await asyncio.gather(
                *(
                    RawStream.open(port, f"/v1/boards/{board}/events?n=10")
                    for _ in range(min(50, count - i))
                )
            )
        readers = [asyncio.create_task(s.run()) for s in streams]
        while sum(1 for s in streams if s.tops) < count:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        connect_s = time.perf_counter() - began
        await asyncio.sleep(2)
        rss_after = rss_mib(pid)
        cpu_before, wall_before = cpu_seconds(pid), time.perf_counter()
        beats_before = sum(s.heartbeats for s in streams)
        await asyncio.sleep(idle_s)
        cpu_idle = cpu_seconds(pid) - cpu_before
        wall_idle = time.perf_counter() - wall_before
        beats = sum(s.heartbeats for s in streams) - beats_before
        # one submit that changes the list: how long until every stream shows it
        for s in streams:
            s.tops.clear()
        acked = await submit(http, board, "leader", 10_000)
        deadline = time.perf_counter() + 30
        while sum(1 for s in streams if s.tops) < count and time.perf_counter() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        fanout = [(s.tops[0][0] - acked) * 1000 for s in streams if s.tops]
        rss_end = rss_mib(pid)
        for s in streams:
            s.close()
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    return {
        "streams": count,
        "connect_all_s": round(connect_s, 2),
        "rss_before_mib": round(rss_before, 1),
        "rss_with_streams_mib": round(rss_after, 1),
        "rss_per_stream_kib": round((rss_after - rss_before) * 1024 / count, 1),
        "rss_after_fanout_mib": round(rss_end, 1),
        "idle_seconds": round(wall_idle, 1),
        "idle_cpu_percent": round(100 * cpu_idle / wall_idle, 2),
        "heartbeats_received": beats,
        "fanout_streams_reached": len(fanout),
        "fanout_p50_ms": round(pct(fanout, 50), 1) if fanout else None,
        "fanout_p99_ms": round(pct(fanout, 99), 1) if fanout else None,
        "fanout_last_ms": round(max(fanout), 1) if fanout else None,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    with (
        servers() as stack,
        service_process(
            stack,
            extra_env={
                "RANKD_LIVE_MAX_STREAMS": str(args.streams + 10),
                # every stream comes from this one address: no per-address caps here
                "RANKD_LIVE_MAX_STREAMS_PER_ADDRESS": "0",
                "RANKD_HTTP_MAX_CONNECTIONS_PER_ADDRESS": "0",
            },
        ) as (
            port,
            process,
        ),
    ):
        pid = process.pid
        baseline = await pubsub_baseline(stack.redis_url, args.submits)
        lat = await latency(port, args.submits)
        idle = await idle_streams(port, pid, args.streams, args.idle_s)
    return {"latency": lat, "baseline_pubsub": baseline, "idle": idle}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 submits, 10 s idle")
    parser.add_argument("--submits", type=int, default=300)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--idle-s", type=float, default=30.0)
    args = parser.parse_args()
    if args.quick:
        args.submits, args.idle_s = 100, 10.0
    result = asyncio.run(main_async(args))
    command = "python -m bench.events" + (" --quick" if args.quick else "")
    write_result(
        "events",
        {
            "command": command,
            "quick": args.quick,
            "method": {
                "latency": "one stream (n=10); single submits each taking the top spot, one "
                "at a time 150 ms apart; from the submit's 2xx to the top event showing it, "
                "same client clock",
                "baseline": "bare Redis PUBLISH to a redis-py subscriber, same servers",
                "idle": "streams (n=10) held by one `rankd serve --workers 1`; RSS from "
                "/proc/<pid>/status, CPU from /proc/<pid>/stat while only heartbeats flow "
                "(every 15 s); then one submit reaching every stream",
            },
            **result,
        },
    )
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
