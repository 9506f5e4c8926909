"""Each endpoint as a request description, shared by the sync and the async client, plus
what both do with an answer: decode it or raise its error, and when to retry.

Only submits are retried (runs and runs:batch): the service counts a ``run_id`` once, so a
run resent after a 503, a dropped connection or a timeout changes nothing twice. An error
answer other than 503 and a short 429 is never retried: not a 4xx (``forbidden`` for a player
token on a board without ``client_submits``, a 409 ``board_full`` on a join, say), nor a 501
(``not_enabled``, ``not_implemented``), which a retry cannot change.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast
from urllib.parse import quote

import httpx

from rankd.client.errors import RankdAPIError, RateLimited, Unavailable, error_for
from rankd.client.events import PLAYER_EVENT_KINDS, PlayerEvent
from rankd.client.types import MAX_BATCH as MAX_BATCH
from rankd.client.types import Run, TokenRequest, TokenScope


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    body: Any = None
    idempotent_submit: bool = False  # safe to resend: retried on 503 and lost connections


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff for submits: at most ``attempts`` calls, waiting about
    ``first_delay_s``, then twice as long each time, never more than ``max_delay_s`` (each
    wait jittered between half and all of it, so many clients do not retry in step)."""

    attempts: int = 5
    first_delay_s: float = 0.1
    max_delay_s: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.first_delay_s < 0 or self.max_delay_s < self.first_delay_s:
            raise ValueError("attempts >= 1 and 0 <= first_delay_s <= max_delay_s")

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first)."""
        ceiling = min(self.max_delay_s, self.first_delay_s * 2.0**retry)
        wait = ceiling / 2 + random.uniform(0, ceiling / 2)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return wait

    def should_retry(self, call: Call, attempt: int, failure: Exception) -> bool:
        """Whether a call that failed on attempt ``attempt`` (0-based) is sent again."""
        if not call.idempotent_submit or attempt + 1 >= self.attempts:
            return False
        if isinstance(failure, RateLimited):
            # only a short wait: a longer one is the caller's decision
            return failure.retry_after is None or failure.retry_after <= self.max_delay_s
        return isinstance(failure, Unavailable | httpx.TransportError)


def decode(response: httpx.Response) -> Any:
    """The JSON of a 2xx answer; an error answer raises its RankdAPIError subclass."""
    if response.status_code >= 400:
        try:
            body = response.json()
        except ValueError:
            body = None
        raise error_for(response.status_code, body, response.headers.get("retry-after"))
    return response.json()


def retry_after(failure: Exception) -> float | None:
    return failure.retry_after if isinstance(failure, RankdAPIError) else None


def _part(value: str) -> str:
    return quote(value, safe="")


def where_params(
    window: str | None,
    period: str | None,
    segment: str | None,
    viewer: str | None = None,
    **more: str | int | None,
) -> dict[str, str]:
    values = {"window": window, "period": period, "segment": segment, "viewer": viewer, **more}
    return {k: str(v) for k, v in values.items() if v is not None}


def time_text(value: str | datetime) -> str:
    """RFC 3339 as the contract writes it: UTC with milliseconds (an aware datetime only)."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        raise ValueError("ended_at must be timezone-aware (a naive time is ambiguous)")
    text = value.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


def run_body(
    run_id: str,
    player_id: str,
    score: int,
    ended_at: str | datetime | None,
    segments: dict[str, str] | None,
    metadata: dict[str, Any] | None = None,
) -> Run:
    run: Run = {"run_id": run_id, "player_id": player_id, "score": score}
    if ended_at is not None:
        run["ended_at"] = time_text(ended_at)
    if segments is not None:
        run["segments"] = segments
    if metadata is not None:
        run["metadata"] = metadata
    return run


def chunks(runs: Iterable[Run], size: int) -> Iterator[list[Run]]:
    if not 1 <= size <= MAX_BATCH:
        raise ValueError(f"batch size must be 1..{MAX_BATCH}")
    chunk: list[Run] = []
    for run in runs:
        chunk.append(run)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# --- the endpoints ------------------------------------------------------------------------


