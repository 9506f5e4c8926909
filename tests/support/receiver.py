"""A webhook receiver for tests: a real HTTP server on a free loopback port, in a thread,
that records every request and answers with the statuses it is told (then 200)."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    answers: deque[int] = field(default_factory=deque)  # statuses to answer, in order
    delay_s: float = 0.0  # how long each answer takes
    received: list[Received] = field(default_factory=list)


@contextmanager
def receiver(*answers: int, delay_s: float = 0.0) -> Iterator[Receiver]:
    """A receiver answering ``answers`` first, then 200, each after ``delay_s``."""
    state = Receiver("", deque(answers), delay_s)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                state.received.append(Received(self.path, dict(self.headers.items()), body))
                code = state.answers.popleft() if state.answers else 200
            time.sleep(state.delay_s)
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/rankd"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
