"""Every Redis key Rankd uses, built in one place.

A period of a board is one sorted set, ``lb:{<board>:<window>:<period>}``; a segment's
standings in it, ``lb:{<board>/<dimension>=<value>:<window>:<period>}``. Its side keys
(``:runs``, a ``sum`` board's counted run ids; ``:shadow``, banned players' entries;
``:pending``, runs held for review; ``:applied``, marks of runs the submit path applied;
``:meta``, the entries' metadata; ``:rid``, a ``latest`` window's holding run ids)
share the hash tag, so a script touching them stays on one node, also on Redis Cluster.
A sharded board (``shards`` > 1) splits each period's standings over ``shards`` key sets,
``lb:{<board>:<window>:<period>#<k>}`` (segments likewise), each with its own side keys
and hash tag, so Redis Cluster spreads them over its nodes; ``shard_of`` picks a player's.
Every other key also carries a hash tag, and whatever one script or one MULTI touches shares
it. Only the Redis store (this package) uses these names.

The season lives in the key name: a new period is a new key, nothing is ever reset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

# the numbers of placement, named here too: every store module asks keys for them
from rankd.placement import SHARD_TIME_BUCKETS as SHARD_TIME_BUCKETS
from rankd.placement import TIME_BUCKETS as TIME_BUCKETS
from rankd.placement import Layout as Layout
from rankd.placement import base_of as base_of
from rankd.placement import league_bucket
from rankd.placement import shard_name as shard_name
from rankd.placement import shard_of as shard_of
from rankd.placement import time_bucket as time_bucket


@dataclass(frozen=True)
class PeriodKeys:
    """The keys of one board period."""

    board: str
    window: str
    period: str
    segment: str = ""  # "" or "<dimension>:<value>"
    shard: int = -1  # -1: an unsharded board; else the shard's name (placement.Layout), own tag

    @cached_property
    def tag(self) -> str:
        suffix = "" if self.shard < 0 else f"#{self.shard}"
        if not self.segment:
            return f"{self.board}:{self.window}:{self.period}{suffix}"
        dimension, _, value = self.segment.partition(":")
        return f"{self.board}/{dimension}={value}:{self.window}:{self.period}{suffix}"

    @cached_property
    def public(self) -> str:
        return f"lb:{{{self.tag}}}"

    @property
    def runs(self) -> str:
        return f"lb:{{{self.tag}}}:runs"

    @cached_property
    def shadow(self) -> str:
        return f"lb:{{{self.tag}}}:shadow"

    @cached_property
    def pending(self) -> str:
        return f"lb:{{{self.tag}}}:pending"

    @cached_property
    def applied(self) -> str:
        """Marks of the runs the submit path applied here: "<player>|<run_id>" -> ms."""
        return f"lb:{{{self.tag}}}:applied"

    @cached_property
    def meta(self) -> str:
        """The entries' metadata: member (codec.member) -> the run's metadata JSON. Keyed by
        member, not player, so an entry moved between sides (a ban, a hold approved) keeps
        it and a replaced entry's is found and dropped (lua/lib.lua put)."""
        return f"lb:{{{self.tag}}}:meta"

    @cached_property
    def rid(self) -> str:
        """A ``latest`` window's: member -> the run id holding the entry (ties at one ms go
        to the greater id; lua/submit_latest.lua)."""
        return f"lb:{{{self.tag}}}:rid"

    @cached_property
    def hist(self) -> str:
        """A sharded board's score histogram of this shard (see histogram.py)."""
        return f"lb:{{{self.tag}}}:hist"

    def side(self, side: str) -> str:
        """The key of one side: ``public``, ``shadow`` or ``pending``."""
        return self.public if side == "public" else f"lb:{{{self.tag}}}:{side}"


@lru_cache(maxsize=16_384)
def period_keys(
    board: str, window: str, period: str, segment: str = "", shard: int = -1
) -> PeriodKeys:
    # every submit asks for the same few periods' keys; build each name once
    return PeriodKeys(board, window, period, segment, shard)


def shard_keys(board: str, window: str, period: str, segment: str, shards: int) -> list[PeriodKeys]:
    """Every shard's keys of one period's standings (one unsharded key set for shards 1),
    in shard order; a Layout's are named from its base."""
    if shards <= 1:
        return [period_keys(board, window, period, segment)]
    base = base_of(shards)
    return [period_keys(board, window, period, segment, base + k) for k in range(shards)]


