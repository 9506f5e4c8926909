"""Free loopback ports for the embedded servers, picked outside the kernel's ephemeral range.

A port handed out by binding to port 0 comes from the ephemeral range, the same range the
kernel draws every outgoing connection's local port from. Between the pick and the server's
own bind (seconds for a topology: its Sentinels start after the Redis nodes, NATS and
PostgreSQL), any connection on the machine could take that port, and the server fails with
"Address already in use" (seen in CI: a Sentinel's port). A server restarted on its kept
port meets the same risk. Ports below the ephemeral range are never handed to outgoing
connections, so only another listener could take them.

Another listener can be one of ours: a server that another process (a parallel test worker,
a second ``rankd serve``) picked the same free port for, moments apart, and started first.
Seen in CI too (a Sentinel's port, again). So each pick is also reserved, across processes,
for ``RESERVED_S``: a file per port under ``RESERVATIONS``, decided under one file lock.
Within that time no other pick on the machine hands the port out, whoever binds it first.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

HOST = "127.0.0.1"

LOWEST = 10_000  # clear of the well-known and most registered ports
BUS_OFFSET = 10_000  # a Redis Cluster node's bus port is its port + 10000
_LINUX_DEFAULT = (32_768, 60_999)
_ATTEMPTS = 200
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
# where picks are reserved, and for how long: past the slowest start of a whole topology
# (its last server binds seconds after the pick). A file per port, kept (its mtime says
# when it was reserved), so never more files than ports; reserved at once, at most the ports
# picked in RESERVED_S (thousands in a test run, of about 22,000 below the range).
RESERVATIONS = Path(tempfile.gettempdir()) / "rankd-ports"
RESERVED_S = 300.0


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux's default when it
    cannot be read)."""
    try:
        low, high = (int(n) for n in _RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return _LINUX_DEFAULT
    return low, high


def is_free(port: int) -> bool:
    """Whether a listener could bind ``port`` on the loopback now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _kernel_pick() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def pick_ports(count: int, taken: set[int] | None = None, *, bus: bool = False) -> list[int]:
    """``count`` free loopback ports, none in ``taken`` (and, with ``bus``, each one's
    cluster bus port free and outside the ephemeral range too); all are added to ``taken``.

    Below the ephemeral range where there is room (10000 up to its start); otherwise, as a
    last resort, ports the kernel picks (the embedded servers retry a first start whose
    auto-picked port was taken meanwhile)."""
    taken = set() if taken is None else taken
    low, _ = ephemeral_range()
    top = low - (BUS_OFFSET if bus else 0)  # exclusive
    picked: list[int] = []

    def claim(port: int) -> None:
        wanted = (port, port + BUS_OFFSET) if bus else (port,)
        if any(p in taken or p > 65_535 for p in wanted) or not all(is_free(p) for p in wanted):
            return
        if not _reserve(wanted):
            return
        picked.append(port)
        taken.update(wanted)

    with _reservations():
        for _ in range(_ATTEMPTS):
            if len(picked) == count or top - LOWEST < 4 * count:
                break
            claim(random.randrange(LOWEST, top))
        while len(picked) < count:
            claim(_kernel_pick())
    return picked


@contextlib.contextmanager
def _reservations() -> Iterator[None]:
    """The reservations, held by this process alone meanwhile (a lock file's flock, let go
    with the process if it dies). Without a usable directory, picks are not reserved."""
    try:
        RESERVATIONS.mkdir(mode=0o777, parents=True, exist_ok=True)
        lock = os.open(RESERVATIONS / ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)  # lets the flock go


def _reserve(ports: tuple[int, ...]) -> bool:
    """Reserve ``ports`` (under ``_reservations``) unless another pick reserved one of them
    within ``RESERVED_S``."""
    now = time.time()
    files = [RESERVATIONS / str(p) for p in ports]
    try:
        if any(now - f.stat().st_mtime < RESERVED_S for f in files if f.exists()):
            return False
        for f in files:
            f.write_text(str(os.getpid()))  # a rewrite moves its mtime: a fresh reservation
    except OSError:
        pass  # not reserved (an unusable directory): still free a moment ago
    return True


def free_port() -> int:
    """One free loopback port, outside the ephemeral range where there is room."""
    return pick_ports(1)[0]
