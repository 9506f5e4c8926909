"""Hostile ids on every route: control characters, NUL, dots, braces, wildcards, quotes,
non-ASCII, very long values, in paths, bodies and queries.

Every one gets a clear 4xx in the contract's error shape, never a 5xx, and changes nothing:
a rejected submit is neither on the boards nor in the log. Board ids with dots (``a..b``,
``x.``) are valid (``^[a-z0-9][a-z0-9_.-]{0,63}$``) and must work end to end.
"""

from __future__ import annotations

import asyncio
import gzip
import re
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qsl, quote

import httpx
import nats
import psycopg
import pytest

from rankd.formats import clip, is_board_id, is_player_id, is_run_id
from tests.support.common import ADMIN_H, SERVER_H, Urls, make_settings
from tests.support.wire import assert_error

# Characters that break text protocols, key schemes, patterns, subjects and shells.
HOSTILE: list[str] = [
    "x\n",
    "\nx",
    "x\r",
    "x\r\nHost: evil",
    "x\x00",
    "\x00",
    "x\t",
    "x{y}",
    "{x}",
    "x*",
    "*",
    "x>",
    ">",
    "x y",
    " x",
    "x ",
    'x"y',
    "x'y",
    "x;y",
    "x\\y",
    "x%y",
    "x:y",
    "x.y",
    ".x",
    "-x",
    "..",
    "X",
    "é",
    "xé",
    "x\u2028",
    "x\ufeff",
    "x\U0001f600",
    "x\u0663",  # an Arabic-Indic digit: ``\d`` matches it, the contract's [0-9] does not
    "\uff58",  # fullwidth x
    "a" * 65,
    "a" * 129,
    "a" * 10_000,  # httpx refuses URLs past 64 KiB; servers' request-line limits are lower
]

# Period ids that no window has, or that lie outside the calendar the service can represent.
BAD_PERIODS: dict[str, list[str]] = {
    "daily": ["9999-12-31", "0000-01-01", "2026-02-30", "2026-13-01", "2026-1-1", "2026-11"],
    "weekly": ["9999-W52", "2026-W54", "2026-W00", "2026-W1", "2026-11-03"],
    "monthly": ["0000-01", "2026-13", "2026-00", "2026-W45", "2026-11-03"],
    "all-time": ["2026-11-03", "alltime", "all_time", "ALL-TIME"],
}
# Outside the calendar: fixed on main in parallel (the period range).


def bad_for(valid: Callable[[object], bool]) -> list[str]:
    return [v for v in HOSTILE if not valid(v)]


def bad_board_ids() -> list[Any]:
    return list(bad_for(is_board_id))


def label(value: str) -> str:
    shown = value if len(value) <= 20 else f"{value[:8]}...({len(value)})"
    return ascii(shown)


def seg(value: str) -> str:
    """One path segment, percent-encoded; dots too, so no client resolves ``..``."""
    return quote(value, safe="").replace(".", "%2E")


