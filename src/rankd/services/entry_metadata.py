"""Reads with ``include=metadata``: each entry's run metadata added to an answer.

Only a read that asks pays for it: one more round trip after the read (an HMGET per key
holding the entries' metadata; an archived period's, one indexed query), from the same
standings source the read used. The metadata is found by the entry's member (player and
exact time), so it is always the run's that holds the entry. An answer from the top-list
cache is copied, never changed in place; the JSON goes out as stored (orjson.Fragment),
never parsed and encoded again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from rankd.formats import parse_time
from rankd.services.scope import Scope

if TYPE_CHECKING:
    from rankd.services.reads import Reader

Body = TypeVar("Body", bound=Mapping[str, Any])


def _key(entry: Mapping[str, Any]) -> tuple[str, int]:
    """(player id, exact achieved ms): the member the metadata is stored under."""
    return entry["player_id"], parse_time(entry["achieved_at"], "achieved_at")


def _value(found: bytes | None) -> orjson.Fragment | None:
    return None if found is None else orjson.Fragment(found)


async def _found(
    reader: Reader, scope: Scope, entries: Sequence[Mapping[str, Any]], viewer: str | None
) -> list[bytes | None]:
    if not entries:
        return []
    source = await reader.standings(scope, viewer)
    return await source.metadata([_key(e) for e in entries])


async def listed(reader: Reader, scope: Scope, body: Body, viewer: str | None = None) -> Body:
    """A top, around or friends answer with ``metadata`` on each of its entries."""
    entries = body["entries"]
    found = await _found(reader, scope, entries, viewer)
    with_meta = [{**e, "metadata": _value(m)} for e, m in zip(entries, found, strict=True)]
    return {**body, "entries": with_meta}  # type: ignore[return-value]


async def single(reader: Reader, scope: Scope, body: Body, viewer: str | None = None) -> Body:
    """A player's standing with the ``metadata`` of their entry."""
    [found] = await _found(reader, scope, [body], viewer)
    return {**body, "metadata": _value(found)}  # type: ignore[return-value]
