"""Commands packed by hiredis straight from their arguments: the connections' classes.

redis-py hands every argument to its encoder in a Python generator before hiredis packs the
command; the log consumer's folded script calls carry about twenty arguments a run, and
that loop took 1.16 s of Python per 100,000 runs (28 calls of 72,000 arguments: 0.20 s
packed by hiredis alone). hiredis encodes str (UTF-8, as redis-py's default encoder does),
bytes, int and float (as ``repr``) itself, so those commands skip the loop. Anything else (a
bool, None, a command name with whitespace) takes redis-py's own path, with its
errors. Used for a single Redis and a Sentinel group; a cluster's nodes build their own
connections (redis-py's defaults), which pack as before.
"""

from __future__ import annotations

from typing import Any

import hiredis
from redis.asyncio.connection import Connection
from redis.asyncio.sentinel import SentinelManagedConnection, SentinelManagedSSLConnection


def pack_fast(args: tuple[Any, ...]) -> list[bytes] | None:
    """The command in RESP, or None when redis-py's own packing must decide."""
    first = args[0] if args else None
    # a name redis-py would split into words ("CLIENT SETNAME", any whitespace), or empty
    if not isinstance(first, str | bytes) or first.split() != [first]:
        return None
    try:
        return [hiredis.pack_command(args)]
    except TypeError:
        return None


class FastPacking:
    """Mixin for a redis-py connection class: pack_command through pack_fast first."""

    def pack_command(self, *args: Any) -> list[bytes]:
        packed = pack_fast(args)
        if packed is not None:
            return packed
        return super().pack_command(*args)  # type: ignore[misc,no-any-return]


class FastConnection(FastPacking, Connection):
    pass


class FastSentinelConnection(FastPacking, SentinelManagedConnection):
    pass


class FastSentinelSSLConnection(FastPacking, SentinelManagedSSLConnection):
    pass
