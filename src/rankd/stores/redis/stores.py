"""The Redis stores of one process, one attribute per concern, sharing one connection."""

from __future__ import annotations

from redis.asyncio import Redis

from rankd.stores.redis.admission import Admission
from rankd.stores.redis.common import Shards
from rankd.stores.redis.connection import RedisConn
from rankd.stores.redis.erase import BoardKeys
from rankd.stores.redis.histograms import HistogramKeys
from rankd.stores.redis.leagues import LeagueKeys
from rankd.stores.redis.limits import RateLimits
from rankd.stores.redis.marks import Marks, PeriodsIndex
from rankd.stores.redis.moves import Moves
from rankd.stores.redis.notices import Notices
from rankd.stores.redis.positions import Positions
from rankd.stores.redis.profiles import Profiles
from rankd.stores.redis.reads import Reads
from rankd.stores.redis.rolling import RollingKeys
from rankd.stores.redis.seasons import SeasonKeys
from rankd.stores.redis.sharded import ShardedReads
from rankd.stores.redis.staging import Loads
from rankd.stores.redis.tournaments import TournamentKeys
from rankd.stores.redis.writes import Writes


class RedisStores:
    """Wiring only: the runtime builds one and hands each service the concerns it uses."""

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 64,
        pool_timeout_s: float = 10.0,
        index_memo_s: float = 60.0,
        index_memo_bytes: int = 1 << 20,
        marks_keep_s: float = 15.0,
        batch_in_flight: int = 4,
        read_from_replicas: bool = False,
    ) -> None:
        # standalone, Cluster or Sentinel, as the URL says; a bad URL raises BadRedisUrl
        # here, before anything connects
        self.conn = conn = RedisConn(
            url,
            max_connections=max_connections,
            pool_timeout_s=pool_timeout_s,
            batch_in_flight=batch_in_flight,
            read_from_replicas=read_from_replicas,
        )
        self.shards = shards = Shards()
        self.index = index = PeriodsIndex(conn, memo_s=index_memo_s, memo_bytes=index_memo_bytes)
        self.marks = marks = Marks(conn, keep_s=marks_keep_s)
        sharded = ShardedReads(conn.client, conn.pipeline)
        self.writes = Writes(conn, index, marks)
        self.reads = Reads(conn, shards, index, sharded)
        self.notices = Notices(conn)
        self.moves = Moves(conn, shards)
        self.seasons = SeasonKeys(conn, shards, sharded)
        self.board_keys = BoardKeys(conn, index)
        self.admission = Admission(conn)
        self.profiles = Profiles(conn)
        self.limits = RateLimits(conn)
        self.positions = Positions(conn)
        self.loads = Loads(conn, shards)
        self.tournaments = TournamentKeys(conn)
        self.leagues = LeagueKeys(conn)
        self.histograms = HistogramKeys(conn)
        self.rolling = RollingKeys(conn, shards)

    @property
    def client(self) -> Redis:
        return self.conn.client

    async def open(self) -> None:
        await self.conn.open()

    async def close(self) -> None:
        await self.conn.close()