def assert_4xx(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code < 500, (response.request.url, response.text)
    assert_error(response, status, code)


def run_body(run_id: str = "r-1", player_id: str = "p1", score: int = 10) -> dict[str, Any]:
    return {"run_id": run_id, "player_id": player_id, "score": score}


# --- fixtures --------------------------------------------------------------------------

WINDOWS = ["all-time", "daily", "weekly", "monthly"]


@pytest.fixture(scope="module")
async def board(client: httpx.AsyncClient) -> str:
    """A board with every window and one ranked player, p1."""
    board_id = f"hostile-{uuid.uuid4().hex[:10]}"
    response = await client.put(
        f"/v1/boards/{board_id}", json={"windows": WINDOWS}, headers=ADMIN_H
    )
    assert response.status_code == 201, response.text
    response = await client.post(
        f"/v1/boards/{board_id}/runs", json=run_body("seed-1", "p1", 5), headers=SERVER_H
    )
    assert response.status_code == 200, response.text
    return board_id


@pytest.fixture
async def empty_board(client: httpx.AsyncClient, make_board: Any) -> str:
    board_id: str = await make_board(windows=WINDOWS)
    return board_id


@pytest.fixture(scope="module")
async def jetstream(urls: Urls) -> AsyncIterator[Any]:
    nc = await nats.connect(urls.nats)
    yield nc.jetstream()
    await nc.close()


async def log_last_seq(js: Any, urls: Urls) -> int:
    info = await js.stream_info(make_settings(urls).stream)
    return int(info.state.last_seq)


async def durable_entries(urls: Urls, board_id: str, expected: int) -> int:
    """How many all-time entries the durable PostgreSQL copy holds for the board, once the
    log consumer has caught up to ``expected`` (or after a few seconds)."""
    async with await psycopg.AsyncConnection.connect(urls.postgres, autocommit=True) as conn:
        for _ in range(100):
            cur = await conn.execute(
                "SELECT count(*) FROM player_best WHERE board_id = %s AND win = 'all-time'",
                (board_id,),
            )
            row = await cur.fetchone()
            count = int(row[0]) if row else 0
            if count >= expected:
                return count
            await asyncio.sleep(0.1)
    return count


async def assert_board_empty(client: httpx.AsyncClient, board_id: str) -> None:
    for window in WINDOWS:
        response = await client.get(f"/v1/boards/{board_id}/top", params={"window": window})
        assert response.status_code == 200, response.text
        assert response.json()["total"] == 0, response.text


# --- board_id in the path ----------------------------------------------------------------

# (method, path after the board id, headers, body): every route under /v1/boards/{board_id}.
BOARD_ROUTES: list[tuple[str, str, dict[str, str], Any]] = [
    ("GET", "", {}, None),
    ("POST", "/runs", SERVER_H, run_body()),
    ("POST", "/runs:batch", SERVER_H, {"runs": [run_body()]}),
    ("GET", "/top", {}, None),
    ("GET", "/players/p1", {}, None),
    ("GET", "/players/p1/around", {}, None),
    ("GET", "/players/p1/friends?ids=p2", {}, None),
    ("GET", "/rank-of?score=1", {}, None),
    ("GET", "/periods", {}, None),
]


@pytest.mark.parametrize("value", bad_board_ids(), ids=label)
async def test_hostile_board_id_is_404_on_every_board_route(
    client: httpx.AsyncClient, value: str
) -> None:
    for method, rest, headers, body in BOARD_ROUTES:
        response = await client.request(
            method, f"/v1/boards/{seg(value)}{rest}", headers=headers, json=body
        )
        assert_4xx(response, 404, "board_not_found")


@pytest.mark.parametrize("value", bad_board_ids(), ids=label)
async def test_hostile_board_id_cannot_be_created(client: httpx.AsyncClient, value: str) -> None:
    response = await client.put(f"/v1/boards/{seg(value)}", json={}, headers=ADMIN_H)
    assert_4xx(response, 400, "invalid_request")
    assert "board_id" in response.json()["error"]["message"]
    listed = await client.get("/v1/boards")
    assert listed.status_code == 200, listed.text
    assert all(is_board_id(b["board_id"]) for b in listed.json()["boards"])


# --- player_id in the path ---------------------------------------------------------------


@pytest.mark.parametrize("value", bad_for(is_player_id), ids=label)
async def test_hostile_player_id_in_read_paths_is_400(
    client: httpx.AsyncClient, board: str, value: str
) -> None:
    for rest in ("", "/around", "/friends?ids=p1"):
        response = await client.get(f"/v1/boards/{board}/players/{seg(value)}{rest}")
        assert_4xx(response, 400, "invalid_request")


@pytest.mark.parametrize("value", bad_for(is_player_id), ids=label)
async def test_hostile_player_id_cannot_get_a_name(client: httpx.AsyncClient, value: str) -> None:
    response = await client.put(
        f"/v1/players/{seg(value)}", json={"name": "mallory"}, headers=SERVER_H
    )
    assert_4xx(response, 400, "invalid_request")


# --- run_id and player_id in run bodies --------------------------------------------------

BODY_CASES = [("run_id", v) for v in ["", *bad_for(is_run_id)]] + [
    ("player_id", v) for v in ["", *bad_for(is_player_id)]
]


@pytest.mark.parametrize(("field", "value"), BODY_CASES, ids=lambda x: label(str(x)))
async def test_hostile_id_in_a_run_is_rejected_and_changes_nothing(
    client: httpx.AsyncClient, jetstream: Any, urls: Urls, empty_board: str, field: str, value: str
) -> None:
    run = run_body() | {field: value}
    logged = await log_last_seq(jetstream, urls)
    response = await client.post(f"/v1/boards/{empty_board}/runs", json=run, headers=SERVER_H)
    assert_4xx(response, 400, "invalid_request")
    assert field in response.json()["error"]["message"]

    batch = await client.post(
        f"/v1/boards/{empty_board}/runs:batch", json={"runs": [run, run]}, headers=SERVER_H
    )
    assert batch.status_code == 200, batch.text
    results = batch.json()["results"]
    assert len(results) == 2
    for result in results:
        assert set(result) == {"run_id", "error"}, result
        assert set(result["error"]) == {"code", "message"}
        assert result["error"]["code"] == "invalid_request"
        # an invalid run_id comes back as errors echo ids, cut at 80 characters
        if field == "run_id":
            assert result["run_id"] == clip(value), result

    await assert_board_empty(client, empty_board)
    assert await log_last_seq(jetstream, urls) == logged, "a rejected run reached the log"


# --- ids=, viewer=, window= and period= in queries ---------------------------------------

# Every read route, relative to a board holding p1, and the queries it takes.
READS: list[tuple[str, set[str]]] = [
    ("/top", {"viewer", "window", "period"}),
    ("/players/p1", {"viewer", "window", "period"}),
    ("/players/p1/around", {"viewer", "window", "period"}),
    ("/players/p1/friends", {"viewer", "window", "period", "ids"}),
    ("/rank-of?score=1", {"window", "period"}),
    ("/periods", {"window"}),
]


async def read(
    client: httpx.AsyncClient,
    board: str,
    path: str,
    params: dict[str, str],
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """GET a read route with ``params`` added to the query it already has (httpx's
    ``params=`` would replace it, and rank-of without its score is a 400 of its own)."""
    path, _, query = path.partition("?")
    merged = dict(parse_qsl(query)) | params
    return await client.get(f"/v1/boards/{board}{path}", params=merged, headers=headers)


def assert_400_naming(response: httpx.Response, field: str) -> None:
    assert_4xx(response, 400, "invalid_request")
    assert field in response.json()["error"]["message"], response.text


@pytest.mark.parametrize("value", bad_for(is_player_id), ids=label)
async def test_hostile_friend_id_is_400(client: httpx.AsyncClient, board: str, value: str) -> None:
    for ids in (value, f"p2,{value}", f"{value},p2"):
        response = await client.get(f"/v1/boards/{board}/players/p1/friends", params={"ids": ids})
        assert_4xx(response, 400, "invalid_request")
        assert "ids" in response.json()["error"]["message"]


@pytest.mark.parametrize("value", ["", *bad_for(is_player_id)], ids=label)
async def test_hostile_viewer_is_400(client: httpx.AsyncClient, board: str, value: str) -> None:
    for path, takes in READS:
        if "viewer" in takes:
            response = await read(client, board, path, {"viewer": value}, SERVER_H)
            assert_400_naming(response, "viewer")


@pytest.mark.parametrize(
    "value", [*HOSTILE, "all-time\n", "Daily", "yearly", "all-time,daily"], ids=label
)
async def test_hostile_window_is_400_on_every_read(
    client: httpx.AsyncClient, board: str, value: str
) -> None:
    for path, takes in READS:
        assert "window" in takes
        response = await read(client, board, path, {"window": value})
        assert_400_naming(response, "window")


def period_cases() -> list[Any]:
    cases: list[Any] = []
    for window in WINDOWS:
        for value in ["", *HOSTILE]:
            cases.append((window, value))
        for value in BAD_PERIODS[window]:
            cases.append(pytest.param(window, value))
    return cases


@pytest.mark.parametrize(("window", "period"), period_cases(), ids=lambda x: label(str(x)))
async def test_bad_period_is_400_on_every_read(
    client: httpx.AsyncClient, board: str, window: str, period: str
) -> None:
    for path, takes in READS:
        if "period" in takes:
            response = await read(client, board, path, {"window": window, "period": period})
            assert_400_naming(response, "period")


def lookalike_periods() -> list[Any]:
    ids = {"daily": "2026-11-03", "weekly": "2026-W45", "monthly": "2026-11"}
    arabic = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
    cases: list[Any] = []
    for window, pid in ids.items():
        cases.append(pytest.param(window, f"{pid}\n"))
        cases.append(pytest.param(window, pid.translate(arabic)))
        cases.append(pytest.param(window, f" {pid}"))
        cases.append(pytest.param(window, f"{pid}\x00"))
    return cases


@pytest.mark.parametrize(("window", "period"), lookalike_periods(), ids=lambda x: label(str(x)))
async def test_period_lookalike_is_400_not_read_as_the_real_period(
    client: httpx.AsyncClient, board: str, window: str, period: str
) -> None:
    """A period id with a final newline or non-ASCII digits is not the period it resembles."""
    for path, takes in READS:
        if "period" in takes:
            response = await read(client, board, path, {"window": window, "period": period})
            assert_400_naming(response, "period")


# --- valid board ids with dots work end to end --------------------------------------------


@pytest.mark.parametrize(
    "shape",
    [
        "{}..b",
        "{}.",
        "{}.a.b",
        "{}-_.x",
        "{}.-._",
    ],
)
async def test_board_id_with_dots_works_end_to_end(
    client: httpx.AsyncClient, urls: Urls, shape: str
) -> None:
    board_id = shape.format(f"d{uuid.uuid4().hex[:8]}")
    assert is_board_id(board_id)
    response = await client.put(
        f"/v1/boards/{board_id}", json={"windows": WINDOWS}, headers=ADMIN_H
    )
    assert response.status_code == 201, response.text
    assert response.json()["board_id"] == board_id

    response = await client.post(
        f"/v1/boards/{board_id}/runs", json=run_body("r.1:a", "p1", 42), headers=SERVER_H
    )
    assert response.status_code == 200, response.text
    assert [s["rank"] for s in response.json()["standings"]] == [1, 1, 1, 1]
    batch = await client.post(
        f"/v1/boards/{board_id}/runs:batch",
        json={"runs": [run_body("r.2", "p2", 40), run_body("r.3", "p3", 30)]},
        headers=SERVER_H,
    )
    assert batch.status_code == 200, batch.text
    assert all("standings" in r for r in batch.json()["results"]), batch.text

    for window in WINDOWS:
        top = await client.get(f"/v1/boards/{board_id}/top", params={"window": window})
        assert top.status_code == 200, top.text
        assert top.json()["board_id"] == board_id
        assert [e["player_id"] for e in top.json()["entries"]] == ["p1", "p2", "p3"]
    for path in (
        "",
        "/players/p2",
        "/players/p2/around?range=1",
        "/players/p1/friends?ids=p3",
        "/rank-of?score=35",
        "/periods?window=weekly",
    ):
        response = await client.get(f"/v1/boards/{board_id}{path}")
        assert response.status_code == 200, (path, response.text)
    player = (await client.get(f"/v1/boards/{board_id}/players/p2")).json()
    assert (player["rank"], player["total"]) == (2, 3)
    rank_of = (await client.get(f"/v1/boards/{board_id}/rank-of?score=35")).json()
    assert rank_of["rank"] == 3
    listed = (await client.get("/v1/boards")).json()["boards"]
    assert board_id in {b["board_id"] for b in listed}

    # the runs went through the log into the durable copy, so they survive a lost Redis
    assert await durable_entries(urls, board_id, 3) == 3


# --- bodies on every route that takes one: JSON only, uncompressed, each key once ---------

# route -> (method, role, a valid body, the same body with a key repeated)
BODY_ROUTES: dict[str, tuple[str, dict[str, str], bytes, bytes]] = {
    "put-board": (
        "PUT",
        ADMIN_H,
        b'{"windows": ["all-time"]}',
        b'{"windows": ["all-time"], "windows": ["daily"]}',
    ),
    "runs": (
        "POST",
        SERVER_H,
        b'{"run_id": "r-1", "player_id": "p1", "score": 5}',
        b'{"run_id": "r-1", "player_id": "p1", "score": 5, "score": 900}',
    ),
    "runs:batch": (
        "POST",
        SERVER_H,
        b'{"runs": [{"run_id": "r-1", "player_id": "p1", "score": 5}]}',
        b'{"runs": [{"run_id": "r-1", "player_id": "p1", "player_id": "p2", "score": 5}]}',
    ),
    "put-player": ("PUT", SERVER_H, b'{"name": "kai"}', b'{"name": "kai", "name": "mallory"}'),
}
# (content type, content encoding, repeat a key) -> (status, code)
BODY_CASES_STRICT: dict[str, tuple[str | None, str | None, bool, int, str]] = {
    "no-content-type": (None, None, False, 415, "unsupported_media_type"),
    "text-plain": ("text/plain", None, False, 415, "unsupported_media_type"),
    "gzip": ("application/json", "gzip", False, 415, "unsupported_media_type"),
    # JSON is UTF-8: another charset would be read wrongly; a malformed header is not guessed
    "utf-16": ("application/json; charset=utf-16", None, False, 415, "unsupported_media_type"),
    "bad-parameters": ("application/json;;;===", None, False, 415, "unsupported_media_type"),
    "repeated-key": ("application/json", None, True, 400, "invalid_request"),
}


@pytest.mark.parametrize("case", list(BODY_CASES_STRICT))
@pytest.mark.parametrize("route", list(BODY_ROUTES))
async def test_body_that_is_not_plain_json_is_refused_on_every_route(
    client: httpx.AsyncClient, jetstream: Any, urls: Urls, empty_board: str, route: str, case: str
) -> None:
    method, headers, body, repeated = BODY_ROUTES[route]
    content_type, encoding, repeat, status, code = BODY_CASES_STRICT[case]
    player = f"hp-{uuid.uuid4().hex[:8]}"
    new_board = f"hb-{uuid.uuid4().hex[:8]}"
    path = {
        "put-board": f"/v1/boards/{new_board}",
        "runs": f"/v1/boards/{empty_board}/runs",
        "runs:batch": f"/v1/boards/{empty_board}/runs:batch",
        "put-player": f"/v1/players/{player}",
    }[route]
    content = repeated if repeat else body
    sent = dict(headers)
    if content_type is not None:
        sent["Content-Type"] = content_type
    if encoding is not None:
        sent["Content-Encoding"] = encoding
        content = gzip.compress(content)
    logged = await log_last_seq(jetstream, urls)

    response = await client.request(method, path, content=content, headers=sent)
    assert_4xx(response, status, code)

    # nothing changed: no board, no run (on the boards or in the log), no name
    assert (await client.get(f"/v1/boards/{new_board}")).status_code == 404
    await assert_board_empty(client, empty_board)
    assert await log_last_seq(jetstream, urls) == logged, "a refused body reached the log"
    run = run_body("r-name", player, 1)
    submitted = await client.post(f"/v1/boards/{empty_board}/runs", json=run, headers=SERVER_H)
    assert submitted.status_code == 200, submitted.text
    top = (await client.get(f"/v1/boards/{empty_board}/top")).json()
    assert [(e["player_id"], e["name"]) for e in top["entries"]] == [(player, None)]


# --- segments: the segment= query, run and profile segments, board dimensions ------------

SEGMENT_VALUE = re.compile(r"[A-Za-z0-9_-]{1,32}")  # CONTRACT.md: values
SEGMENT_DIMENSION = re.compile(r"[a-z][a-z0-9_]{0,31}")  # CONTRACT.md: dimension names
BAD_SEGMENT_VALUES = ["", "a" * 33, *(v for v in HOSTILE if not SEGMENT_VALUE.fullmatch(v))]
BAD_DIMENSIONS = [
    "",
    "Country",
    "1x",
    "a" * 33,
    *(v for v in HOSTILE if not SEGMENT_DIMENSION.fullmatch(v)),
]
BAD_SEGMENT_QUERIES = [
    *(f"country:{v}" for v in BAD_SEGMENT_VALUES),
    *(f"{d}:FR" for d in BAD_DIMENSIONS),
    "country",
    "FR",
    ":",
    "unknown:FR",  # a dimension this board does not have
    "country:FR:pc",
    "country:FR,platform:pc",
]


async def segment_board(client: httpx.AsyncClient) -> str:
    """A board with dimensions country and platform, and p1 ranked in country:FR."""
    board_id = f"hs-{uuid.uuid4().hex[:10]}"
    config = {"windows": ["all-time", "weekly"], "segments": ["country", "platform"]}
    response = await client.put(f"/v1/boards/{board_id}", json=config, headers=ADMIN_H)
    assert response.status_code == 201, response.text
    run = run_body("seed-1", "p1", 5) | {"segments": {"country": "FR"}}
    response = await client.post(f"/v1/boards/{board_id}/runs", json=run, headers=SERVER_H)
    assert response.status_code == 200, response.text
    return board_id


async def test_a_valid_segment_reads_and_hostile_segments_are_400_on_every_read(
    client: httpx.AsyncClient,
) -> None:
    board = await segment_board(client)
    for path, _ in READS:
        response = await read(client, board, path, {"segment": "country:FR"})
        assert response.status_code == 200, (path, response.text)
    for segment in BAD_SEGMENT_QUERIES:
        for path, _ in READS:
            response = await read(client, board, path, {"segment": segment})
            assert_400_naming(response, "segment")


async def test_hostile_segments_in_a_run_are_rejected_and_change_nothing(
    client: httpx.AsyncClient, jetstream: Any, urls: Urls
) -> None:
    board = await segment_board(client)
    bad: list[Any] = [
        *({"country": v} for v in BAD_SEGMENT_VALUES),
        *({d: "FR"} for d in BAD_DIMENSIONS),
        {"unknown": "FR"},
        {"country": 7},
        {"country": None},
        {"country": ["FR"]},
        "country:FR",
        ["FR"],
        7,
    ]
    logged = await log_last_seq(jetstream, urls)
    for segments in bad:
        run = run_body("r-seg", "p2", 9) | {"segments": segments}
        response = await client.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
        assert_4xx(response, 400, "invalid_request")
        assert "segments" in response.json()["error"]["message"]
        batch = await client.post(
            f"/v1/boards/{board}/runs:batch", json={"runs": [run]}, headers=SERVER_H
        )
        assert batch.status_code == 200, batch.text
        [result] = batch.json()["results"]
        assert result["error"]["code"] == "invalid_request", result
    assert await log_last_seq(jetstream, urls) == logged, "a rejected run reached the log"
    top = (await client.get(f"/v1/boards/{board}/top")).json()
    assert [e["player_id"] for e in top["entries"]] == ["p1"]


async def test_hostile_profile_segments_are_400_and_change_nothing(
    client: httpx.AsyncClient,
) -> None:
    player = f"hp-{uuid.uuid4().hex[:8]}"
    bad: list[Any] = [
        *({"country": v} for v in BAD_SEGMENT_VALUES),
        *({d: "FR"} for d in BAD_DIMENSIONS),
        {"country": 7},
        "country:FR",
    ]
    for segments in bad:
        response = await client.put(
            f"/v1/players/{player}", json={"segments": segments}, headers=SERVER_H
        )
        assert_4xx(response, 400, "invalid_request")
    profile = await client.get(f"/v1/players/{player}", headers=SERVER_H)
    assert profile.status_code == 200, profile.text
    assert not profile.json().get("segments"), profile.text


async def test_hostile_board_dimensions_are_400_and_create_nothing(
    client: httpx.AsyncClient,
) -> None:
    # (before segments are built, "segments" is an unknown field: also 400, also nothing made)
    bad: list[Any] = [
        *([d] for d in BAD_DIMENSIONS),
        ["country", "country"],
        ["a", "b", "c", "d", "e"],  # more than 4
        "country",
        [7],
    ]
    for segments in bad:
        board_id = f"hd-{uuid.uuid4().hex[:10]}"
        response = await client.put(
            f"/v1/boards/{board_id}", json={"segments": segments}, headers=ADMIN_H
        )
        assert_4xx(response, 400, "invalid_request")
        assert (await client.get(f"/v1/boards/{board_id}")).status_code == 404
