"""A typed Python client for Rankd's HTTP API (CONTRACT.md), on httpx.

``RankdClient`` for blocking code, ``AsyncRankdClient`` for asyncio; the same methods, one
per endpoint. Error answers raise :class:`RankdAPIError` subclasses (``.status``,
``.code``, ``.message``). Submits are retried on 503 with bounded exponential backoff
(:class:`RetryPolicy`); ``submit_many`` sends any number of runs as batches of up to 1000::

    from rankd.client import RankdClient

    with RankdClient("http://127.0.0.1:8000", key="dev-server-key") as rankd:
        rankd.submit("arena", "r-7f3a91", "48213377", 1284500)
        top = rankd.top("arena", n=10)

``key`` is any bearer credential: an admin or server key, or a player token. A game server
mints a player token (``mint_token``) and hands it to the game, whose client then reads as
that player's own view and, on boards with ``client_submits``, submits that player's runs::

    issued = rankd.mint_token("48213377", scope=["read", "submit"], ttl_s=3600)
    with RankdClient("http://127.0.0.1:8000", key=issued["token"]) as game:
        me = game.player("arena", "48213377")
        # live: the player's rank changes, and the listed friends who pass them
        for event in game.player_events("48213377", ["arena"], friends=["77"]):
            if event["kind"] == "passed":
                print(event["player_id"], "is ahead of you now")

Those events are typed :class:`StandingEvent` and :class:`PassedEvent` (``rankd.client.events``).
"""

from rankd.client import errors, events, types
from rankd.client.aio import AsyncRankdClient
from rankd.client.calls import MAX_BATCH, RetryPolicy
from rankd.client.errors import (
    BoardFull,
    BoardImmutableField,
    BoardNotFound,
    BodyTooLarge,
    Forbidden,
    HoldNotFound,
    InvalidRequest,
    NotBuilt,
    NotEnabled,
    NotOpen,
    PlayerNotRanked,
    RankdAPIError,
    RateLimited,
    RunConflict,
    ScoreOutOfRange,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from rankd.client.events import PassedEvent, PlayerEvent, StandingEvent
from rankd.client.sync import RankdClient

__all__ = [
    "MAX_BATCH",
    "AsyncRankdClient",
    "BoardFull",
    "BoardImmutableField",
    "BoardNotFound",
    "BodyTooLarge",
    "Forbidden",
    "HoldNotFound",
    "InvalidRequest",
    "NotBuilt",
    "NotEnabled",
    "NotOpen",
    "PassedEvent",
    "PlayerEvent",
    "PlayerNotRanked",
    "RankdAPIError",
    "RankdClient",
    "RateLimited",
    "RetryPolicy",
    "RunConflict",
    "ScoreOutOfRange",
    "StandingEvent",
    "Unauthorized",
    "Unavailable",
    "UnsupportedMediaType",
    "errors",
    "events",
    "types",
]
