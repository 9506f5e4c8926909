"""Commands packed by hiredis straight from their arguments (stores/redis/packing.py) are
byte for byte what redis-py packs, and anything hiredis cannot take goes redis-py's way."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio.connection import Connection
from redis.exceptions import DataError

from rankd.stores.redis.packing import FastConnection, pack_fast

ARGUMENT = st.one_of(
    st.text(),
    st.binary(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
)
NAME = st.sampled_from(["EVALSHA", b"ZADD", "HSET", "PING", "ZRANGE"])


def redis_py(*args: Any) -> list[bytes]:
    return Connection().pack_command(*args)


@given(NAME, st.lists(ARGUMENT, max_size=30))
def test_packed_like_redis_py(name: str | bytes, rest: list[Any]) -> None:
    args = (name, *rest)
    assert b"".join(FastConnection().pack_command(*args)) == b"".join(redis_py(*args))
    assert pack_fast(args) is not None


@pytest.mark.parametrize(
    "args",
    [
        ("CLIENT SETNAME", "x"),  # a two-word command name: redis-py splits it
        (b"CONFIG GET", b"maxmemory"),
        ("ZADD\t", "k", 1, "m"),  # any whitespace
        ("PING\n",),
        ("ZADD", "k", memoryview(b"1"), "m"),
        ("ZADD", "k", bytearray(b"1"), "m"),
    ],
)
def test_the_other_shapes_pack_as_redis_py_packs_them(args: tuple[Any, ...]) -> None:
    assert b"".join(FastConnection().pack_command(*args)) == b"".join(redis_py(*args))
    if isinstance(args[0], str | bytes) and args[0].split() != [args[0]]:
        assert pack_fast(args) is None


@pytest.mark.parametrize("bad", [True, None, object()])
def test_a_value_redis_cannot_hold_is_refused_as_redis_py_refuses_it(bad: object) -> None:
    with pytest.raises(DataError):
        FastConnection().pack_command("SET", "k", bad)
