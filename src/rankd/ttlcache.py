"""One small in-process cache: entries expire after a time and the whole is bounded in bytes.

Every cache in the process is one of these (board configs, unknown boards, player names,
rendered top lists, the periods-index memo), so each has a documented bound a client cannot
grow past: when a put would pass ``max_bytes`` the least recently used entries leave first.
Sizes are estimates of what an entry holds (its strings and containers), given by the owner.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(slots=True)
class Hit(Generic[V]):
    value: V
    age_s: float


class TTLCache(Generic[K, V]):
    def __init__(self, ttl_s: float, max_bytes: int, size_of: Callable[[K, V], int]) -> None:
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self._size_of = size_of
        self._entries: OrderedDict[K, tuple[float, V, int]] = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K, *, stale_ok: bool = False) -> Hit[V] | None:
        """The entry if it is younger than ``ttl_s`` (or at any age with ``stale_ok``)."""
        held = self._entries.get(key)
        if held is None:
            return None
        age = time.monotonic() - held[0]
        if age >= self.ttl_s and not stale_ok:
            return None
        self._entries.move_to_end(key)
        return Hit(held[1], age)

    def put(self, key: K, value: V, *, age_s: float = 0.0) -> None:
        """Store ``value``; ``age_s`` back-dates it (e.g. to be refreshed sooner)."""
        size = self._size_of(key, value)
        if size > self.max_bytes or self.ttl_s <= 0:
            self.pop(key)
            return
        self.pop(key)
        self._entries[key] = (time.monotonic() - age_s, value, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, (_, _, evicted) = self._entries.popitem(last=False)
            self.bytes -= evicted

    def pop(self, key: K) -> None:
        held = self._entries.pop(key, None)
        if held is not None:
            self.bytes -= held[2]

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0
