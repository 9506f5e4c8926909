"""RANKD_REDIS_URL read into its parts: the mode (one server, a Cluster, a Sentinel group),
TLS, the hosts, the database, the Sentinel master's name and the credentials. Anything it
cannot understand is BadRedisUrl, one line naming the problem, before anything connects
(connection.py says what each form means)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

Mode = Literal["single", "cluster", "sentinel"]
_SCHEMES: Mapping[str, tuple[Mode, bool]] = {
    "redis": ("single", False),
    "rediss": ("single", True),
    "redis+cluster": ("cluster", False),
    "rediss+cluster": ("cluster", True),
    "redis+sentinel": ("sentinel", False),
    "rediss+sentinel": ("sentinel", True),
}


class BadRedisUrl(ValueError):
    """RANKD_REDIS_URL cannot be understood; the message is one line naming the problem."""


@dataclass(frozen=True)
class RedisTarget:
    """A parsed RANKD_REDIS_URL."""

    mode: Mode
    tls: bool
    hosts: tuple[tuple[str, int], ...]
    db: int = 0
    master: str = ""  # the Sentinel master name
    username: str | None = None
    password: str | None = None
    url: str = ""


def _host_port(part: str, url: str) -> tuple[str, int]:
    host, sep, port = part.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadRedisUrl(f"RANKD_REDIS_URL: {part!r} is not host:port in {safe_url(url)}")
    return host.strip("[]"), int(port)


def safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    scheme, sep, rest = url.partition("://")
    creds, at, hosts = rest.rpartition("@")
    return f"{scheme}{sep}***@{hosts}" if at and creds else url


def parse_redis_url(url: str) -> RedisTarget:
    """A RANKD_REDIS_URL's parts, or BadRedisUrl saying what is wrong with it."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() == "unix":  # one Redis on a local socket: redis-py reads it
        if not rest.strip("/"):
            raise BadRedisUrl(f"RANKD_REDIS_URL: no socket path in {safe_url(url)}")
        return RedisTarget("single", False, (), url=url)
    if not sep or scheme.lower() not in _SCHEMES:
        forms = ", ".join(f"{s}://" for s in _SCHEMES)
        raise BadRedisUrl(f"RANKD_REDIS_URL: {safe_url(url)!r} must start with one of {forms}")
    mode, tls = _SCHEMES[scheme.lower()]
    # urlsplit cannot read a list of hosts: split the credentials and path off by hand
    authority, _, path = rest.partition("/")
    creds, at, hostlist = authority.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = creds.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    if not hostlist:
        raise BadRedisUrl(f"RANKD_REDIS_URL: no host in {safe_url(url)}")
    hosts = tuple(_host_port(p, url) for p in hostlist.split(",") if p)
    if mode == "single" and len(hosts) != 1:
        raise BadRedisUrl(
            f"RANKD_REDIS_URL: {scheme}:// takes one host; use redis+cluster:// or "
            "redis+sentinel:// for several"
        )
    segments = [s for s in path.split("/") if s]
    master = ""
    if mode == "sentinel":
        if not segments:
            raise BadRedisUrl(
                f"RANKD_REDIS_URL: {safe_url(url)} names no master: "
                "redis+sentinel://host:port[,host:port...]/<master-name>"
            )
        master = unquote(segments.pop(0))
    if mode == "cluster" and segments:
        raise BadRedisUrl("RANKD_REDIS_URL: a cluster has only database 0; drop the path")
    db = 0
    if segments:
        if len(segments) > 1 or not segments[0].isdigit():
            raise BadRedisUrl(f"RANKD_REDIS_URL: {'/'.join(segments)!r} is not a database number")
        db = int(segments[0])
    if urlsplit(f"x://{hostlist.split(',')[0]}").port is None and mode == "single":
        raise BadRedisUrl(f"RANKD_REDIS_URL: no port in {safe_url(url)}")
    return RedisTarget(mode, tls, hosts, db, master, username, password, url)
