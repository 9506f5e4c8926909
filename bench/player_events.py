"""Player event streams at scale: what N open player streams cost one instance, beside N
board streams in the same run.

N players hold a board; each player's stream (GET /v1/players/{id}/events?boards=B, a server
key) is opened over a plain socket, and the instance's RSS is read before and after they
connect, its CPU while they idle (heartbeats only); then one submit taking the top spot,
which moves every player down one rank: how long until every stream has its `standing`
event. Baseline, same servers, a fresh `rankd serve` process: N board streams
(GET /v1/boards/B/events) and the same submit reaching each as a `top` event.

python -m bench.player_events [--quick] [--streams 10000] [--idle-s 20]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import time
from typing import Any

import httpx
import orjson

from bench.common import ADMIN_H, SERVER, SERVER_H, servers, service_process, write_result
from bench.events import cpu_seconds, pct, rss_mib

BOARD = "player-events"


class Stream:
    """One event stream over a plain socket, noting when each event of ``kind`` arrives."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, kind: str
    ) -> None:
        self.reader, self.writer, self.kind = reader, writer, kind
        self.arrivals: list[float] = []

    @classmethod
    async def open(cls, port: int, path: str, kind: str) -> Stream:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        request = f"GET {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {SERVER}\r\n\r\n"
        writer.write(request.encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head.decode(errors="replace"))
        return cls(reader, writer, kind)

    async def run(self) -> None:
        marker = f"event: {self.kind}".encode()
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if marker in chunk:
                    self.arrivals.append(time.perf_counter())

    def close(self) -> None:
        self.writer.close()


async def held(port: int, pid: int, paths: list[str], kind: str, idle_s: float) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        warm = await Stream.open(port, paths[0], kind)  # the process warmed, then measured
        warm.close()
        await asyncio.sleep(1)
        rss_before = rss_mib(pid)
        began = time.perf_counter()
        streams: list[Stream] = []
        for i in range(0, len(paths), 100):
            streams += await asyncio.gather(
                *(Stream.open(port, p, kind) for p in paths[i : i + 100])
            )
        readers = [asyncio.create_task(s.run()) for s in streams]
        while sum(1 for s in streams if s.arrivals) < len(streams):  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        connect_s = time.perf_counter() - began
        await asyncio.sleep(3)
        rss_after = rss_mib(pid)
        cpu_before, wall_before = cpu_seconds(pid), time.perf_counter()
        await asyncio.sleep(idle_s)
        cpu_idle = cpu_seconds(pid) - cpu_before
        wall_idle = time.perf_counter() - wall_before
        for s in streams:
            s.arrivals.clear()
        run = {"run_id": f"top-{kind}", "player_id": f"leader-{kind}", "score": 10**9}
        response = await http.post(f"/v1/boards/{BOARD}/runs", json=run, headers=SERVER_H)
        response.raise_for_status()
        acked = time.perf_counter()
        deadline = acked + 60
        while time.perf_counter() < deadline and not all(s.arrivals for s in streams):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        fanout = [(s.arrivals[0] - acked) * 1000 for s in streams if s.arrivals]
        for s in streams:
            s.close()
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    return {
        "streams": len(streams),
        "connect_all_s": round(connect_s, 1),
        "rss_before_mib": round(rss_before, 1),
        "rss_with_streams_mib": round(rss_after, 1),
        "rss_per_stream_kib": round((rss_after - rss_before) * 1024 / len(streams), 1),
        "idle_cpu_percent": round(100 * cpu_idle / wall_idle, 2),
        "fanout_streams_reached": len(fanout),
        "fanout_p50_ms": round(pct(fanout, 50), 1) if fanout else None,
        "fanout_p99_ms": round(pct(fanout, 99), 1) if fanout else None,
        "fanout_last_ms": round(max(fanout), 1) if fanout else None,
    }


async def seed(port: int, n: int) -> None:
    """A board with players p0..p{n-1}, p{i} scoring i."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        (await http.put(f"/v1/boards/{BOARD}", json={}, headers=ADMIN_H)).raise_for_status()
        for i in range(0, n, 1000):
            runs = [
                {"run_id": f"seed{j}", "player_id": f"p{j}", "score": j}
                for j in range(i, min(n, i + 1000))
            ]
            response = await http.post(
                f"/v1/boards/{BOARD}/runs:batch", json={"runs": runs}, headers=SERVER_H
            )
            response.raise_for_status()


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    n = args.streams
    env = {
        "RANKD_LIVE_MAX_PLAYER_STREAMS": str(n + 10),
        "RANKD_LIVE_MAX_STREAMS": str(n + 10),
        "RANKD_LIVE_MAX_STREAMS_PER_ADDRESS": "0",
        "RANKD_HTTP_MAX_CONNECTIONS": str(n + 1000),
        "RANKD_HTTP_MAX_CONNECTIONS_PER_ADDRESS": "0",
        "RANKD_LIVE_HEARTBEAT_S": "15",
    }
    with servers() as stack:
        # each kind in a process of its own: memory a process freed is not given back to
        # the system, so the second kind would look free in the first one's process
        with service_process(stack, extra_env=env) as (port, process):
            await seed(port, n)
            players = [f"/v1/players/p{i}/events?boards={BOARD}&friends=p{i + 1}" for i in range(n)]
            mine = await held(port, process.pid, players, "standing", args.idle_s)
        with service_process(stack, extra_env=env) as (port, process):
            board = [f"/v1/boards/{BOARD}/events?n=10" for _ in range(n)]
            baseline = await held(port, process.pid, board, "top", args.idle_s)
    return {"player_streams": mine, "baseline_board_streams": baseline}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 streams, 5 s idle")
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--idle-s", type=float, default=20.0)
    args = parser.parse_args()
    if args.quick:
        args.streams, args.idle_s = 1000, 5.0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(
        resource.RLIMIT_NOFILE, (max(soft, min(hard, 2 * args.streams + 4096)), hard)
    )
    result = asyncio.run(main_async(args))
    command = "python -m bench.player_events" + (" --quick" if args.quick else "")
    write_result(
        "player_events",
        {
            "command": command,
            "method": "N streams over plain sockets from one client process, held by one "
            "`rankd serve --workers 1`; RSS from /proc/<pid>/status, CPU from /proc/<pid>/stat "
            "while idle; then one submit taking the top spot (every player moves down one) "
            "and the time until every stream has its event. Baseline: N board streams, same "
            "process and board.",
            **result,
        },
    )
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