def put_board(board_id: str, config: dict[str, Any]) -> Call:
    return Call("PUT", f"/v1/boards/{_part(board_id)}", body=config)


def list_boards() -> Call:
    return Call("GET", "/v1/boards")


def get_board(board_id: str) -> Call:
    return Call("GET", f"/v1/boards/{_part(board_id)}")


def submit(board_id: str, run: Run) -> Call:
    return Call("POST", f"/v1/boards/{_part(board_id)}/runs", body=run, idempotent_submit=True)


def submit_batch(board_id: str, runs: Sequence[Run]) -> Call:
    if len(runs) > MAX_BATCH:
        raise ValueError(f"{len(runs)} runs: at most {MAX_BATCH} per batch (see submit_many)")
    path = f"/v1/boards/{_part(board_id)}/runs:batch"
    return Call("POST", path, body={"runs": list(runs)}, idempotent_submit=True)


def join(board_id: str, player_id: str, period: str | None) -> Call:
    # not retried (only submits are): a 409 board_full or not_open would answer the same
    params = {} if period is None else {"period": period}
    path = f"/v1/boards/{_part(board_id)}/players/{_part(player_id)}/join"
    return Call("POST", path, params=params)


def top(
    board_id: str, n: int, offset: int, where: dict[str, str], cursor: str | None = None
) -> Call:
    # a cursor (the previous page's next_cursor) replaces the offset
    paging = {"cursor": cursor} if cursor is not None else {"offset": str(offset)}
    params = {**where, "n": str(n), **paging}
    return Call("GET", f"/v1/boards/{_part(board_id)}/top", params=params)


def player(board_id: str, player_id: str, where: dict[str, str]) -> Call:
    return Call("GET", f"/v1/boards/{_part(board_id)}/players/{_part(player_id)}", params=where)


def around(board_id: str, player_id: str, range_: int, where: dict[str, str]) -> Call:
    path = f"/v1/boards/{_part(board_id)}/players/{_part(player_id)}/around"
    return Call("GET", path, params={**where, "range": str(range_)})


def friends(board_id: str, player_id: str, ids: Sequence[str], where: dict[str, str]) -> Call:
    path = f"/v1/boards/{_part(board_id)}/players/{_part(player_id)}/friends"
    return Call("GET", path, params={**where, "ids": ",".join(ids)})


def league(board_id: str, player_id: str, where: dict[str, str]) -> Call:
    path = f"/v1/boards/{_part(board_id)}/players/{_part(player_id)}/league"
    return Call("GET", path, params=where)


def cohort(board_id: str, cohort_id: str, where: dict[str, str]) -> Call:
    return Call("GET", f"/v1/boards/{_part(board_id)}/cohorts/{_part(cohort_id)}", params=where)


def leagues(player_id: str, board_id: str) -> Call:
    return Call("GET", f"/v1/players/{_part(player_id)}/leagues", params={"board": board_id})


def rank_of(board_id: str, score: int, where: dict[str, str]) -> Call:
    params = {**where, "score": str(score)}
    return Call("GET", f"/v1/boards/{_part(board_id)}/rank-of", params=params)


def periods(board_id: str, where: dict[str, str]) -> Call:
    return Call("GET", f"/v1/boards/{_part(board_id)}/periods", params=where)


def events(board_id: str, n: int, where: dict[str, str]) -> Call:
    params = {**where, "n": str(n)}
    return Call("GET", f"/v1/boards/{_part(board_id)}/events", params=params)


def _listed(ids: str | Sequence[str]) -> str:
    return ids if isinstance(ids, str) else ",".join(ids)


def player_events(
    player_id: str, boards: str | Sequence[str], friends: str | Sequence[str] | None
) -> Call:
    params = {"boards": _listed(boards)}
    if friends:
        params["friends"] = _listed(friends)
    return Call("GET", f"/v1/players/{_part(player_id)}/events", params=params)


def put_player(player_id: str, name: str | None, segments: dict[str, str] | None) -> Call:
    body: dict[str, Any] = {}
    if name is not None:
        body["name"] = name
    if segments is not None:
        body["segments"] = segments
    return Call("PUT", f"/v1/players/{_part(player_id)}", body=body)


