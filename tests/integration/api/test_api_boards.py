"""Board endpoints against the real servers: create/update, reads of config, validation, auth."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import httpx
import orjson
import pytest

from tests.support.common import ADMIN_H, SERVER_H, MakeBoard, new_board_id
from tests.support.wire import assert_error

TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
CONFIG_FIELDS = {
    "windows",
    "order",
    "policy",
    "max_score",
    "max_run_score",
    "shards",
    "hold_top",
    "grace_seconds",
    "retention_days",
}


async def put_board(client: httpx.AsyncClient, board_id: str, body: Any) -> httpx.Response:
    # httpx sends no body at all for json=None; a JSON null must be spelled out
    return await client.put(
        f"/v1/boards/{board_id}",
        content=orjson.dumps(body),
        headers={**ADMIN_H, "Content-Type": "application/json"},
    )


async def get_board(client: httpx.AsyncClient, board_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/boards/{board_id}")
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def submit(client: httpx.AsyncClient, board_id: str, **run: Any) -> httpx.Response:
    run.setdefault("run_id", "r-1")
    run.setdefault("player_id", "p1")
    run.setdefault("score", 10)
    return await client.post(f"/v1/boards/{board_id}/runs", json=run, headers=SERVER_H)


# --- create, update, read --------------------------------------------------------------


async def test_put_new_board_returns_201_with_defaults(client: httpx.AsyncClient) -> None:
    board_id = new_board_id()
    response = await put_board(client, board_id, {})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["board_id"] == board_id
    assert body["windows"] == ["all-time"]
    assert body["order"] == "desc"
    assert body["policy"] == "best"
    assert body["max_score"] == 1_000_000_000
    assert body["max_run_score"] == 1_000_000_000
    assert body["shards"] == 1
    assert body["hold_top"] == 0
    assert body["grace_seconds"] == 3600
    assert body["retention_days"] == {"daily": 8, "weekly": 35, "monthly": 100}


async def test_put_existing_board_returns_200(client: httpx.AsyncClient) -> None:
    board_id = new_board_id()
    assert (await put_board(client, board_id, {"grace_seconds": 10})).status_code == 201
    response = await put_board(client, board_id, {"grace_seconds": 20})
    assert response.status_code == 200, response.text
    assert response.json()["grace_seconds"] == 20


async def test_put_returns_the_stored_config(client: httpx.AsyncClient) -> None:
    config = {
        "windows": ["weekly", "all-time", "daily"],
        "order": "asc",
        "policy": "sum",
        "max_score": 5000,
        "max_run_score": 100,
        "shards": 1,
        "hold_top": 0,
        "grace_seconds": 0,
        "retention_days": {"daily": 2, "weekly": 14, "monthly": 60},
    }
    response = await put_board(client, new_board_id(), config)
    assert response.status_code == 201, response.text
    body = response.json()
    assert {k: body[k] for k in CONFIG_FIELDS} == config


async def test_update_keeps_omitted_fields(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(
        windows=["daily", "all-time"], grace_seconds=10, max_score=5000, max_run_score=200
    )
    response = await put_board(client, board_id, {"order": "asc"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["order"] == "asc"
    assert body["windows"] == ["daily", "all-time"]
    assert body["grace_seconds"] == 10
    assert body["max_score"] == 5000
    assert body["max_run_score"] == 200
    assert await get_board(client, board_id) == {k: v for k, v in body.items() if k != "hooks"}


async def test_update_retention_merges_with_current(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["daily"])
    response = await put_board(client, board_id, {"retention_days": {"daily": 2}})
    assert response.status_code == 200, response.text
    assert response.json()["retention_days"] == {"daily": 2, "weekly": 35, "monthly": 100}


async def test_max_run_score_follows_max_score_when_not_set(client: httpx.AsyncClient) -> None:
    response = await put_board(client, new_board_id(), {"max_score": 500})
    assert response.status_code == 201, response.text
    assert response.json()["max_run_score"] == 500


async def test_update_does_not_change_created_at(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    before = (await get_board(client, board_id))["created_at"]
    response = await put_board(client, board_id, {"grace_seconds": 5})
    assert response.json()["created_at"] == before


async def test_get_board_returns_the_config(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["monthly"], order="asc", max_score=999)
    body = await get_board(client, board_id)
    assert body["board_id"] == board_id
    assert body["windows"] == ["monthly"]
    assert body["order"] == "asc"
    assert body["max_score"] == 999
    assert set(body) >= CONFIG_FIELDS


async def test_get_board_matches_put_response(client: httpx.AsyncClient) -> None:
    board_id = new_board_id()
    put = await put_board(client, board_id, {"windows": ["daily", "weekly"], "order": "asc"})
    assert put.status_code == 201
    # the hooks' URLs are shown to admins only
    assert await get_board(client, board_id) == {
        k: v for k, v in put.json().items() if k != "hooks"
    }
    admin = await client.get(f"/v1/boards/{board_id}", headers=ADMIN_H)
    assert admin.json() == put.json()


async def test_list_boards_includes_created_boards(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    first = await make_board()
    second = await make_board(windows=["weekly"])
    response = await client.get("/v1/boards")
    assert response.status_code == 200, response.text
    boards = {b["board_id"]: b for b in response.json()["boards"]}
    assert first in boards
    assert boards[second]["windows"] == ["weekly"]
    assert boards[second] == await get_board(client, second)


@pytest.mark.parametrize("max_score", [1000, 1_000_000_000, 2**53 - 1])
async def test_tie_resolution_ms_is_1_on_every_window_whatever_max_score(
    client: httpx.AsyncClient, max_score: int
) -> None:
    windows = ["all-time", "daily", "weekly", "monthly"]
    body = {"windows": windows, "max_score": max_score}
    response = await put_board(client, new_board_id(), body)
    assert response.json()["tie_resolution_ms"] == dict.fromkeys(windows, 1)


async def test_created_at_is_utc_with_milliseconds(client: httpx.AsyncClient) -> None:
    response = await put_board(client, new_board_id(), {})
    created_at = response.json()["created_at"]
    assert TIME_RE.match(created_at), created_at


# --- validation: 400 invalid_request ---------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"windows": []}, id="windows-empty"),
        pytest.param({"windows": "daily"}, id="windows-not-list"),
        pytest.param({"windows": ["daily", "daily"]}, id="windows-duplicate"),
        pytest.param({"windows": ["yearly"]}, id="windows-unknown"),
        pytest.param({"windows": ["Daily"]}, id="windows-wrong-case"),
        pytest.param({"windows": [1]}, id="windows-not-strings"),
        pytest.param({"order": "up"}, id="order-bad"),
        pytest.param({"order": None}, id="order-null"),
        pytest.param({"policy": "max"}, id="policy-bad"),
        pytest.param({"max_score": 0}, id="max_score-0"),
        pytest.param({"max_score": 2**53}, id="max_score-2**53"),
        pytest.param({"max_score": 10.5}, id="max_score-float"),
        pytest.param({"max_score": "100"}, id="max_score-string"),
        pytest.param({"max_score": True}, id="max_score-bool"),
        pytest.param({"max_score": 100, "max_run_score": 101}, id="max_run_score-above-max"),
        pytest.param({"max_run_score": 0}, id="max_run_score-0"),
        pytest.param({"shards": 0}, id="shards-0"),
        pytest.param({"shards": 1025}, id="shards-1025"),
        pytest.param({"hold_top": -1}, id="hold_top-negative"),
        pytest.param({"grace_seconds": -1}, id="grace-negative"),
        pytest.param({"grace_seconds": 31_536_001}, id="grace-too-large"),
        pytest.param({"retention_days": {"yearly": 5}}, id="retention-bad-key"),
        pytest.param({"retention_days": {"daily": -1}}, id="retention-negative"),
        pytest.param({"retention_days": {"daily": 3651}}, id="retention-too-large"),
        pytest.param({"retention_days": {"daily": "8"}}, id="retention-string"),
        pytest.param({"retention_days": {"daily": 1.5}}, id="retention-float"),
        pytest.param({"retention_days": [8]}, id="retention-not-object"),
        pytest.param({"colour": "red"}, id="unknown-field"),
        pytest.param([], id="body-list"),
        pytest.param("board", id="body-string"),
        pytest.param(None, id="body-null"),
    ],
)
async def test_bad_board_config_is_400_invalid_request(
    client: httpx.AsyncClient, body: Any
) -> None:
    board_id = new_board_id()
    assert_error(await put_board(client, board_id, body), 400, "invalid_request")
    # nothing was created
    assert_error(await client.get(f"/v1/boards/{board_id}"), 404, "board_not_found")


async def test_boundary_config_values_are_accepted(client: httpx.AsyncClient) -> None:
    for body in (
        {"max_score": 2**53 - 1},
        {"max_score": 1},
        {"shards": 1},
        {"grace_seconds": 0},
        {"grace_seconds": 31_536_000},
        {"retention_days": {"daily": 0, "weekly": 3650}},  # 0: leaves Redis once archived
        {"windows": ["monthly", "weekly", "daily", "all-time"]},
    ):
        response = await put_board(client, new_board_id(), body)
        assert response.status_code == 201, (body, response.text)


async def test_error_message_names_the_bad_field(client: httpx.AsyncClient) -> None:
    for body, field in (
        ({"shards": 0}, "shards"),
        ({"grace_seconds": -5}, "grace_seconds"),
        ({"windows": ["x"]}, "windows"),
        ({"max_score": 0}, "max_score"),
        ({"retention_days": {"x": 1}}, "retention_days"),
        ({"colour": "red"}, "colour"),
    ):
        error = assert_error(await put_board(client, new_board_id(), body), 400, "invalid_request")
        assert field in error["message"], (body, error)


async def test_invalid_json_is_400_invalid_request(client: httpx.AsyncClient) -> None:
    response = await client.put(
        f"/v1/boards/{new_board_id()}",
        content=b'{"windows": ["daily"',
        headers={**ADMIN_H, "Content-Type": "application/json"},
    )
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    "board_id",
    ["Upper", "-leading-dash", "_leading", "has space", "a" * 65, "semi;colon", "ünïcode"],
)
async def test_bad_board_id_in_path_is_400_invalid_request(
    client: httpx.AsyncClient, board_id: str
) -> None:
    error = assert_error(await put_board(client, board_id, {}), 400, "invalid_request")
    assert "board_id" in error["message"]


async def test_longest_valid_board_id_is_accepted(client: httpx.AsyncClient) -> None:
    board_id = new_board_id("x").ljust(64, "z")
    assert len(board_id) == 64
    assert (await put_board(client, board_id, {})).status_code == 201


# --- 404 board_not_found ---------------------------------------------------------------


async def test_get_unknown_board_is_404(client: httpx.AsyncClient) -> None:
    assert_error(await client.get(f"/v1/boards/{new_board_id()}"), 404, "board_not_found")


async def test_read_unknown_board_is_404(client: httpx.AsyncClient) -> None:
    response = await client.get(f"/v1/boards/{new_board_id()}/top")
    assert_error(response, 404, "board_not_found")


async def test_submit_to_unknown_board_is_404(client: httpx.AsyncClient) -> None:
    assert_error(await submit(client, new_board_id()), 404, "board_not_found")


async def test_batch_to_unknown_board_is_404(client: httpx.AsyncClient) -> None:
    response = await client.post(
        f"/v1/boards/{new_board_id()}/runs:batch",
        json={"runs": [{"run_id": "r", "player_id": "p", "score": 1}]},
        headers=SERVER_H,
    )
    assert_error(response, 404, "board_not_found")


# --- immutable fields ------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"order": "asc"}, id="order"),
        pytest.param({"policy": "sum"}, id="policy"),
        pytest.param({"max_score": 5000}, id="max_score"),
    ],
)
async def test_immutable_field_cannot_change_after_a_run(
    client: httpx.AsyncClient, make_board: MakeBoard, change: dict[str, Any]
) -> None:
    board_id = await make_board(windows=["all-time", "daily"])
    assert (await submit(client, board_id)).status_code == 200
    before = await get_board(client, board_id)
    error = assert_error(await put_board(client, board_id, change), 409, "board_immutable_field")
    assert next(iter(change)) in error["message"]
    assert await get_board(client, board_id) == before


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"order": "asc"}, id="order"),
        pytest.param({"policy": "sum"}, id="policy"),
        pytest.param({"max_score": 5000}, id="max_score"),
    ],
)
async def test_immutable_field_can_change_before_any_run(
    client: httpx.AsyncClient, make_board: MakeBoard, change: dict[str, Any]
) -> None:
    board_id = await make_board()
    response = await put_board(client, board_id, change)
    assert response.status_code == 200, response.text
    key, value = next(iter(change.items()))
    assert response.json()[key] == value
    assert (await get_board(client, board_id))[key] == value


async def test_mutable_fields_can_change_after_a_run(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(max_score=1000, max_run_score=100)
    assert (await submit(client, board_id)).status_code == 200
    change = {
        "max_run_score": 500,
        "grace_seconds": 60,
        "retention_days": {"daily": 3},
        "windows": ["all-time", "weekly"],
    }
    response = await put_board(client, board_id, change)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["max_run_score"] == 500
    assert body["grace_seconds"] == 60
    assert body["windows"] == ["all-time", "weekly"]


async def test_restating_immutable_fields_unchanged_after_a_run_is_allowed(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(order="asc", max_score=7000)
    assert (await submit(client, board_id)).status_code == 200
    same = {"order": "asc", "policy": "best", "max_score": 7000, "shards": 1}
    response = await put_board(client, board_id, same)
    assert response.status_code == 200, response.text


async def test_rejected_immutable_change_keeps_other_fields_of_the_same_put(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(grace_seconds=100)
    assert (await submit(client, board_id)).status_code == 200
    response = await put_board(client, board_id, {"grace_seconds": 5, "order": "asc"})
    assert_error(response, 409, "board_immutable_field")
    body = await get_board(client, board_id)
    assert body["grace_seconds"] == 100
    assert body["order"] == "desc"


async def test_rejected_invalid_put_changes_nothing(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["daily"], grace_seconds=100)
    before = await get_board(client, board_id)
    for body in (
        {"grace_seconds": 5, "shards": 0},
        {"windows": ["weekly"], "order": "sideways"},
        {"hold_top": 9, "bogus": 1},
        {"max_score": 50, "max_run_score": 60},
    ):
        assert_error(await put_board(client, board_id, body), 400, "invalid_request")
    assert await get_board(client, board_id) == before


@pytest.mark.parametrize("shards", [2, 16, 1024])
async def test_shards_set_before_any_run_apply_at_once_and_after_start_a_move(
    client: httpx.AsyncClient, make_board: MakeBoard, shards: int
) -> None:
    board_id = await make_board(windows=["daily"])
    response = await put_board(client, board_id, {"shards": shards})
    assert response.status_code == 200, response.text
    assert "resharding" not in response.json()
    assert (await get_board(client, board_id))["shards"] == shards
    assert (await submit(client, board_id)).status_code == 200
    response = await put_board(client, board_id, {"shards": shards})  # restated: no move
    assert response.status_code == 200, response.text
    assert "resharding" not in response.json()
    if shards > 2:
        return  # a move of many shards is followed in tests/integration/services/
    response = await put_board(client, board_id, {"shards": 1})
    assert response.status_code == 200, response.text
    # the move is under way (tests/integration/services/test_resharding.py follows them)
    assert response.json()["shards"] == 1
    assert response.json()["resharding"] == {"done": 0, "total": 0}
    # and ends, so no move runs on under later tests (a settle time per phase)
    deadline = time.monotonic() + 120
    while "resharding" in await get_board(client, board_id):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.2)


async def test_hold_top_is_for_best_boards(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["daily"], policy="sum")
    before = await get_board(client, board_id)
    error = assert_error(await put_board(client, board_id, {"hold_top": 5}), 400, "invalid_request")
    assert "hold_top" in error["message"] and "best" in error["message"]
    assert await get_board(client, board_id) == before
    best = await make_board(windows=["daily"], hold_top=5)
    assert (await get_board(client, best))["hold_top"] == 5


# --- auth ------------------------------------------------------------------------------


async def test_put_board_without_key_is_401(client: httpx.AsyncClient) -> None:
    board_id = new_board_id()
    response = await client.put(f"/v1/boards/{board_id}", json={})
    assert_error(response, 401, "unauthorized")
    assert_error(await client.get(f"/v1/boards/{board_id}"), 404, "board_not_found")


async def test_put_board_with_wrong_key_is_401(client: httpx.AsyncClient) -> None:
    for header in ("Bearer not-a-key", "Bearer ", "Basic dGVzdA==", "test-admin-key"):
        response = await client.put(
            f"/v1/boards/{new_board_id()}", json={}, headers={"Authorization": header}
        )
        assert_error(response, 401, "unauthorized")


async def test_put_board_with_server_key_is_403(client: httpx.AsyncClient) -> None:
    board_id = new_board_id()
    response = await client.put(f"/v1/boards/{board_id}", json={}, headers=SERVER_H)
    assert_error(response, 403, "forbidden")
    assert_error(await client.get(f"/v1/boards/{board_id}"), 404, "board_not_found")


async def test_server_key_cannot_update_existing_board(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(grace_seconds=100)
    response = await client.put(
        f"/v1/boards/{board_id}", json={"grace_seconds": 1}, headers=SERVER_H
    )
    assert_error(response, 403, "forbidden")
    assert (await get_board(client, board_id))["grace_seconds"] == 100


async def test_submit_without_key_is_401(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    response = await client.post(
        f"/v1/boards/{board_id}/runs", json={"run_id": "r", "player_id": "p", "score": 1}
    )
    assert_error(response, 401, "unauthorized")
    assert (await client.get(f"/v1/boards/{board_id}/top")).json()["total"] == 0


async def test_submit_with_wrong_key_is_401(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    response = await client.post(
        f"/v1/boards/{board_id}/runs",
        json={"run_id": "r", "player_id": "p", "score": 1},
        headers={"Authorization": "Bearer wrong"},
    )
    assert_error(response, 401, "unauthorized")


async def test_admin_key_works_on_server_endpoints(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board()
    run = {"run_id": "r", "player_id": "p", "score": 1}
    response = await client.post(f"/v1/boards/{board_id}/runs", json=run, headers=ADMIN_H)
    assert response.status_code == 200, response.text
    response = await client.post(
        f"/v1/boards/{board_id}/runs:batch", json={"runs": [run]}, headers=ADMIN_H
    )
    assert response.status_code == 200, response.text
    response = await client.put("/v1/players/p", json={"name": "Pat"}, headers=ADMIN_H)
    assert response.status_code == 200, response.text


async def test_board_reads_need_no_key(client: httpx.AsyncClient, make_board: MakeBoard) -> None:
    board_id = await make_board()
    assert (await client.get(f"/v1/boards/{board_id}")).status_code == 200
    assert (await client.get("/v1/boards")).status_code == 200


async def test_immutable_field_stays_locked_after_dropping_the_window_with_runs(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    # the all-time period holds runs packed for desc order; dropping the window from the
    # config must not make the board look run-free and unlock order
    board_id = await make_board(windows=["all-time"])
    assert (await submit(client, board_id)).status_code == 200
    response = await put_board(client, board_id, {"windows": ["daily"]})
    assert response.status_code == 200, response.text
    assert_error(await put_board(client, board_id, {"order": "asc"}), 409, "board_immutable_field")
    assert (await get_board(client, board_id))["order"] == "desc"


async def test_changing_windows_and_order_together_after_a_run_is_409(
    client: httpx.AsyncClient, make_board: MakeBoard
) -> None:
    board_id = await make_board(windows=["all-time"])
    assert (await submit(client, board_id)).status_code == 200
    response = await put_board(client, board_id, {"windows": ["daily"], "order": "asc"})
    assert_error(response, 409, "board_immutable_field")
    assert (await get_board(client, board_id))["windows"] == ["all-time"]


# --- score_format (display only) -------------------------------------------------------


async def test_score_format_defaults_to_integer_and_is_kept(client: httpx.AsyncClient) -> None:
    board_id = new_board_id()
    created = await put_board(client, board_id, {"order": "asc"})
    assert created.json()["score_format"] == "integer"
    updated = await put_board(client, board_id, {"score_format": "duration_ms"})
    assert updated.status_code == 200, updated.text
    assert updated.json()["score_format"] == "duration_ms"
    assert (await get_board(client, board_id))["score_format"] == "duration_ms"
    listed = (await client.get("/v1/boards")).json()["boards"]
    assert [b["score_format"] for b in listed if b["board_id"] == board_id] == ["duration_ms"]
    # other fields leave it alone
    await put_board(client, board_id, {"grace_seconds": 60})
    assert (await get_board(client, board_id))["score_format"] == "duration_ms"


async def test_score_format_changes_nothing_but_display(client: httpx.AsyncClient) -> None:
    board_id = new_board_id()
    await put_board(client, board_id, {"order": "asc"})
    assert (await submit(client, board_id, score=65364)).status_code == 200
    # allowed even once the board has runs: it is not how scores are stored
    response = await put_board(client, board_id, {"score_format": "decimal_3"})
    assert response.status_code == 200, response.text
    top = (await client.get(f"/v1/boards/{board_id}/top")).json()
    assert top["entries"][0]["score"] == 65364


@pytest.mark.parametrize("bad", ["seconds", "", "Integer", "integer ", 3, None, ["integer"]])
async def test_a_bad_score_format_is_refused_and_changes_nothing(
    client: httpx.AsyncClient, bad: Any
) -> None:
    board_id = new_board_id()
    await put_board(client, board_id, {"score_format": "decimal_1"})
    response = await put_board(client, board_id, {"score_format": bad, "grace_seconds": 5})
    assert_error(response, 400, "invalid_request")
    assert "score_format" in response.json()["error"]["message"]
    after = await get_board(client, board_id)
    assert after["score_format"] == "decimal_1" and after["grace_seconds"] == 3600


async def test_unhashable_values_are_plain_400s(client: httpx.AsyncClient) -> None:
    bodies: list[dict[str, object]] = [
        {"windows": [["daily"]]},
        {"policy": ["best"]},
        {"windows": [{}]},
    ]
    for body in bodies:
        response = await client.put(f"/v1/boards/{new_board_id()}", json=body, headers=ADMIN_H)
        assert response.status_code == 400, (body, response.text)
