"""A TCP proxy a test puts between every client and one server, to partition that server
from some processes while others still reach it (tests/system/test_partitions.py).

Run as ``python -m tests.support.partition_proxy LISTEN_PORT TARGET_PORT``; it prints
``ready`` once it listens, then reads commands on stdin, one a line, answering ``ok``:

* ``cut PID...``: every connection opened by one of these processes (or opened later by
  one) gets nothing through, either way, as in a network partition: what they send is
  dropped, nothing comes back;
* ``heal``: the cut connections are closed (their sessions would have timed out in a real
  partition), so their owners connect again and get through.

A connection's owner is found from the kernel's socket table (/proc/net/tcp and the
processes' open files), so no process needs to cooperate. Loopback only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

HOST = "127.0.0.1"
CHUNK = 65536


def socket_owner(client_port: int, server_port: int) -> int | None:
    """The pid holding the loopback socket 127.0.0.1:client_port → :server_port."""
    local = f"0100007F:{client_port:04X}"
    remote = f"0100007F:{server_port:04X}"
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[2] == remote:
            inode = fields[9]
            break
    if inode is None:
        return None
    wanted = f"socket:[{inode}]"
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in os.scandir(f"/proc/{entry.name}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(fd.path) == wanted:
                        return int(entry.name)
    return None


class Link:
    """One client connection and its connection to the target."""

    def __init__(self, client: asyncio.StreamWriter, server: asyncio.StreamWriter) -> None:
        self.client = client
        self.server = server
        self.client_port = int(client.get_extra_info("peername")[1])
        self.owner: int | None = None
        self.cut = False

    def close(self) -> None:
        for writer in (self.client, self.server):
            with contextlib.suppress(Exception):
                writer.close()


class Proxy:
    def __init__(self, listen_port: int, target_port: int) -> None:
        self.listen_port = listen_port
        self.target_port = target_port
        self.links: set[Link] = set()
        self.cut_pids: set[int] = set()

    async def _owner(self, link: Link) -> int | None:
        if link.owner is None:
            link.owner = await asyncio.to_thread(socket_owner, link.client_port, self.listen_port)
        return link.owner

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(HOST, self.target_port)
        except OSError:
            writer.close()
            return
        link = Link(writer, up_writer)
        self.links.add(link)
        if self.cut_pids and await self._owner(link) in self.cut_pids:
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
        for link in list(self.links):
            if await self._owner(link) in pids:
                link.cut = True

    def heal(self) -> None:
        self.cut_pids = set()
        for link in list(self.links):
            if link.cut:
                link.close()

    async def serve(self) -> None:
        server = await asyncio.start_server(self._accept, HOST, self.listen_port)
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        commands = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
        async with server:
            while line := (await commands.readline()).decode():
                words = line.split()
                if words[:1] == ["cut"]:
                    await self.cut({int(w) for w in words[1:]})
                elif words[:1] == ["heal"]:
                    self.heal()
                print("ok", flush=True)


if __name__ == "__main__":
    asyncio.run(Proxy(int(sys.argv[1]), int(sys.argv[2])).serve())
