"""AsyncRankdClient: the HTTP API from asyncio code (httpx.AsyncClient)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, cast

import httpx

from rankd.client import calls
from rankd.client.aio_admin import AsyncAdminCalls
from rankd.client.aio_leagues import AsyncLeagueCalls
from rankd.client.calls import Call, RetryPolicy
from rankd.client.events import PlayerEvent
from rankd.client.types import (
    Around,
    BatchItem,
    Board,
    Friends,
    Health,
    Joined,
    Periods,
    PlayerRank,
    PlayerStandings,
    PlayerTokenIssued,
    Profile,
    RankOf,
    Ready,
    Run,
    Segments,
    SubmitResult,
    TokenScope,
    Top,
    TopPage,
)


class AsyncRankdClient(AsyncAdminCalls, AsyncLeagueCalls):
    """A Rankd service at ``base_url``. ``key`` is the bearer credential every call sends:
    an admin or server key, or a player token (``mint_token``'s ``token``, for a game
    client: reads are that player's own view, submits need a board with ``client_submits``
    and the ``submit`` scope, key routes answer 403); none: public reads only. Errors raise
    :class:`rankd.client.RankdAPIError` subclasses."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        key: str | None = None,
        *,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.retry = retry or RetryPolicy()
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout, transport=transport
        )

    async def __aenter__(self) -> AsyncRankdClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, params=call.params or None, json=call.body
                )
                return calls.decode(response)
            except Exception as failure:
                if not self.retry.should_retry(call, attempt, failure):
                    raise
                await asyncio.sleep(self.retry.delay(attempt, calls.retry_after(failure)))
                attempt += 1

    # --- boards -----------------------------------------------------------------------------

    async def put_board(self, board_id: str, **config: Any) -> Board:
        """Create or update a board (admin key); omitted fields keep their value.
        ``hooks={"period_closed": url}`` has each frozen period POSTed to ``url`` (the
        service needs RANKD_WEBHOOK_SECRET, else InvalidRequest); ``None`` as the URL
        removes it. Only an admin key's reads show a board's ``hooks``."""
        return cast(Board, await self._send(calls.put_board(board_id, config)))

    async def list_boards(self) -> list[Board]:
        return cast(list[Board], (await self._send(calls.list_boards()))["boards"])

    async def get_board(self, board_id: str) -> Board:
        return cast(Board, await self._send(calls.get_board(board_id)))

    # --- runs (server key; a player token its own runs, on client_submits boards) -----------

    async def submit(
        self,
        board_id: str,
        run_id: str,
        player_id: str,
        score: int,
        *,
        ended_at: str | datetime | None = None,
        segments: dict[str, str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SubmitResult:
        """Submit one run; retried on 503 (resending a run_id is harmless). With a player
        token: that player's own run, on a board with ``client_submits`` (else Forbidden).
        ``metadata``: a JSON object (at most 16 keys, 1,024 bytes encoded; else
        InvalidRequest) kept with the entry the run holds; reads with
        ``include="metadata"`` return it."""
        run = calls.run_body(run_id, player_id, score, ended_at, segments, metadata)
        return cast(SubmitResult, await self._send(calls.submit(board_id, run)))

    async def submit_batch(self, board_id: str, runs: Sequence[Run]) -> list[BatchItem]:
        """Up to 1000 runs in one call: one result per run, in order."""
        return cast(
            list[BatchItem], (await self._send(calls.submit_batch(board_id, runs)))["results"]
        )

    async def submit_many(
        self, board_id: str, runs: Iterable[Run], *, batch_size: int = calls.MAX_BATCH
    ) -> list[BatchItem]:
        """Any number of runs, as runs:batch calls of ``batch_size``; results in order."""
        results: list[BatchItem] = []
        for chunk in calls.chunks(runs, batch_size):
            results += await self.submit_batch(board_id, chunk)
        return results

    # --- tournaments (server key; a player token with the join scope, its own player) ------

    async def join(self, board_id: str, player_id: str, period: str | None = None) -> Joined:
        """Join a scheduled board's occurrence: the one open now, or with ``period`` an
        upcoming (or open) one by its id (``20261205T1800Z``); joining again is harmless. On
        a board with ``join_required`` only joined players' runs count there. Raises
        BoardFull (409) when the occurrence has its ``max_entrants`` players, NotOpen (409)
        when there is none to join (none open, the named one over or not an occurrence, or
        no schedule); neither is retried. With a player token: that player only, and the
        token needs the ``join`` scope (else Forbidden)."""
        return cast(Joined, await self._send(calls.join(board_id, player_id, period)))

    # --- reads (public; viewer= needs a server key; a player token reads its own view) ------

    async def top(
        self,
        board_id: str,
        n: int = 10,
        offset: int = 0,
        *,
        window: str | None = None,
        period: str | None = None,
        segment: str | None = None,
        viewer: str | None = None,
        cursor: str | None = None,
        include: Literal["metadata"] | None = None,
    ) -> TopPage:
        """``n`` entries from ``offset``, or after ``cursor`` (a page's ``next_cursor``:
        exact under concurrent writes, at any depth); the answer's ``next_cursor`` is
        None on the last page. ``include="metadata"``: each entry also carries
        ``metadata``, the metadata of the run holding it (None: the run had none)."""
        where = calls.where_params(window, period, segment, viewer, include=include)
        return cast(TopPage, await self._send(calls.top(board_id, n, offset, where, cursor)))

    async def player(
        self,
        board_id: str,
        player_id: str,
        *,
        window: str | None = None,
        period: str | None = None,
        segment: str | None = None,
        viewer: str | None = None,
        accuracy: Literal["exact", "approx"] | None = None,
        include: Literal["metadata"] | None = None,
    ) -> PlayerRank:
        """The player's entry, rank, total and percentile (PlayerNotRanked without one).
        ``include="metadata"``: the answer also carries ``metadata``, the metadata of the
        run holding the entry (None: the run had none)."""
        where = calls.where_params(
            window, period, segment, viewer, accuracy=accuracy, include=include
        )
        return cast(PlayerRank, await self._send(calls.player(board_id, player_id, where)))

    async def around(
        self,
        board_id: str,
        player_id: str,
        range: int = 5,
        *,
        window: str | None = None,
        period: str | None = None,
        segment: str | None = None,
        viewer: str | None = None,
        include: Literal["metadata"] | None = None,
    ) -> Around:
        """The player and up to ``range`` entries either side; ``include="metadata"``: each
        entry also carries ``metadata`` (None: its run had none)."""
        where = calls.where_params(window, period, segment, viewer, include=include)
        return cast(Around, await self._send(calls.around(board_id, player_id, range, where)))

    async def friends(
        self,
        board_id: str,
        player_id: str,
        ids: Sequence[str],
        *,
        window: str | None = None,
        period: str | None = None,
        segment: str | None = None,
        viewer: str | None = None,
        include: Literal["metadata"] | None = None,
    ) -> Friends:
        """The player and those of ``ids`` with an entry, best first (``not_found``: the
        others); ``include="metadata"``: each entry also carries ``metadata`` (None: its run
        had none)."""
        where = calls.where_params(window, period, segment, viewer, include=include)
        return cast(Friends, await self._send(calls.friends(board_id, player_id, ids, where)))

    async def standings(
        self,
        player_id: str,
        boards: Sequence[str],
        window: str | None = None,
        *,
        viewer: str | None = None,
    ) -> PlayerStandings:
        """One player's standing on each of ``boards`` (up to 100) in the current period of
        ``window`` (default: each board's first). Boards where the player has no entry, or
        that lack the window, are left out; ids of boards that do not exist come back in
        ``unknown_boards``."""
        where = calls.where_params(window, None, None, viewer)
        call = calls.standings(player_id, boards, where)
        return cast(PlayerStandings, await self._send(call))

    async def rank_of(
        self,
        board_id: str,
        score: int,
        *,
        window: str | None = None,
        period: str | None = None,
        segment: str | None = None,
    ) -> RankOf:
        where = calls.where_params(window, period, segment)
        return cast(RankOf, await self._send(calls.rank_of(board_id, score, where)))

    async def periods(
        self, board_id: str, *, window: str | None = None, segment: str | None = None
    ) -> Periods:
        where = calls.where_params(window, None, segment)
        return cast(Periods, await self._send(calls.periods(board_id, where)))

    async def events(
        self,
        board_id: str,
        n: int = 10,
        *,
        window: str | None = None,
        period: str | None = None,
        segment: str | None = None,
    ) -> AsyncIterator[Top]:
        """The live top list: the first on connect, then each change (server-sent events)."""
        call = calls.events(board_id, n, calls.where_params(window, period, segment))
        async with contextlib.aclosing(self._stream(call)) as stream:
            async for found in stream:
                top = calls.top_event(found)
                if top is not None:
                    yield cast(Top, top)

    async def player_events(
        self,
        player_id: str,
        boards: Sequence[str],
        friends: Sequence[str] | None = None,
    ) -> AsyncGenerator[PlayerEvent, None]:
        """One player's live events on ``boards`` (up to 20; each board window's current
        period, global standings), as server-sent events, read as they come: a
        :class:`StandingEvent` on connect for each window where the player has an entry and
        whenever their rank changes (at most one a second per board and window), a
        :class:`PassedEvent` when one of ``friends`` (up to 100) overtakes them; narrow on
        ``event["kind"]``. Needs a server key or that player's own token (scope ``read``;
        another player's id is Forbidden). The request goes out at the first iteration, which
        raises an error answer as any call does (InvalidRequest, BoardNotFound, Unavailable
        when the instance serves its maximum of streams, ...); the stream has no timeout:
        end it with ``aclose()`` (or iterate it in ``contextlib.aclosing``)."""
        call = calls.player_events(player_id, boards, friends)
        async with contextlib.aclosing(self._stream(call)) as stream:
            async for found in stream:
                event = calls.player_event(found)
                if event is not None:
                    yield event

    async def _stream(self, call: Call) -> AsyncGenerator[tuple[str, str], None]:
        """The (event, data) pairs of a text/event-stream, line by line as they arrive; an
        error answer raises its RankdAPIError subclass before any. Its callers close it
        (contextlib.aclosing) when they are closed, so the connection ends with them."""
        async with self._http.stream(
            "GET", call.path, params=call.params, timeout=None
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                calls.decode(response)
            reader = calls.EventReader()
            async for line in response.aiter_lines():
                found = reader.feed(line)
                if found is not None:
                    yield found

    # --- players (server key) and moderation (admin key) --------------------------------------

    async def put_player(
        self, player_id: str, *, name: str | None = None, segments: dict[str, str] | None = None
    ) -> Profile:
        return cast(Profile, await self._send(calls.put_player(player_id, name, segments)))

    async def get_player(self, player_id: str) -> Profile:
        return cast(Profile, await self._send(calls.get_player(player_id)))

    async def mint_token(
        self,
        player_id: str,
        *,
        scope: Sequence[TokenScope] | None = None,
        ttl_s: int | None = None,
    ) -> PlayerTokenIssued:
        """A player token for a game client (server key): ``scope`` of ``read``, ``submit``,
        ``join`` (service default: read only), valid ``ttl_s`` seconds, 60..604800 (service
        default: 3600). Pass its ``token`` as the game client's ``key``. Raises NotEnabled
        when the service has no RANKD_PLAYER_TOKEN_SECRET."""
        call = calls.mint_token(player_id, ttl_s, scope)
        return cast(PlayerTokenIssued, await self._send(call))

    async def segments(
        self, board_id: str, *, window: str | None = None, period: str | None = None
    ) -> Segments:
        """The segment values with public entries in a period, most entries first."""
        where = calls.where_params(window, period, None)
        return cast(Segments, await self._send(calls.segments(board_id, where)))

    # --- operations ---------------------------------------------------------------------------

    async def healthz(self) -> Health:
        return cast(Health, await self._send(calls.healthz()))

    async def readyz(self) -> Ready:
        """200 answers (ready or degraded); a 503 raises Unavailable."""
        return cast(Ready, await self._send(calls.readyz()))
