"""Player profiles: a display name and segments (``{"country": "FR"}``).

PostgreSQL's ``players`` table is the durable record; Redis holds copies (names, profile
segments) that the read and submit paths use. A run that leaves out some of its board's
segment dimensions takes them from the player's profile at submit time, before it is
logged, so a replay puts it in the same standings whatever the profile says later.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NotRequired, TypedDict

from rankd.boards import BoardConfig
from rankd.errors import Unavailable
from rankd.runs import Run
from rankd.services.names import NameCache
from rankd.stores.postgres import PostgresStore
from rankd.stores.redis.profiles import Profiles


class Profile(TypedDict):
    player_id: str
    name: str | None
    segments: dict[str, str]
    banned: NotRequired[bool]  # only in an admin's view


class Players:
    def __init__(
        self,
        pg: PostgresStore,
        store: Profiles,
        names: NameCache,
        restoring_profiles: Callable[[], bool] | None = None,
    ) -> None:
        self.pg = pg
        self.store = store
        self.names = names
        self.restoring_profiles = restoring_profiles

    async def put(
        self, player_id: str, name: str | None, segments: dict[str, str] | None
    ) -> Profile:
        """Durable first (PostgreSQL), then the Redis copies and this process's name cache."""
        stored_name, stored_segments = await self.pg.set_profile(player_id, name, segments)
        if name is not None:
            await self.names.set_copy(player_id, name)
        if segments is not None:
            await self.store.set_profile_segments(player_id, stored_segments)
        return {"player_id": player_id, "name": stored_name, "segments": stored_segments}

    async def get(self, player_id: str) -> Profile:
        name, segments = await self.pg.get_profile(player_id)
        return {"player_id": player_id, "name": name, "segments": segments}

    async def fill_segments(self, board: BoardConfig, runs: Sequence[Run]) -> None:
        """Complete each run's segments from its player's profile (the run's own win)."""
        if not board.segments:
            return
        missing = [r for r in runs if len(r.segments) < len(board.segments)]
        if not missing:
            return
        if self.restoring_profiles is not None and self.restoring_profiles():
            # Redis's copy of the profiles is being restored: a run must not be logged with
            # segments resolved from half of it
            raise Unavailable("player profiles are being restored after a Redis restart; retry")
        players = list(dict.fromkeys(r.player_id for r in missing))
        profiles = dict(zip(players, await self.store.profile_segments(players), strict=True))
        for run in missing:
            own = dict(run.segments)
            profile = profiles[run.player_id]
            run.segments = tuple(
                (d, own.get(d) or profile[d]) for d in board.segments if d in own or d in profile
            )
