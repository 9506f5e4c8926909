"""What the embedded servers have in common: one child process each, and its cleanup.

A server is a real child process (``subprocess.Popen``) in its own session, so a Ctrl-C in
the parent's terminal does not reach it. :class:`ServerProcess` starts it, waits until it
answers (and is *our* process, not another one that grabbed the port), retries on fresh ports
if an auto-picked port got taken meanwhile, and stops it cleanly. Everything here exists so
that no server outlives its owner or is started twice on one data dir:

* a pidfile and an owner file (``<owner pid> <server pid>``) per data dir: a second start on
  the same dir is refused, and a server left behind by a SIGKILLed ``rankd serve`` is stopped
  cleanly (so it flushes its data) by the next start;
* killing walks the whole process tree (:mod:`.process_tree`), because PostgreSQL backends
  call setsid() and leave the process group;
* every running server is registered, and an atexit hook stops whatever is still running.

Each server's own module (:mod:`.redis_server`, :mod:`.postgres_server`,
:mod:`.nats_server`) subclasses :class:`ServerProcess`.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import ClassVar

from rankd.embedded.ports import free_port
from rankd.embedded.process_tree import POLL_INTERVAL, kill_tree, process_cmdline

logger = logging.getLogger("rankd.embedded")

STOP_TIMEOUT = 15.0

_PORT_RETRIES = 3  # attempts with fresh ports if an auto-picked port was taken meanwhile


class EmbeddedServerError(RuntimeError):
    """An embedded server binary is missing, failed to start, or is already running."""


# --------------------------------------------------------------------------- helpers


def _package_dir(name: str) -> Path | None:
    """Directory of an installed package, located without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _tail(path: Path, lines: int = 30, *, since: int = 0) -> str:
    """Last ``lines`` lines of a log file, ignoring everything before byte offset ``since``."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(since, f.tell() - 16384))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return "<no log>"
    return "\n".join(data.splitlines()[-lines:]) or "<empty log>"


def _same_path(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normpath(a) == os.path.normpath(b)


# --------------------------------------------------------------------------- atexit registry

_registry_lock = threading.Lock()
_running: set[ServerProcess] = set()


def _register(server: ServerProcess) -> None:
    with _registry_lock:
        _running.add(server)


def _unregister(server: ServerProcess) -> None:
    with _registry_lock:
        _running.discard(server)


@atexit.register
def _stop_all_at_exit() -> None:
    with _registry_lock:
        servers = list(_running)
    for server in servers:
        with contextlib.suppress(Exception):
            server.stop()


# --------------------------------------------------------------------------- servers


class _EarlyExitError(Exception):
    pass


class ServerProcess:
    """Common process management; subclasses define the command line and readiness check."""

    name: ClassVar[str]
    binary_name: ClassVar[str]
    stop_signal: ClassVar[signal.Signals] = signal.SIGTERM
    default_start_timeout: ClassVar[float] = 20.0

    def __init__(
        self, data_dir: Path, port: int | None = None, *, start_timeout: float | None = None
    ) -> None:
        self.data_dir = Path(data_dir).absolute()
        self.directory = self.data_dir / self.name
        self._auto_port = port is None
        self.port: int = free_port() if port is None else port
        self.start_timeout = self.default_start_timeout if start_timeout is None else start_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._started_once = False
        self._log_offset = 0
        self._lock = threading.RLock()

    # -- public API -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        raise NotImplementedError

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.name}.log"

    @property
    def pid(self) -> int | None:
        """PID of the most recently started process (kept after it exits, for inspection)."""
        return None if self._proc is None else self._proc.pid

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the server and wait until it accepts requests. No-op if already running.

        The port chosen at construction is kept across restarts (unless the very first start
        failed because an auto-picked port got taken, then fresh ports are tried).
        """
        with self._lock:
            if self.is_running():
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            self._check_not_running_elsewhere()
            attempts = _PORT_RETRIES if self._auto_port and not self._started_once else 1
            t0 = time.monotonic()
            for attempt in range(1, attempts + 1):
                self._prepare()
                self._launch()
                try:
                    self._wait_ready()
                    self._after_ready()
                except _EarlyExitError as exc:
                    self._reap()
                    log = self._new_log()
                    if attempt < attempts and "address already in use" in log.lower():
                        logger.warning("%s: port taken meanwhile; retrying on new port", self.name)
                        self._repick_ports()
                        continue
                    raise EmbeddedServerError(
                        f"{self.name} failed to start: {exc}\n--- {self.log_path} ---\n{log}"
                    ) from None
                except BaseException:
                    self._reap()
                    raise
                break
            self._started_once = True
            self._write_pidfile()
            self._write_owner()
            _register(self)
            logger.info(
                "%s ready on %s (pid %s) in %.2fs",
                self.name,
                self.url,
                self.pid,
                time.monotonic() - t0,
            )

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Clean shutdown (SIGKILL after ``timeout`` s). Idempotent; fine if already dead."""
        with self._lock:
            proc = self._proc
            if proc is not None:
                if proc.poll() is None:
                    with contextlib.suppress(ProcessLookupError):
                        proc.send_signal(self.stop_signal)
                    try:
                        proc.wait(timeout)
                    except subprocess.TimeoutExpired:
                        logger.warning(
                            "%s (pid %s) did not stop in %.0fs; killing",
                            self.name,
                            proc.pid,
                            timeout,
                        )
                self._reap()
                self._remove_pidfile()
            _unregister(self)

    def kill(self) -> None:
        """SIGKILL the server (and its children), simulating a crash. Data dir is left as is."""
        with self._lock:
            self._reap()
            _unregister(self)

    def restart(self) -> None:
        with self._lock:
            self.stop()
            self.start()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"{type(self).__name__}(port={self.port}, pid={self.pid}, {state}, {self.directory})"

    # -- hooks ------------------------------------------------------------------------------

    def _prepare(self) -> None:
        """Create directories / config files before each launch."""

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _run_as(self) -> tuple[int, int] | None:
        return None

    def _is_ready(self) -> bool:
        raise NotImplementedError

    def _after_ready(self) -> None:
        pass

    def _repick_ports(self) -> None:
        self.port = free_port()

    @property
    def _pidfile(self) -> Path:
        return self.directory / "rankd-embedded.pid"

    def _write_pidfile(self) -> None:
        if self._proc is not None:
            self._pidfile.write_text(f"{self._proc.pid}\n")

    def _remove_pidfile(self) -> None:
        self._pidfile.unlink(missing_ok=True)

    @property
    def _owner_file(self) -> Path:
        return self.directory / "rankd-owner"

    def _write_owner(self) -> None:
        if self._proc is not None:
            self._owner_file.write_text(f"{os.getpid()} {self._proc.pid}\n")

    def _reclaim_orphan(self, pid: int) -> bool:
        """Stop server ``pid`` if the process that started it is gone; True if stopped.

        A ``rankd serve`` killed with SIGKILL cannot stop its servers. Its successor on the
        same data dir stops them cleanly (they flush their data) and starts its own.
        """
        try:
            owner, server = (int(x) for x in self._owner_file.read_text().split())
        except (OSError, ValueError):
            return False
        if server != pid or owner == os.getpid() or process_cmdline(owner) is not None:
            return False
        logger.warning(
            "%s: stopping pid %s left behind by a dead owner (%s)", self.name, pid, owner
        )
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, self.stop_signal)
        deadline = time.monotonic() + STOP_TIMEOUT
        while process_cmdline(pid) is not None and time.monotonic() < deadline:
            time.sleep(POLL_INTERVAL)
        kill_tree(pid, descendants=True)
        return True

    def _check_not_running_elsewhere(self) -> None:
        """Refuse to start a second server on the same data dir; reclaim orphans."""
        pid = self._read_pidfile()
        if pid is None or pid == os.getpid():
            return
        cmdline = process_cmdline(pid)
        if cmdline is not None and self.binary_name in cmdline and not self._reclaim_orphan(pid):
            raise EmbeddedServerError(
                f"{self.name} is already running for {self.directory} (pid {pid}: {cmdline!r}); "
                f"stop it first (kill -{self.stop_signal.name} {pid})"
            )
        self._pidfile.unlink(missing_ok=True)  # stale: that process is gone / not ours

    def _read_pidfile(self) -> int | None:
        try:
            first = self._pidfile.read_text().splitlines()[0]
            return abs(int(first.strip()))
        except (OSError, IndexError, ValueError):
            return None

    # -- internals --------------------------------------------------------------------------

    def _launch(self) -> None:
        cmd = self._command()
        run_as = self._run_as()
        logger.debug("starting %s: %s", self.name, " ".join(cmd))
        with self.log_path.open("ab") as log:
            self._log_offset = log.tell()
            if run_as is not None:
                with contextlib.suppress(OSError):
                    os.chown(self.log_path, run_as[0], run_as[1])
            try:
                self._proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.directory,
                    start_new_session=True,
                    user=None if run_as is None else run_as[0],
                    group=None if run_as is None else run_as[1],
                    extra_groups=None if run_as is None else [],
                )
            except OSError as exc:
                raise EmbeddedServerError(f"cannot execute {cmd[0]}: {exc}") from exc

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.start_timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                raise _EarlyExitError(f"process exited with code {code}")
            if self._is_ready():
                return
            if time.monotonic() > deadline:
                raise EmbeddedServerError(
                    f"{self.name} not ready after {self.start_timeout:.0f}s\n"
                    f"--- {self.log_path} ---\n{self._new_log()}"
                )
            time.sleep(POLL_INTERVAL)

    def _new_log(self, max_lines: int = 30) -> str:
        """Last lines the server logged since the latest launch."""
        return _tail(self.log_path, max_lines, since=self._log_offset)

    def _reap(self) -> None:
        """Make sure the process and all its children are dead and the process is waited."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            kill_tree(proc.pid, descendants=True)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        # leftovers of a leader that died on its own (e.g. killed from outside)
        kill_tree(proc.pid, descendants=False)
