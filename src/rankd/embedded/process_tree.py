"""The process tree of an embedded server: is a pid alive (and what is it), and kill it with
every descendant.

Killing walks the whole tree, because PostgreSQL backends call setsid() and leave the
process group. Linux's /proc is read directly; elsewhere ``ps`` and the process group do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

POLL_INTERVAL = 0.05


def process_cmdline(pid: int) -> str | None:
    """Command line of a live, non-zombie process, or None if there is no such process."""
    proc = Path(f"/proc/{pid}")
    if Path("/proc/self").exists():
        try:
            state = _proc_stat(proc)[0]
            raw = (proc / "cmdline").read_bytes()
        except (OSError, IndexError):
            return None
        if state in ("Z", "X"):
            return None
        return raw.replace(b"\0", b" ").decode("utf-8", "replace")
    try:
        out = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return out.stdout.strip() or None


def _proc_stat(proc: Path) -> list[str]:
    """Fields of /proc/<pid>/stat after the ``(comm)`` field: [state, ppid, pgrp, ...]."""
    raw = (proc / "stat").read_text()
    return raw[raw.rfind(")") + 2 :].split()


def proc_table() -> dict[int, tuple[str, int, int]] | None:
    """pid -> (state, ppid, pgrp) for all processes, or None without a Linux-style /proc."""
    proc = Path("/proc")
    if not (proc / "self").exists():
        return None
    table: dict[int, tuple[str, int, int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _proc_stat(entry)
            table[int(entry.name)] = (fields[0], int(fields[1]), int(fields[2]))
        except (OSError, IndexError, ValueError):
            continue
    return table


def live_tree(pid: int, *, descendants: bool) -> set[int]:
    """Live (non-zombie) members of process group ``pid`` (+ descendants of ``pid``).

    Descendants matter because PostgreSQL children call setsid(), leaving the group.
    """
    table = proc_table()
    if table is None:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return set()
        except PermissionError:
            pass
        return {pid}
    found = {p for p, (_, _, pgrp) in table.items() if pgrp == pid}
    if descendants:
        children: dict[int, list[int]] = {}
        for p, (_, ppid, _) in table.items():
            children.setdefault(ppid, []).append(p)
        todo = [pid]
        while todo:
            for child in children.get(todo.pop(), []):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return {p for p in found if p in table and table[p][0] not in ("Z", "X")}


def kill_tree(pid: int, *, descendants: bool, timeout: float = 5.0) -> None:
    """SIGKILL process group ``pid`` (and, if ``pid`` is still ours to signal, all its
    descendants), then wait up to ``timeout`` s until they are gone.

    ``descendants=True`` is only safe while ``pid`` has not been reaped (no pid reuse).
    """
    if descendants:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGSTOP)  # freeze it so it cannot fork while we collect
    victims: set[int] = set()
    deadline = time.monotonic() + timeout
    while True:
        victims |= live_tree(pid, descendants=descendants)
        table = proc_table()
        if table is not None:
            victims = {v for v in victims if v in table and table[v][0] not in ("Z", "X")}
        if not victims:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        for victim in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(victim, signal.SIGKILL)
        if table is None or time.monotonic() > deadline:
            return
        time.sleep(POLL_INTERVAL)
        descendants = False  # after SIGKILL the tree is no longer reliable; keep `victims`
