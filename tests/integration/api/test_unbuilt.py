"""What CONTRACT v1.3 names and this version does not build yet (rankd/unbuilt.py) is
refused saying so, and changes nothing: never accepted and silently skipped."""

from __future__ import annotations

import httpx
import pytest

from rankd import unbuilt
from tests.support.common import ADMIN_H, SERVER_H, new_board_id


@pytest.mark.parametrize("field", sorted(unbuilt.BOARD_FIELDS))
async def test_an_unbuilt_board_field_is_400_and_makes_nothing(
    client: httpx.AsyncClient, field: str
) -> None:
    board = new_board_id()
    response = await client.put(f"/v1/boards/{board}", json={field: {}}, headers=ADMIN_H)
    assert response.status_code == 400, response.text
    assert "not built" in response.json()["error"]["message"]
    assert field in response.json()["error"]["message"]
    assert (await client.get(f"/v1/boards/{board}")).status_code == 404


@pytest.mark.parametrize(
    "body",
    [{"windows": [w]} for w in sorted(unbuilt.WINDOWS)]
    + [{"policy": p} for p in sorted(unbuilt.POLICIES)],
)
async def test_an_unbuilt_window_or_policy_is_400(
    client: httpx.AsyncClient, body: dict[str, object]
) -> None:
    board = new_board_id()
    response = await client.put(f"/v1/boards/{board}", json=body, headers=ADMIN_H)
    assert response.status_code == 400, response.text
    assert "not built" in response.json()["error"]["message"]
    assert (await client.get(f"/v1/boards/{board}")).status_code == 404


async def test_unhashable_values_are_plain_400s(client: httpx.AsyncClient) -> None:
    bodies: list[dict[str, object]] = [
        {"windows": [["daily"]]},
        {"policy": ["best"]},
        {"windows": [{}]},
    ]
    for body in bodies:
        response = await client.put(f"/v1/boards/{new_board_id()}", json=body, headers=ADMIN_H)
        assert response.status_code == 400, (body, response.text)


@pytest.mark.parametrize(("method", "path"), unbuilt.ROUTES)
async def test_an_unbuilt_route_is_501(client: httpx.AsyncClient, method: str, path: str) -> None:
    url = path.format(board_id="arena", player_id="p1", cohort="c1", period="2026-W45")
    response = await client.request(method, url, headers=SERVER_H)
    assert response.status_code == 501, response.text
    assert response.json()["error"]["code"] == "not_implemented"
