"""The league reads of RankdClient (CONTRACT v1.3 "Leagues"; sync.py has the rest; the
client class inherits these)."""

from __future__ import annotations

from typing import Any, Literal, cast

from rankd.client import calls
from rankd.client.calls import Call
from rankd.client.types import Cohort, LeagueHistory


class LeagueCalls:
    """Mixed into the client, whose ``_send`` they call."""

    def _send(self, call: Call) -> Any:  # the client's
        raise NotImplementedError

    def league(
        self,
        board_id: str,
        player_id: str,
        *,
        period: str | None = None,
        viewer: str | None = None,
        include: Literal["metadata"] | None = None,
    ) -> Cohort:
        """The player's cohort in the league window's period (default: the current one),
        ranked within it, each entry with its ``zone`` (promote, stay or relegate).
        PlayerNotRanked before their first counted run of the period."""
        where = calls.where_params(None, period, None, viewer, include=include)
        return cast(Cohort, self._send(calls.league(board_id, player_id, where)))

    def cohort(
        self,
        board_id: str,
        cohort: str,
        *,
        period: str | None = None,
        viewer: str | None = None,
        include: Literal["metadata"] | None = None,
    ) -> Cohort:
        """One cohort by its id (``"silver-3"``), ranked within it."""
        where = calls.where_params(None, period, None, viewer, include=include)
        return cast(Cohort, self._send(calls.cohort(board_id, cohort, where)))

    def leagues(self, player_id: str, board_id: str) -> LeagueHistory:
        """The player's tier on a league board now, and what each frozen period did to it
        (newest first)."""
        return cast(LeagueHistory, self._send(calls.leagues(player_id, board_id)))
