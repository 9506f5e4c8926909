"""The score histograms of sharded boards: which bucket a composite falls in.

Each shard of a sharded board keeps, beside its public key, a hash ``<key>:hist`` of
bucket -> entries, kept up to date by the scripts that write the key (lua/lib.lua
hist_move) and counted afresh after a rebuild (lua/hist_rebuild.lua). A reader estimates a
rank from the other shards' histograms (services/approx.py) with no fan-out.

The buckets are log-scale over the composite, whose high bits are the score: a composite
below 256 is its own bucket; above, each power of two is cut into 256 buckets, so a bucket
spans at most 1/256 of its composites' value. The edges thus follow the board's scores
wherever they lie (a board of scores near 10^3 and one near 10^9 get the same relative
resolution) and need no configuration or re-deriving; a composite below 2^53 has one of at
most 11,776 buckets. lua/lib.lua hist_bucket computes the same
(tests/integration/services/test_sharded.py).

Pure: no I/O.
"""

from __future__ import annotations

BUCKETS_PER_OCTAVE = 256
MAX_BUCKETS = 46 * BUCKETS_PER_OCTAVE  # bucket ids of composites below 2**53


def bucket(composite: int) -> int:
    """The bucket of ``composite``; buckets ascend with composites."""
    if composite < BUCKETS_PER_OCTAVE:
        return composite
    e = max(0, composite.bit_length() - 9)
    return e * BUCKETS_PER_OCTAVE + (composite >> e)


def floor_of(b: int) -> int:
    """The lowest composite of bucket ``b``."""
    if b < BUCKETS_PER_OCTAVE:
        return b
    e = b // BUCKETS_PER_OCTAVE - 1
    return (b - e * BUCKETS_PER_OCTAVE) << e
