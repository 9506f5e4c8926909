"""The composite score: a run's score and the time it was achieved in one exact integer.

A Redis sorted set orders by one double. We pack ``(score, time)`` into an integer below
2**53, so the double holds it exactly, with two rules built in:

* higher composite is always better (an ``asc`` board stores ``max_score - score``);
* on equal scores the earlier achiever has the higher composite (time is stored reversed).

The score takes ``max_score.bit_length()`` high bits; the remaining low bits count time since
the period's start in units of ``resolution_ms``, the finest unit for which the whole period
fits. Two runs with equal score whose times fall in the same unit have equal composites;
the member then decides (see ``member``): a fixed-width stamp of the exact time first, so
equal composites order by the exact millisecond, earliest first, and then the player id in
descending byte order (a reversed range's order of equal members).

This module is pure: no I/O, no clocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Order = Literal["desc", "asc"]

# The member layout: STAMP_WIDTH characters stamping the exact achieved time, then the player
# id. The stamp is the time's offset from STAMP_EPOCH_MS (2020-01-01, the first time a run
# may have; 0, "not recorded", counts as that) reversed, STAMP_MAX minus it, in base 64
# with digits chr(48)..chr(111), ascending bytes: a reversed range (ZREVRANGE) reads equal
# composites in descending byte order, so the earliest time comes first. 7 characters hold
# 2^42 ms, 139 years. lua/lib.lua (stamp) and stores/standings.py (MEMBER_SQL) compute the
# same; tests/integration/services/test_ties.py checks all three agree.
STAMP_EPOCH_MS = 1_577_836_800_000
STAMP_WIDTH = 7
STAMP_MAX = (1 << 6 * STAMP_WIDTH) - 1
_STAMP_ZERO = 48

COMPOSITE_LIMIT = 1 << 53  # every composite is strictly below this, so a double is exact
MAX_SCORE_LIMIT = COMPOSITE_LIMIT - 1


class CodecError(ValueError):
    """A value cannot be packed: a score or time outside what the codec covers."""


@dataclass(frozen=True, slots=True)
class Codec:
    """Packs and unpacks composites for one board window.

    ``span_ms`` is the longest period the window can have (for all-time: the whole epoch
    range); ``resolution_ms`` is derived so that ``span_ms`` fits the time bits.
    """

    max_score: int
    order: Order
    span_ms: int
    time_bits: int
    resolution_ms: int
    time_mask: int

    @classmethod
    def create(cls, max_score: int, order: Order, span_ms: int) -> Codec:
        if not 1 <= max_score <= MAX_SCORE_LIMIT:
            raise CodecError(f"max_score must be in 1..{MAX_SCORE_LIMIT}, got {max_score}")
        if span_ms < 1:
            raise CodecError("span_ms must be positive")
        time_bits = 53 - max_score.bit_length()
        slots = 1 << time_bits
        resolution_ms = max(1, -(-span_ms // slots))  # ceil division
        return cls(max_score, order, span_ms, time_bits, resolution_ms, slots - 1)

    def score_key(self, score: int) -> int:
        """The score part as stored: higher is better for both orders."""
        if score < 0:
            raise CodecError(f"score must not be negative, got {score}")
        if score > self.max_score:
            raise CodecError(f"score {score} is above max_score {self.max_score}")
        return score if self.order == "desc" else self.max_score - score

    def time_key(self, offset_ms: int) -> int:
        """The time part as stored: earlier offsets give larger values."""
        if not 0 <= offset_ms < self.span_ms:
            raise CodecError(
                f"time offset {offset_ms} ms is outside the period (0..{self.span_ms})"
            )
        return self.time_mask - offset_ms // self.resolution_ms

    def pack(self, score: int, offset_ms: int) -> int:
        """Composite for ``score`` achieved ``offset_ms`` after the period's start."""
        return (self.score_key(score) << self.time_bits) | self.time_key(offset_ms)

    def unpack(self, composite: int) -> tuple[int, int]:
        """Back to ``(score, offset_ms)``; the offset is the start of its resolution unit."""
        if not 0 <= composite < COMPOSITE_LIMIT:
            raise CodecError(f"composite {composite} is outside 0..2**53")
        key = composite >> self.time_bits
        score = key if self.order == "desc" else self.max_score - key
        offset_ms = (self.time_mask - (composite & self.time_mask)) * self.resolution_ms
        return score, offset_ms

    def score_floor(self, score: int) -> int:
        """The lowest composite any entry holding exactly ``score`` can have."""
        return self.score_key(score) << self.time_bits


def stamp_offset(achieved_ms: int) -> int:
    """The exact time as the stamp orders it: ms since STAMP_EPOCH_MS, clamped to the
    stamp's range (times before it, and 0 for "not recorded", count as its first ms)."""
    return min(max(achieved_ms - STAMP_EPOCH_MS, 0), STAMP_MAX)


def stamp(achieved_ms: int) -> str:
    """The fixed-width prefix of a member achieved at ``achieved_ms``: later is smaller."""
    value = STAMP_MAX - stamp_offset(achieved_ms)
    return "".join(chr(_STAMP_ZERO + (value >> 6 * i & 63)) for i in range(STAMP_WIDTH - 1, -1, -1))


def member(player_id: str, achieved_ms: int) -> str:
    """A sorted-set member: the stamp of the entry's exact time, then the player id."""
    return stamp(achieved_ms) + player_id


def player_of(member: str) -> str:
    """The player id of a member."""
    return member[STAMP_WIDTH:]


def achieved_of(member: str) -> int:
    """The exact time (ms) a member's stamp holds; 0 for the stamp's first ms, which is
    also what an entry without a recorded time carries."""
    value = 0
    for char in member[:STAMP_WIDTH]:
        value = value * 64 + ord(char) - _STAMP_ZERO
    offset = STAMP_MAX - value
    return STAMP_EPOCH_MS + offset if offset else 0