def get_player(player_id: str) -> Call:
    return Call("GET", f"/v1/players/{_part(player_id)}")


def mint_token(player_id: str, ttl_s: int | None, scope: Sequence[TokenScope] | None) -> Call:
    body: TokenRequest = {}
    if ttl_s is not None:
        body["ttl_s"] = ttl_s
    if scope is not None:
        body["scope"] = list(scope)
    return Call("POST", f"/v1/players/{_part(player_id)}/tokens", body=body)


def standings(player_id: str, boards: str | Sequence[str], where: dict[str, str]) -> Call:
    params = {**where, "boards": _listed(boards)}
    return Call("GET", f"/v1/players/{_part(player_id)}/standings", params=params)


def ban(player_id: str, reason: str | None = None) -> Call:
    body = None if reason is None else {"reason": reason}
    return Call("POST", f"/v1/players/{_part(player_id)}/ban", body=body)


def unban(player_id: str) -> Call:
    return Call("DELETE", f"/v1/players/{_part(player_id)}/ban")


def close_period(board_id: str, period: str, window: str | None) -> Call:
    params = {} if window is None else {"window": window}
    path = f"/v1/boards/{_part(board_id)}/periods/{_part(period)}/close"
    return Call("POST", path, params=params)


def delete_entry(board_id: str, player_id: str, window: str | None, period: str | None) -> Call:
    params = {k: v for k, v in (("window", window), ("period", period)) if v is not None}
    return Call("DELETE", f"/v1/boards/{_part(board_id)}/entries/{_part(player_id)}", params=params)


def delete_board(board_id: str) -> Call:
    return Call("DELETE", f"/v1/boards/{_part(board_id)}")


def segments(board_id: str, where: dict[str, str]) -> Call:
    return Call("GET", f"/v1/boards/{_part(board_id)}/segments", params=where)


def erase_player(player_id: str) -> Call:
    return Call("DELETE", f"/v1/players/{_part(player_id)}")


def bans(limit: int, after: str | None) -> Call:
    params = {"limit": str(limit)} | ({} if after is None else {"after": after})
    return Call("GET", "/v1/bans", params=params)


def holds(board_id: str) -> Call:
    return Call("GET", f"/v1/boards/{_part(board_id)}/holds")


def deliveries(board_id: str, limit: int) -> Call:
    path = f"/v1/boards/{_part(board_id)}/deliveries"
    return Call("GET", path, params={"limit": str(limit)})


def decide_hold(board_id: str, run_id: str, decision: str) -> Call:
    return Call("POST", f"/v1/boards/{_part(board_id)}/holds/{_part(run_id)}/{decision}")


def healthz() -> Call:
    return Call("GET", "/healthz")


def readyz() -> Call:
    return Call("GET", "/readyz")


# --- server-sent events -------------------------------------------------------------------


class EventReader:
    """Reads a text/event-stream line by line: ``feed`` returns (event, data) at the blank
    line that ends an event; comments (the heartbeats) and other fields are skipped."""

    def __init__(self) -> None:
        self.event = "message"
        self.data: list[str] = []

    def feed(self, line: str) -> tuple[str, str] | None:
        if not line:
            found = (self.event, "\n".join(self.data)) if self.data else None
            self.event, self.data = "message", []
            return found
        if not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                self.event = value
            elif name == "data":
                self.data.append(value)
        return None


def top_event(found: tuple[str, str] | None) -> Any | None:
    """The top list an event carries, if it is a ``top`` event."""
    if found is None or found[0] != "top":
        return None
    return json.loads(found[1])


def player_event(found: tuple[str, str] | None) -> PlayerEvent | None:
    """A player stream's event (``standing`` or ``passed``), its payload with ``kind`` set to
    the event's name; None for anything else (a kind this client does not know is skipped)."""
    if found is None or found[0] not in PLAYER_EVENT_KINDS:
        return None
    return cast(PlayerEvent, {**json.loads(found[1]), "kind": found[0]})
