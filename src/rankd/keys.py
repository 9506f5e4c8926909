"""Every Redis key Rankd uses, built in one place.

A period of a board is one sorted set, ``lb:{<board>:<window>:<period>}``. Its side keys
(``:shadow`` for banned players, ``:pending`` for held runs, ``:hist`` for the rank
histogram, ``:runs`` for a ``sum`` board's counted run ids) share the hash tag, so a script
touching them stays on one node, also on Redis Cluster. A sharded board has one such tag per
shard: ``lb:{<board>:<window>:<period>#<k>}``.

The season lives in the key name: a new period is a new key, nothing is ever reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache


@dataclass(frozen=True)
class PeriodKeys:
    """The keys of one (shard of a) board period."""

    board: str
    window: str
    period: str
    shard: int | None = None

    @cached_property
    def tag(self) -> str:
        base = f"{self.board}:{self.window}:{self.period}"
        return base if self.shard is None else f"{base}#{self.shard}"

    @cached_property
    def public(self) -> str:
        return f"lb:{{{self.tag}}}"

    @property
    def shadow(self) -> str:
        return f"lb:{{{self.tag}}}:shadow"

    @property
    def pending(self) -> str:
        return f"lb:{{{self.tag}}}:pending"

    @property
    def hist(self) -> str:
        return f"lb:{{{self.tag}}}:hist"

    @property
    def runs(self) -> str:
        return f"lb:{{{self.tag}}}:runs"


@lru_cache(maxsize=16_384)
def period_keys(board: str, window: str, period: str, shard: int | None = None) -> PeriodKeys:
    # every submit asks for the same few periods' keys; build each name once
    return PeriodKeys(board, window, period, shard)


def periods_index(board: str, window: str) -> str:
    """Sorted set of a window's period ids that have data, scored by period start (ms)."""
    return f"lb:periods:{{{board}}}:{window}"


# Display names copied from PostgreSQL's players table: player_id -> name.
NAMES = "rankd:names"
