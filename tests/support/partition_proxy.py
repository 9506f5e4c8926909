"""A TCP proxy a test puts between every client and one server, to partition that server
from some processes while others still reach it (tests/system/test_partitions.py).

Run as ``python -m tests.support.partition_proxy LISTEN:TARGET...`` (ports; one process
can stand in front of several); it prints ``ready`` once it listens, then reads commands on
stdin, one a line, answering ``ok``:

* ``cut LISTEN PID...``: every connection to LISTEN opened by one of these processes (or
  opened later by one) gets nothing through, either way, as in a network partition: what
  they send is dropped, nothing comes back;
* ``drop LISTEN PID...``: these processes' connections to LISTEN are closed now (a reset
  on the way), so they connect again, and get through unless cut;
* ``heal``: the cut connections are closed (their sessions would have timed out in a real
  partition), so their owners connect again and get through.

A connection's owner is found from the kernel's socket table (/proc/net/tcp and the open
files of the processes named), so no process needs to cooperate. Loopback only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

HOST = "127.0.0.1"
CHUNK = 65536


def loopback_sockets() -> dict[tuple[int, int], str]:
    """The kernel's loopback TCP sockets: (local port, remote port) -> inode."""
    found: dict[tuple[int, int], str] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1].split(":"), fields[2].split(":")
        if local[0] == remote[0] == "0100007F":
            found[(int(local[1], 16), int(remote[1], 16))] = fields[9]
    return found


def sockets_of(pids: set[int]) -> set[str]:
    """The socket inodes these processes hold open (only theirs are read: fast)."""
    found: set[str] = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.scandir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(fd.path)
                    if target.startswith("socket:["):
                        found.add(target[8:-1])
    return found


class Link:
    """One client connection and its connection to the target."""

    def __init__(self, client: asyncio.StreamWriter, server: asyncio.StreamWriter) -> None:
        self.client = client
        self.server = server
        self.client_port = int(client.get_extra_info("peername")[1])
        self.cut = False

    def close(self) -> None:
        for writer in (self.client, self.server):
            with contextlib.suppress(Exception):
                writer.close()


class Proxy:
    """One listening port in front of one target port."""

    def __init__(self, listen_port: int, target_port: int) -> None:
        self.listen_port = listen_port
        self.target_port = target_port
        self.links: set[Link] = set()
        self.cut_pids: set[int] = set()

    async def _owned_by(self, links: list[Link], pids: set[int]) -> list[Link]:
        """Those of ``links`` whose client socket one of ``pids`` holds."""

        def find() -> list[Link]:
            sockets, theirs = loopback_sockets(), sockets_of(pids)
            return [
                link
                for link in links
                if sockets.get((link.client_port, self.listen_port)) in theirs
            ]

        return await asyncio.to_thread(find) if pids else []

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(HOST, self.target_port)
        except OSError:
            writer.close()
            return
        link = Link(writer, up_writer)
        self.links.add(link)
        if await self._owned_by([link], self.cut_pids):
            link.cut = True
        try:
            await asyncio.gather(
                self._pump(link, reader, up_writer), self._pump(link, up_reader, writer)
            )
        finally:
            self.links.discard(link)
            link.close()

    async def _pump(
        self, link: Link, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(CHUNK):
                if link.cut:
                    continue  # lost on the way, as in a partition
                writer.write(data)
                await writer.drain()
        link.close()

    async def cut(self, pids: set[int]) -> None:
        self.cut_pids = pids
        for link in await self._owned_by(list(self.links), pids):
            link.cut = True

    async def drop(self, pids: set[int]) -> None:
        for link in await self._owned_by(list(self.links), pids):
            link.close()

    def heal(self) -> None:
        self.cut_pids = set()
        for link in list(self.links):
            if link.cut:
                link.close()

    async def listen(self) -> asyncio.Server:
        return await asyncio.start_server(self._accept, HOST, self.listen_port)


async def serve(pairs: list[tuple[int, int]]) -> None:
    proxies = {listen: Proxy(listen, target) for listen, target in pairs}
    servers = [await proxy.listen() for proxy in proxies.values()]
    print("ready", flush=True)
    loop = asyncio.get_running_loop()
    commands = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    while line := (await commands.readline()).decode():
        words = line.split()
        if words[:1] == ["cut"]:
            await proxies[int(words[1])].cut({int(w) for w in words[2:]})
        elif words[:1] == ["drop"]:
            await proxies[int(words[1])].drop({int(w) for w in words[2:]})
        elif words[:1] == ["heal"]:
            for proxy in proxies.values():
                proxy.heal()
        print("ok", flush=True)
    for server in servers:
        server.close()


ROOT = Path(__file__).resolve().parents[2]


@dataclass
class ProxyProcess:
    """The proxy as a test drives it: started, told to cut and heal, stopped."""

    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, pairs: list[tuple[int, int]]) -> ProxyProcess:
        """A proxy listening on each pair's first port, forwarding to its second."""
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.partition_proxy",
                *(f"{listen}:{target}" for listen, target in pairs),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        proxy = cls(process)
        proxy._said("ready")
        return proxy

    def _said(self, word: str) -> None:
        line = cast(IO[bytes], self.process.stdout).readline().decode().strip()
        assert line == word, f"the proxy said {line!r}, not {word!r}"

    def _tell(self, command: str) -> None:
        stdin = cast(IO[bytes], self.process.stdin)
        stdin.write(f"{command}\n".encode())
        stdin.flush()
        self._said("ok")

    async def cut(self, listen_port: int, pids: set[int]) -> None:
        """Cut ``pids``' connections to ``listen_port`` (see the module docstring)."""
        await asyncio.to_thread(
            self._tell, f"cut {listen_port} " + " ".join(map(str, sorted(pids)))
        )

    async def drop(self, listen_port: int, pids: set[int]) -> None:
        """Close ``pids``' connections to ``listen_port`` once (they may connect again)."""
        await asyncio.to_thread(
            self._tell, f"drop {listen_port} " + " ".join(map(str, sorted(pids)))
        )

    async def heal(self) -> None:
        await asyncio.to_thread(self._tell, "heal")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)


if __name__ == "__main__":
    asyncio.run(serve([(int(a), int(b)) for a, b in (arg.split(":") for arg in sys.argv[1:])]))
