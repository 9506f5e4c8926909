"""What the Redis store's concerns share: reply parsing, a period's side keys and each board's
shards (noted by the board registry)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankd.boards import BoardConfig
from rankd.periods import PeriodRef
from rankd.stores.redis import keys

# (player_id, composite, exact achieved ms or 0) rows of a range read, best first
Rows = list[tuple[str, int, int]]
# A player's own view of a period: (side: "public", "shadow" or "pending"; composite; rank
# 1-based among the public entries; exact achieved ms or 0), or None: no entry anywhere.
Own = tuple[str, int, int, int] | None
SIDES = ("public", "shadow", "pending")


def number(raw: Any) -> int:
    # Redis may render a large double either way; both parse exactly below 2**53.
    return int(float(raw))


def text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def name(raw: Any) -> str | None:
    return raw.decode() if isinstance(raw, bytes) else raw


def rows(flat: Sequence[Any]) -> Rows:
    """Rows from a script's flat member, score, exact time list."""
    return [(text(flat[i]), number(flat[i + 1]), int(flat[i + 2])) for i in range(0, len(flat), 3)]


def side_keys(pk: keys.PeriodKeys, side: str) -> tuple[str, str, str]:
    """A submit script's keys: where the entry is written, the public board the rank is read
    from, and the side the entry must leave if it is there (a ban or unban the writer did not
    know of yet; itself for none)."""
    if side == "public":
        return pk.public, pk.public, pk.shadow
    if side == "shadow":
        return pk.shadow, pk.public, pk.public
    return pk.pending, pk.public, pk.pending


def sum_args(board: BoardConfig, window: str) -> tuple[int, int, str]:
    """What a script needs to add up a sum board's totals: 2^time_bits, max_score, order."""
    return 1 << board.codecs[window].time_bits, board.max_score, board.order


def mark_of(run_id: str, player_id: str) -> str:
    """A run's member in a period's :applied key (and in a sum board's counted runs)."""
    return f"{player_id}|{run_id}"


class Shards:
    """Each board's shards (1: unsharded; a placement.Layout, which names its keys), noted
    by the board registry whenever it loads a config, and the second layout writes also go
    to while the board is resharded; one small entry per board this process has seen."""

    def __init__(self) -> None:
        self.by_board: dict[str, int] = {}
        self.other: dict[str, int] = {}

    def note(self, board_id: str, shards: int, other: int | None = None) -> None:
        """Remember a board's shards (the board registry calls this for every config)."""
        self.by_board[board_id] = shards
        if other is None:
            self.other.pop(board_id, None)
        else:
            self.other[board_id] = other

    def of(self, board_id: str) -> int:
        """The layout reads are served from."""
        return self.by_board.get(board_id, 1)

    def written(self, board_id: str) -> list[int]:
        """The layouts a write goes to: the served one, and the other one of a move."""
        other = self.other.get(board_id)
        return [self.of(board_id)] if other is None else [self.of(board_id), other]

    def own(self, ref: PeriodRef, player_id: str) -> keys.PeriodKeys:
        """A player's keys of a period: their shard's on a sharded board."""
        return keys.own_keys(*ref, player_id, self.of(ref.board))

    def every(self, ref: PeriodRef) -> list[keys.PeriodKeys]:
        """Every shard's keys of a period (one set on an unsharded board)."""
        return keys.shard_keys(*ref, self.of(ref.board))
