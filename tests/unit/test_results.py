"""The wire contract is defined once (rankd.results, the admin and operations answers in
rankd.results_admin): the routes document its shapes, the
Python client re-exports them, and the limits the document states are the ones the
validators apply."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.routing import APIRoute
from pydantic import TypeAdapter

from rankd import leagues, results, results_admin, results_leagues
from rankd.api import (
    routes_boards,
    routes_live,
    routes_moderation,
    routes_ops,
    routes_players,
    routes_reads,
    routes_runs,
    schemas,
)
from rankd.board_changes import apply_changes
from rankd.client import types
from rankd.errors import InvalidRequest


def _routes() -> list[APIRoute]:
    modules = (routes_boards, routes_runs, routes_reads, routes_players, routes_moderation)
    routers = [m.router for m in (*modules, routes_live, routes_ops)]
    return [
        r
        for router in routers
        for r in router.routes
        if isinstance(r, APIRoute) and r.response_model is not None
    ]


def test_every_route_answers_with_a_shape_of_the_contract() -> None:
    routes = _routes()
    assert len(routes) >= 20
    for route in routes:
        shape = route.response_model
        module = getattr(shape, "__module__", None)
        assert module in ("rankd.results", "rankd.results_admin"), (route.path, shape)
        assert shape in schemas.EXAMPLES, f"{route.path}: add an example to api/schemas.py"


@pytest.mark.parametrize("shape", list(schemas.EXAMPLES), ids=lambda s: s.__name__)
def test_examples_are_valid_for_their_shape(shape: type) -> None:
    for example in schemas.EXAMPLES[shape]:
        TypeAdapter(shape).validate_python(example, strict=True)


def test_the_client_uses_the_services_shapes() -> None:
    for name in types.__all__:
        shape = (
            getattr(results, name, None)
            or getattr(results_leagues, name, None)
            or getattr(leagues, name, None)
            or getattr(results_admin, name)
        )
        assert getattr(types, name) is shape, name
    assert types.Top is types.Around is results.Page


def _body(shape: type) -> dict[str, Any]:
    schema: dict[str, Any] = schemas.body_schema(shape, {})["requestBody"]["content"][
        "application/json"
    ]["schema"]
    return schema


@pytest.mark.parametrize(
    ("field", "limit"),
    [
        ("shards", results.MAX_SHARDS),
        ("hold_top", results.MAX_HOLD_TOP),
        ("grace_seconds", results.MAX_GRACE_S),
    ],
)
def test_documented_board_bounds_are_the_validators(field: str, limit: int) -> None:
    documented = _body(results.BoardSettings)["properties"][field]["anyOf"][0]
    assert documented["maximum"] == limit
    assert apply_changes("b", None, {field: limit}).settings()[field] == limit
    with pytest.raises(InvalidRequest, match=field):
        apply_changes("b", None, {field: limit + 1})


def test_documented_formats_and_dimensions_are_the_validators() -> None:
    properties = _body(results.BoardSettings)["properties"]
    assert tuple(properties["score_format"]["anyOf"][0]["enum"]) == results.SCORE_FORMATS
    for score_format in results.SCORE_FORMATS:
        assert apply_changes("b", None, {"score_format": score_format}).score_format == (
            score_format
        )
    with pytest.raises(InvalidRequest, match="score_format"):
        apply_changes("b", None, {"score_format": "roman"})
    most = results.MAX_SEGMENT_DIMENSIONS
    assert properties["segments"]["anyOf"][0]["maxItems"] == most
    dimensions = [f"d{i}" for i in range(most + 1)]
    assert apply_changes("b", None, {"segments": dimensions[:most]}).segments
    with pytest.raises(InvalidRequest, match="segments"):
        apply_changes("b", None, {"segments": dimensions})
    batch = _body(results.Batch)["properties"]["runs"]
    assert batch["maxItems"] == results.MAX_BATCH


def test_keys_that_may_be_left_out_are_documented_as_nullable() -> None:
    standing = schemas.shape_schema(results.Standing)
    assert "rank" not in standing["required"]
    assert standing["properties"]["rank"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert standing["properties"]["rank"]["title"] == "Rank"
