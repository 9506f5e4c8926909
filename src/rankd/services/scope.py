"""Which board period a read is about (Scope), resolved from a request's window, period
and segment parameters."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rankd import cursors
from rankd.boards import BoardConfig
from rankd.errors import InvalidRequest, PlayerNotRanked
from rankd.formats import SEGMENT_VALUE_PATTERN, is_segment_value
from rankd.periods import Period, PeriodError, PeriodRef
from rankd.results import Head


@dataclass(frozen=True, slots=True)
class Scope:
    """Which board period a read is about."""

    board: BoardConfig
    window: str
    period: Period
    segment: str = ""  # "" for the global standings, else "<dimension>:<value>"

    @property
    def ref(self) -> PeriodRef:
        return PeriodRef(self.board.board_id, self.window, self.period.id, self.segment)

    @property
    def head(self) -> Head:
        return {"board_id": self.board.board_id, "window": self.window, "period": self.period.id}

    def cursor_read(self, viewer: str) -> cursors.Read:
        """The list a cursor of this scope pages (``viewer``: "" for the public list)."""
        board = self.board
        return cursors.Read(
            board.board_id, board.generation, self.window, self.period.id, self.segment, viewer
        )

    def not_ranked(self, player_id: str) -> PlayerNotRanked:
        return PlayerNotRanked(
            f"player {player_id!r} has no entry in {self.window} period {self.period.id}"
        )


def resolve_segment(board: BoardConfig, segment: str | None) -> str:
    """A read's ``segment=<dimension>:<value>`` ("" for the global standings)."""
    if segment is None:
        return ""
    dimension, colon, value = segment.partition(":")
    if not colon or dimension not in board.segments or not is_segment_value(value):
        known = ", ".join(board.segments) or "none"
        raise InvalidRequest(
            f"segment must be <dimension>:<value> with one of this board's dimensions "
            f"({known}) and a value matching {SEGMENT_VALUE_PATTERN}"
        )
    return segment


def resolve_scope(
    board: BoardConfig, window: str | None, period: str | None, segment: str | None = None
) -> Scope:
    window = window or board.default_window
    if window not in board.windows:
        raise InvalidRequest(
            f"window must be one of this board's windows: {', '.join(board.windows)}"
        )
    try:
        if period is None:
            resolved = board.current_period(window, int(time.time() * 1000))
        else:
            resolved = board.period_of(window, period)
    except PeriodError as exc:
        raise InvalidRequest(str(exc)) from exc
    return Scope(board, window, resolved, resolve_segment(board, segment))