def own_keys(
    board: str, window: str, period: str, segment: str, player: str, shards: int
) -> PeriodKeys:
    """The keys of the shard holding ``player`` (the only ones of an unsharded period)."""
    return period_keys(board, window, period, segment, shard_name(player, shards))


def periods_index(board: str, window: str) -> str:
    """Sorted set of a window's period ids that have data, scored by period start (ms)."""
    return f"lb:periods:{{{board}}}:{window}"


# Display names copied from PostgreSQL's players table: player_id -> name. Hash-tagged so
# the rebuild's staging copy (staging(NAMES)) is in the same Redis Cluster slot, which its
# RENAME into place needs.
NAMES = "rankd:{names}"
# Players' profile segments, copied from PostgreSQL: player_id -> JSON {"country": "FR"}.
PROFILE_SEGMENTS = "rankd:{segments}"
# Pub/sub channel of "these standings changed" notices (services/live.py listens).
CHANGES = "rankd:changes"
# The Redis run_id the boards were last verified on (see services/rebuild/). Named for the
# member layout (codec.member): boards written with another layout are not verified, so the
# first start after a layout change rebuilds them from PostgreSQL ("folded": a shard's
# exact-times hashes folded to SHARD_TIME_BUCKETS).
VERIFIED_MARKER = "rankd:verified-redis-run-id:stamped:folded"
# Per node a restore replaced (its run id), the first log sequence the restore could not
# count on finding here and when its position was recorded ("seq:at_ms"): an instance that
# wrote to that node meanwhile (a partition's old primary) replays from it
# (services/rebuild/restart.py catch_up). Expires a week after the last restore.
RESTORED_FROM = "rankd:restored-from"
RESTORED_FROM_TTL_S = 7 * 86_400
# How far the run log has been applied to a Redis node (log_position.lua): one hash per
# node, so a restarted node or a promoted replica is judged by what it holds itself. On a
# cluster the tag is the first LOG_POSITION_TAG.format(n) whose slot lies on the primary.
LOG_POSITION = "rankd:{logpos}"
LOG_POSITION_TAG = "rankd:{{logpos-{}}}"


# Entries a hash may hold and stay a compact listpack (hash-max-ziplist-entries, which the
# embedded Redis is started with): up to about 67M members a period, 20 B a member; past
# it a hashtable, about 83 B (docs/operations.md).
HASH_LISTPACK_ENTRIES = 1024


def time_buckets_of(key: str) -> int:
    """How many exact-times hashes the sorted set ``key`` has: fewer for a shard's key
    (its hash tag ends in ``#<k>``)."""
    return SHARD_TIME_BUCKETS if key.endswith("}") and _SHARD_TAG.search(key) else TIME_BUCKETS


_SHARD_TAG = re.compile(r"#\d+\}$")


def times(key: str, member: str) -> str:
    """The hash holding ``member``'s exact achieved time beside the sorted set ``key``.

    Exact times cannot fit the composite (its bits order ties at the tie resolution); the
    member's stamp orders them (codec.member), and each entry's time (ms) also lives in one
    of 65,521 small hashes per key (4,093 per shard of a sharded board: the bucket folded
    modulo SHARD_TIME_BUCKETS), keyed by player id, so a script finds a player's member
    from the id (lua/lib.lua locate). Redis keeps them as listpacks
    (``hash-max-listpack-entries`` 512) at about 20 bytes a member.
    """
    return f"{key}:at:{time_bucket(member) % time_buckets_of(key)}"


def tournament(board: str, period: str) -> tuple[str, str, str]:
    """A scheduled occurrence's admission keys (services/tournaments.py), one hash tag: its
    entrants (set), counted runs ("<player>|<run_id>", set) and counted runs per player
    (hash). Apart from the standings' keys: admission comes before the log, on any shard."""
    tag = f"tn:{{{board}:{period}}}"
    return f"{tag}:entrants", f"{tag}:tries", f"{tag}:counts"


