"""A minimal keep-alive HTTP/1.1 client on asyncio streams, for load generation.

General clients (httpx) spend more CPU per request than the service does, which on a
2-core machine would measure the client. This one only writes prepared bytes and reads
``Content-Length`` framed responses.
"""

from __future__ import annotations

import asyncio


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        lines = [f"{method} {path} HTTP/1.1", "Host: bench", f"Content-Length: {len(body)}"]
        if body:
            lines.append("Content-Type: application/json")
        lines.extend(f"{k}: {v}" for k, v in (headers or {}).items())
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        payload = await self.reader.readexactly(length) if length else b""
        return status, payload

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()
