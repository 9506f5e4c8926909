"""Whether an error that reached a command's edge is a store gone away (the operator's to
fix: one line, not a traceback). The drivers' own errors are named only here and in the
stores that raise them."""

from __future__ import annotations

from psycopg import OperationalError
from redis.exceptions import RedisError

from rankd.errors import RankdError


def store_failure(exc: BaseException) -> bool:
    return isinstance(exc, RankdError | OSError | RedisError | OperationalError)
