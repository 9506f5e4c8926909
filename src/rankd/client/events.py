"""What a player's own event stream sends (GET /v1/players/{player_id}/events), typed.

The stream's payloads are Server-Sent Events, not JSON answers, so they are not shapes of
rankd.results (nor of ``rankd.client.types``, which re-exports those only). Each event is
its payload as the service sends it, plus ``kind``, the SSE event name, so that a
``PlayerEvent`` narrows on ``event["kind"]``::

    async for event in rankd.player_events("48213377", ["arena"], friends=["77"]):
        if event["kind"] == "standing":
            print(event["rank"], event["previous_rank"])
        else:
            print(event["player_id"], "passed you: now", event["rank"])
"""

from __future__ import annotations

from typing import Literal, TypedDict


class StandingEvent(TypedDict):
    """The player's rank in one board window's current period (global standings): sent on
    connect for each window where the player has an entry, then whenever it changes (at most
    one a second per board and window, the latest state always sent)."""

    kind: Literal["standing"]
    board_id: str
    window: str
    period: str
    rank: int
    # the rank the stream last sent for this window; None on connect, in a new period, or
    # when the player had no entry before
    previous_rank: int | None


class PassedEvent(TypedDict):
    """One of the stream's listed friends, behind the player (or without an entry) at the
    last look, is now ahead of them."""

    kind: Literal["passed"]
    board_id: str
    window: str
    period: str
    player_id: str  # the friend
    rank: int  # the friend's rank now
    your_rank: int  # the followed player's rank now


PlayerEvent = StandingEvent | PassedEvent
"""Either event of a player's stream; ``kind`` tells which."""

PLAYER_EVENT_KINDS: frozenset[str] = frozenset({"standing", "passed"})
