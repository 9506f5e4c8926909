"""One rankd process per data dir, and whether a data dir holds data.

The process that starts embedded servers on a data dir holds ``<data-dir>/rankd.lock``
(``flock``, with its pid written inside) until it exits. The kernel drops the lock with the
process, however it ends (even SIGKILL), so a stale lock file never blocks a restart, and the
servers a killed owner left behind are reclaimed by the next start (embedded/process.py).
The descriptor is not inherited, so no embedded server keeps the lock after its owner died.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

LOCK_FILE = "rankd.lock"


class DataDirInUse(Exception):
    """Another process holds the data dir's lock."""

    def __init__(self, data_dir: Path, pid: int | None) -> None:
        owner = f"pid {pid}" if pid is not None else "another process"
        super().__init__(f"{data_dir} is in use by another rankd ({owner})")
        self.data_dir = data_dir
        self.pid = pid


@dataclass
class DataDirLock:
    """The held lock of one data dir; ``release`` (or the process's end) lets it go."""

    path: Path
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = -1


def owner_pid(data_dir: Path) -> int | None:
    """The pid written in the lock file (whether or not it still holds it)."""
    try:
        return int((data_dir / LOCK_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def acquire(data_dir: Path) -> DataDirLock:
    """Lock ``data_dir`` for this process (creating it), or raise DataDirInUse."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DataDirInUse(data_dir, owner_pid(data_dir)) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return DataDirLock(path, fd)


def is_locked(data_dir: Path) -> bool:
    """Whether another process holds the data dir's lock now."""
    path = data_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken just now
    return False


def has_postgres_data(data_dir: Path) -> bool:
    """PostgreSQL's data is there (what rebuild and freeze read)."""
    return (data_dir / "postgres" / "PG_VERSION").is_file()


def has_log_data(data_dir: Path) -> bool:
    """The run log's JetStream store is there (what replay reads)."""
    return (data_dir / "nats" / "js" / "jetstream").is_dir()


def not_a_folder(path: Path) -> str | None:
    """Why ``path`` cannot be a data dir: the nearest part of it that exists is a file."""
    part = next((p for p in (path, *path.parents) if p.exists()), path)
    return f"{part} is a file, not a folder" if part.exists() and not part.is_dir() else None
