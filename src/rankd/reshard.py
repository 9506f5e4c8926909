"""A board's live resharding, as data: where a move stands, kept in the board's stored
config (services/resharding.py drives it, one phase after the other).

A move has two layouts of the board's standings (placement.Layout: a shard count and where
its key names start): the one reads are served from (the config's ``shards``) and the
``other``. Phases:

- ``copy``: reads from the old layout; every write goes to both; the mover builds the new
  layout from PostgreSQL period by period, then waits for the log consumer to apply
  everything logged until then (to both), and switches.
- ``drain``: reads from the new layout (the config's ``shards`` is now the new one, ``other``
  the old); writes still go to both, so an instance whose cached config still says ``copy``
  reads exact standings until its cache expires.
- ``drop``: writes go to the new layout only; once every instance knows, the old layout's
  keys are removed; ``sweep``: a settle time later, once more (a request that read the
  config before may still have written one), and the move ends (``reshard`` None).

A move is cancelled while it copies by a PUT of the served ``shards``: it goes straight to
``drop``, with ``other`` the layout it was building.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rankd.placement import Layout, base_of

Phase = Literal["copy", "drain", "drop", "sweep"]
PHASES: tuple[Phase, ...] = ("copy", "drain", "drop", "sweep")


@dataclass(frozen=True)
class Reshard:
    phase: Phase
    other: Layout  # copy: the layout being built; drain and drop: the one served before
    since_ms: int  # when this phase began (every instance knows it a settle time later)
    done: int = 0  # entries of the periods built so far (copy), all of them after it
    total: int = 0  # entries of the periods to build, as counted when the copy began
    cursor: str = ""  # the last period built, "<window>/<period>" (in the copy's order)
    redis: str = ""  # the Redis run id the copy began on: another one starts it over
    bytes: int = 0  # what the new layout adds to Redis, as counted when the move began

    def as_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "other_shards": int(self.other),
            "other_base": base_of(self.other),
            "since_ms": self.since_ms,
            "done": self.done,
            "total": self.total,
            "cursor": self.cursor,
            "redis": self.redis,
            "bytes": self.bytes,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Reshard:
        phase = raw["phase"]
        if phase not in PHASES:
            raise ValueError(f"unknown resharding phase {phase!r}")
        return cls(
            phase=phase,
            other=Layout(int(raw["other_shards"]), int(raw.get("other_base", 0))),
            since_ms=int(raw["since_ms"]),
            done=int(raw.get("done", 0)),
            total=int(raw.get("total", 0)),
            cursor=str(raw.get("cursor", "")),
            redis=str(raw.get("redis", "")),
            bytes=int(raw.get("bytes", 0)),
        )

    @property
    def writes_other(self) -> bool:
        """Whether writes still go to the other layout too."""
        return self.phase in ("copy", "drain")

    def progress(self) -> dict[str, int]:
        """What GET shows while the move runs."""
        if self.phase == "copy":
            return {"done": self.done, "total": self.total}
        return {"done": self.total, "total": self.total}


# Redis bytes a move's new layout takes (bench/reshard_rate.py measures it beside this
# count): one entry besides its player id, which it holds twice (the sorted set's member
# and its exact time's field), about 125 B; one exact-times hash's own key, about 120 B
# (up to 65,521 a period, 4,093 a shard); a field of a :meta or :rid hash besides its
# name and value, up to about 80 B in a hashtable.
ENTRY_BYTES = 125
BUCKET_KEY_BYTES = 120
FIELD_BYTES = 80


@dataclass(frozen=True)
class Footprint:
    """A board's standings in Redis as the durable copy has them (every window, period and
    segment, those archived out of Redis aside): what a move copies."""

    entries: int = 0
    id_bytes: int = 0  # their player ids'
    bucket_keys: int = 0  # the exact-times hashes the new layout will hold
    fields: int = 0  # their :meta (entries with metadata) and :rid (latest windows) fields
    field_bytes: int = 0  # those fields' names and values

    def bytes(self) -> int:
        """What the new layout adds to Redis until the old one is dropped."""
        return (
            self.entries * ENTRY_BYTES
            + 2 * self.id_bytes
            + self.bucket_keys * BUCKET_KEY_BYTES
            + self.fields * FIELD_BYTES
            + self.field_bytes
        )


def no_room(nodes: list[tuple[int, int]], needs: list[tuple[int, int]], ratio: float) -> str | None:
    """Why adding ``needs`` (bytes, each spread over its move's shard count) would take a
    Redis node (``nodes``: each one's used and maximum memory, 0 for none) past ``ratio`` of
    its maximum, or None if it fits. At best a cluster spreads a move's shards evenly: its
    fullest node takes ceil(shards / nodes) of them."""
    share = sum(need * -(-shards // max(len(nodes), 1)) // shards for need, shards in needs)
    for used, limit in nodes:
        if limit and used + share > ratio * limit:
            return (
                f"the move needs about {share / 2**20:.1f} MiB more Redis memory on a node"
                f" using {used / 2**20:.1f} of its {limit / 2**20:.1f} MiB, which would pass"
                f" RANKD_REDIS_MEMORY_WARN_RATIO ({ratio:g}); raise RANKD_REDIS_MAX_MEMORY"
                " (Redis's maxmemory) or free memory first"
            )
    return None