@dataclass(frozen=True)
class LeagueKeys:
    """A league board's placement keys (lua/league_*.lua), all in one hash tag per board:
    apart from the standings' keys, like admission. The players' tiers and a period's
    placements are split over small hashes by ``league_bucket``, a cohort's members are
    one small hash (ordinal -> player), so each stays a listpack."""

    board: str

    @property
    def tag(self) -> str:
        # under the board's "lb:{<board>:" prefix, so a deleted board's sweep finds them
        # with its period keys, in the same SCAN ("league" is no window's name)
        return f"lb:{{{self.board}:league}}"

    def tiers(self, player: str) -> str:
        return f"{self.tag}:tiers:{league_bucket(player)}"

    def members(self, period: str, player: str) -> str:
        return f"{self.tag}:{period}:m:{league_bucket(player)}"

    def roster(self, period: str, tier: int, cohort: int) -> str:
        return f"{self.tag}:{period}:c:{tier}:{cohort}"

    def period(self, period: str) -> tuple[str, str, str, str]:
        """The period's fill (tier -> placements made), ready flag (its tiers are known),
        waiting queue (a sorted set: player by arrival) and its arrival counter: the
        scripts' KEYS."""
        p = f"{self.tag}:{period}"
        return f"{p}:fill", f"{p}:ready", f"{p}:wait", f"{p}:arrived"


def run_ids_armed(board: str) -> str:
    """Present once the board's run-id registry is complete for this Redis (see
    services/run_ids.py); a Redis that lost it restores the registry before any claim."""
    return f"rk:{{{board}}}:ids"


def run_ids(board: str, bucket: int) -> str:
    """One time bucket of the board's run-id registry: run_id -> fingerprint of its first
    send. ``bucket`` counts bucket lengths since the epoch."""
    return f"rk:{{{board}}}:ids:{bucket}"


def segment_values(board: str, dimension: str) -> str:
    """The distinct values of one segment dimension the board has taken (see
    services/segment_values.py); "" is the marker that the set is complete."""
    return f"rk:{{{board}}}:segvals:{dimension}"


def rate_limit(identity: str) -> str:
    """An identity's GCRA state (its theoretical arrival time, µs); ``identity`` is
    ``k:<hash of a bearer key>`` or ``a:<client address>``, never a key itself. It expires
    once the identity is idle again."""
    return f"rl:{{{identity}}}"


def board_patterns(board: str) -> tuple[str, ...]:
    """SCAN patterns matching every key of a board: its periods and segments with their
    side keys and exact-times hashes, its periods index and its ``rk:`` keys (the run-id
    registry, segment values; board ids hold no glob characters), its ``tn:`` keys
    (admission); a league's keys share the first pattern. Each pattern is a SCAN of the
    whole keyspace: a new kind of key goes under an existing prefix where it can."""
    return (
        f"lb:{{{board}:*",
        f"lb:{{{board}/*",
        f"lb:periods:{{{board}}}:*",
        f"rk:{{{board}}}:*",
        f"tn:{{{board}:*",
    )


def deleting(board: str) -> str:
    """Set while a deleted board's keys are being removed: the id is not created again
    until they are gone."""
    return f"rankd:deleting:{{{board}}}"


def staging(key: str) -> str:
    """Where a rebuild loads a key before renaming it into place (same hash tag)."""
    return f"{key}:rebuild"


def restoring(key: str) -> str:
    """A staged rebuild's lease on ``key`` (same hash tag): set, with a short expiry the
    rebuild renews while it lives, from when it writes PostgreSQL's exact times into the
    live hashes until its staged copy is swapped in. The writing scripts refuse meanwhile
    (lua/lib.lua refuse_while_restoring); a rebuild that dies lets it lapse in seconds."""
    return f"{key}:restoring"


def torn(key: str) -> str:
    """Set with the lease and removed only by the swap (same hash tag): while it is set
    without the lease, a rebuild died between its first exact time and its swap, so the
    live hashes may point at members ``key`` does not hold. The writing scripts then refuse
    with TORN and the service rebuilds the period (services/rebuild/repairs.py)."""
    return f"{key}:torn"


_PUBLIC = re.compile(r"lb:\{(?P<tag>[^{}]+)\}")


def period_of(public: str) -> tuple[str, str, str] | None:
    """(board, window, period) of a period's public key (any segment or shard), or None for
    a name that is not one: the inverse of PeriodKeys.public for what a repair needs."""
    match = _PUBLIC.fullmatch(public)
    if match is None:
        return None
    head, _, shard = match["tag"].partition("#")
    parts = head.rsplit(":", 2)
    if len(parts) != 3 or (shard and not shard.isdigit()):
        return None
    board = parts[0].split("/", 1)[0]
    return (board, parts[1], parts[2]) if board and parts[1] and parts[2] else None
