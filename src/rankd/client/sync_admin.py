"""The admin key's calls of RankdClient: moderation, corrections, deletion,
webhook deliveries (sync.py has the rest; the client class inherits these)."""

from __future__ import annotations

from typing import Any, cast

from rankd.client import calls
from rankd.client.calls import Call
from rankd.client.types import (
    Ban,
    Bans,
    BoardDeleted,
    Delivery,
    EntryRemoved,
    Hold,
    HoldDecision,
    PeriodClosed,
    PlayerErased,
)


class AdminCalls:
    """Mixed into the client, whose ``_send`` they call."""

    def _send(self, call: Call) -> Any:  # the client's
        raise NotImplementedError

    def ban(self, player_id: str, reason: str | None = None) -> Ban:
        """Shadow-ban on every board; ``reason`` is kept for moderators (``bans()``)."""
        return cast(Ban, self._send(calls.ban(player_id, reason)))

    def close_period(
        self, board_id: str, period: str, *, window: str | None = None
    ) -> PeriodClosed:
        """Close an open period now (admin): runs into it answer closed from ``closed_at``
        on, and the season job freezes it as if it had ended."""
        return cast(PeriodClosed, self._send(calls.close_period(board_id, period, window)))

    def delete_entry(
        self,
        board_id: str,
        player_id: str,
        *,
        window: str | None = None,
        period: str | None = None,
    ) -> EntryRemoved:
        """Remove the player's entry from one period (a correction): their runs that ended by
        now no longer count there; the default window's current period when not named."""
        call = calls.delete_entry(board_id, player_id, window, period)
        return cast(EntryRemoved, self._send(call))

    def unban(self, player_id: str) -> Ban:
        return cast(Ban, self._send(calls.unban(player_id)))

    def bans(self, *, limit: int = 100, after: str | None = None) -> Bans:
        """Players banned now, newest first; pass ``next`` as ``after`` for the next page."""
        return cast(Bans, self._send(calls.bans(limit, after)))

    def erase_player(self, player_id: str) -> PlayerErased:
        """Erase a player everywhere, for a privacy request (admin key)."""
        return cast(PlayerErased, self._send(calls.erase_player(player_id)))

    def delete_board(self, board_id: str) -> BoardDeleted:
        """Delete a board with its standings, archive and holds (admin key)."""
        return cast(BoardDeleted, self._send(calls.delete_board(board_id)))

    def holds(self, board_id: str) -> list[Hold]:
        return cast(list[Hold], self._send(calls.holds(board_id))["holds"])

    def approve(self, board_id: str, run_id: str) -> HoldDecision:
        return cast(HoldDecision, self._send(calls.decide_hold(board_id, run_id, "approve")))

    def reject(self, board_id: str, run_id: str) -> HoldDecision:
        return cast(HoldDecision, self._send(calls.decide_hold(board_id, run_id, "reject")))

    def deliveries(self, board_id: str, *, limit: int = 100) -> list[Delivery]:
        """The board's webhook deliveries (admin key), newest first: one per period frozen
        while it had ``hooks.period_closed``; ``limit`` 1..1000."""
        call = calls.deliveries(board_id, limit)
        return cast(list[Delivery], self._send(call)["deliveries"])
