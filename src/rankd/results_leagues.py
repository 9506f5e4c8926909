"""The wire contract's answers of the league routes (CONTRACT v1.3 "Leagues";
rankd/results.py has the rest, and what ``Doc`` is)."""

from __future__ import annotations

from typing import Annotated, Literal

from typing_extensions import TypedDict  # pydantic reads typing's only from Python 3.12

from rankd.results import Doc, Entry, Head


class LeagueEntry(Entry):
    zone: Annotated[
        Literal["promote", "stay", "relegate"],
        Doc(description="promote, stay or relegate: its move if the period ended now"),
    ]


class Cohort(Head):
    tier: str
    cohort: Annotated[str, Doc(description="the cohort's id, <tier>-<n>")]
    ends_at: Annotated[str, Doc(description="when the period ends (its moves follow its grace)")]
    entries: Annotated[
        list[LeagueEntry], Doc(description="the cohort's entries, rank being the rank inside it")
    ]


class LeaguePeriod(TypedDict):
    period: str
    tier: str
    cohort: str
    rank: Annotated[
        int | None, Doc(description="the rank in the cohort at the freeze (null: no ranked entry)")
    ]
    moved: Literal["up", "down", "stay"]


class LeagueHistory(TypedDict):
    board_id: str
    player_id: str
    tier: Annotated[str, Doc(description="the player's tier now (new players: the first)")]
    history: Annotated[list[LeaguePeriod], Doc(description="frozen periods, newest first")]
