"""Restart an embedded server that died, without a person.

``rankd serve`` on its embedded default owns its Redis, PostgreSQL and NATS processes. A
supervisor thread in that process polls each child (``Popen.poll`` also reaps it: no
``<defunct>`` entry is left), and restarts a dead one on the same port and data dir, with
exponential backoff between failed starts. A server that keeps dying is given up on after
``Backoff.max_attempts`` consecutive restarts (a restart only counts as recovered once the
server has stayed up ``stable_s``): the supervisor then logs it at CRITICAL, every
``GIVE_UP_REMINDER_S``, and /readyz names it, rather than looping forever on a broken data
dir or a full disk.

What the dead server lost is healed by the service itself: a restarted Redis has a new
run id, so the Redis watch rebuilds it from PostgreSQL and the log's tail (runtime.py); the
log consumer and the pools reconnect to NATS and PostgreSQL. The supervisor only says, in a
small JSON status file beside the data (read by /readyz, in every worker process), which
server is restarting and how many attempts it took.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from rankd.embedded.process import EmbeddedServerError, ServerProcess

log = logging.getLogger("rankd.supervisor")

STATUS_FILE = "supervisor.json"
GIVE_UP_REMINDER_S = 60.0


@dataclass(frozen=True)
class Backoff:
    """Delay before restart attempt ``n`` (1-based): ``first_s`` then times ``factor``, at
    most ``max_s``; no more than ``max_attempts`` restarts in a row."""

    first_s: float = 0.0  # the first restart at once: most deaths are a single crash
    then_s: float = 0.5
    factor: float = 2.0
    max_s: float = 5.0
    max_attempts: int = 6

    def delay(self, attempt: int) -> float:
        if attempt <= 1:
            return self.first_s
        return float(min(self.max_s, self.then_s * self.factor ** (attempt - 2)))

    def gives_up(self, attempt: int) -> bool:
        return attempt > self.max_attempts


State = Literal["running", "restarting", "failed", "stopped"]


@dataclass
class ServerStatus:
    state: State = "running"
    pid: int | None = None
    restarts: int = 0  # over the process's life
    attempt: int = 0  # consecutive restarts without staying up stable_s
    last_exit: int | None = None
    last_error: str = ""
    changed_at: float = field(default_factory=time.time)
    recovered_s: float | None = None  # death to ready, of the last restart
    max_attempts: int = 0


class Supervisor:
    """Watches ``servers`` from a daemon thread and restarts the ones that die."""

    def __init__(
        self,
        servers: Sequence[ServerProcess],
        status_path: Path | None = None,
        *,
        interval_s: float = 0.1,
        stable_s: float = 30.0,
        backoff: Backoff | None = None,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        self.servers = list(servers)
        self.status_path = status_path
        self.interval_s = interval_s
        self.stable_s = stable_s
        self.backoff = backoff or Backoff()
        self.status = {
            s.name: ServerStatus(pid=s.pid, max_attempts=self.backoff.max_attempts)
            for s in self.servers
        }
        self._stop = threading.Event()
        self._sleep = sleep or self._stop.wait  # returns True once stopping
        self._thread: threading.Thread | None = None
        self._up_since = {s.name: time.monotonic() for s in self.servers}
        self._last_reminder: dict[str, float] = {}

    def start(self) -> None:
        self._write()
        self._thread = threading.Thread(target=self._run, name="rankd-supervisor", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop watching (before the servers are stopped on purpose). A restart under way
        finishes first, so the server it started is stopped with the others."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self.status_path is not None:
            self.status_path.unlink(missing_ok=True)

    # -- the loop ---------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._sleep(self.interval_s):
            for server in self.servers:
                if self._stop.is_set():
                    return
                try:
                    self.check(server)
                except Exception:  # the watch must outlive any one surprise
                    log.exception("supervisor: checking %s failed", server.name)

    def check(self, server: ServerProcess) -> None:
        """One look at ``server``: restart it if it died (public for tests)."""
        status = self.status[server.name]
        if status.state == "failed":
            now = time.monotonic()
            if now - self._last_reminder.get(server.name, 0.0) >= GIVE_UP_REMINDER_S:
                self._last_reminder[server.name] = now
                log.critical(
                    "embedded %s is down and no longer restarted (%d attempts; last error: "
                    "%s); restart rankd serve once the cause is fixed",
                    server.name,
                    status.attempt - 1,
                    status.last_error or "?",
                )
            return
        code = server.returncode  # polls, which also reaps a dead child
        if code is None:
            if status.attempt and time.monotonic() - self._up_since[server.name] > self.stable_s:
                status.attempt = 0  # stayed up: the next death starts the backoff afresh
            return
        self._restart(server, code)

    def _restart(self, server: ServerProcess, code: int) -> None:
        status = self.status[server.name]
        died = time.monotonic()
        status.last_exit = code
        log.error(
            "embedded %s (pid %s) exited with code %s; restarting it", server.name, server.pid, code
        )
        while not self._stop.is_set():
            status.attempt += 1
            if self.backoff.gives_up(status.attempt):
                self._set(server, "failed")
                self._last_reminder[server.name] = 0.0
                self.check(server)  # the first CRITICAL line now
                return
            self._set(server, "restarting")
            if self._sleep(self.backoff.delay(status.attempt)):
                return
            try:
                with contextlib.suppress(Exception):
                    server.kill()  # leftovers of the dead one (its children), then a clean start
                server.start()
            except (EmbeddedServerError, OSError) as exc:
                status.last_error = str(exc).splitlines()[0][:300]
                log.error(
                    "restarting embedded %s failed (attempt %d of %d): %s",
                    server.name,
                    status.attempt,
                    self.backoff.max_attempts,
                    status.last_error,
                )
                continue
            status.restarts += 1
            status.last_error = ""
            status.recovered_s = round(time.monotonic() - died, 3)
            self._up_since[server.name] = time.monotonic()
            self._set(server, "running")
            log.warning(
                "embedded %s restarted (pid %s) %.2fs after it died; the service now restores "
                "what it lost",
                server.name,
                server.pid,
                status.recovered_s,
            )
            return

    def _set(self, server: ServerProcess, state: State) -> None:
        status = self.status[server.name]
        status.state = state
        status.pid = server.pid
        status.changed_at = time.time()
        self._write()

    def _write(self) -> None:
        if self.status_path is None:
            return
        body = json.dumps({name: asdict(s) for name, s in self.status.items()})
        tmp = self.status_path.with_suffix(f".{os.getpid()}.tmp")
        try:
            tmp.write_text(body)
            tmp.replace(self.status_path)  # readers never see half a file
        except OSError as exc:
            log.warning("supervisor: cannot write %s: %s", self.status_path, exc)


def read_status(path: Path) -> dict[str, dict[str, object]]:
    """The status file's content ({} when there is none or it cannot be read)."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def describe(status: dict[str, object]) -> str | None:
    """What /readyz says about a server the supervisor is handling (None: nothing)."""
    state = status.get("state")
    most = status.get("max_attempts")
    if state == "restarting":
        return f"restarting (attempt {status.get('attempt')} of {most})"
    if state == "failed":
        return f"no longer restarted after {most} attempts: {status.get('last_error')}"
    return None
