"""The fuzz stage's worker: every operation of the app's own /openapi.json, fuzzed with
schemathesis for one key role. tests/system/test_fuzz.py runs it once per role.

It runs in a process of its own (``python -m tests.support.fuzz_stage ROLE REDIS POSTGRES NATS``)
because building schemathesis strategies patches Hypothesis for the whole process (its
example printer prints nothing, its buffer grows 4x): every property test that ran after
it in the pytest process would report falsifying examples as blanks.

The app runs in this process (schemathesis's ASGI client) against the session's real
Redis, PostgreSQL and NATS. For each
operation a fixed number of schema-conforming (positive) and schema-violating (negative)
requests is sent, with derandomized generation so every run sends the same requests. Some
cases name boards that exist (and a player ranked on them), so they get past 404.

Asserted: no response is a 5xx (bad input is never a 500), every 4xx carries the
contract's error shape, and every response conforms to the document: its status is one the
operation documents, its content type too, and its body matches that status's schema.
Prints one JSON line: {"role", "cases", "operations", "problems", "seconds"}.
"""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.python import asgi

from rankd.api.app import create_app
from tests.support.common import ADMIN_H, SERVER_H, Urls, make_settings

# Cases per operation and generation mode (positive, negative), for each of the 4 roles.
CASES = 50
# A wrong key is refused (401) by every route that needs a key, and a public route reads the
# key only for a viewer: the no-key role already sends the public routes every case, so a
# sample per operation and mode checks the refusals conform.
WRONG_KEY_CASES = 10
ROLES: dict[str, dict[str, str]] = {
    "no-key": {},
    "server-key": SERVER_H,
    "admin-key": ADMIN_H,
    "wrong-key": {"Authorization": "Bearer not-a-key"},
}
CONTRACT_OPERATIONS = {
    "PUT /v1/boards/{board_id}",
    "GET /v1/boards",
    "GET /v1/boards/{board_id}",
    "POST /v1/boards/{board_id}/runs",
    "POST /v1/boards/{board_id}/runs:batch",
    "GET /v1/boards/{board_id}/top",
    "GET /v1/boards/{board_id}/players/{player_id}",
    "GET /v1/boards/{board_id}/players/{player_id}/around",
    "GET /v1/boards/{board_id}/players/{player_id}/friends",
    "GET /v1/boards/{board_id}/rank-of",
    "GET /v1/boards/{board_id}/periods",
    "PUT /v1/players/{player_id}",
    "GET /v1/bans",
    "GET /v1/boards/{board_id}/segments",
    "DELETE /v1/boards/{board_id}",
    "DELETE /v1/players/{player_id}",
    "GET /healthz",
    "GET /readyz",
}
# An event stream answers a valid request with a response that never ends; its validation
# (the same as /top's) is checked in tests/integration/api/test_live.py on a real server instead.
STREAMING = {"GET /v1/boards/{board_id}/events"}
OWN_PREFIX = "fz-"
SNAKE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
CONFORMANCE = [status_code_conformance, content_type_conformance, response_schema_conformance]


class Fuzz:
    def __init__(self, schema: Any, boards: list[str], players: list[str]) -> None:
        self.schema = schema
        self.boards = boards
        self.players = players

    def strategy(self, operation: Any, mode: GenerationMode) -> st.SearchStrategy[Any]:
        """Cases with generated path ids, and cases naming a real board (and player)."""
        names = {p.name for p in operation.path_parameters}
        generated = operation.as_strategy(mode)
        method = operation.method.upper()
        if method in ("PUT", "DELETE") or operation.path.startswith("/v1/players/"):
            generated = generated.map(own_ids)
        variants = [generated]
        # a DELETE never names the real boards: deleting them (or erasing their players)
        # would leave every later operation nothing but 404s
        fixed_boards = self.boards if "board_id" in names and method != "DELETE" else []
        for board in fixed_boards:
            fixed = {"board_id": board}
            named = operation.as_strategy(mode, path_parameters=fixed)
            variants.append(named.map(keep_shards) if method == "PUT" else named)
            if "player_id" in names:
                fixed = fixed | {"player_id": self.players[0]}
                variants.append(operation.as_strategy(mode, path_parameters=fixed))
            if operation.query.get("window") is not None:
                # a window the board has, so the period is parsed and read
                query = {"window": "weekly"}
                variants.append(operation.as_strategy(mode, path_parameters=fixed, query=query))
        return st.one_of(variants)


def keep_shards(case: Any) -> Any:
    """A PUT naming a real board keeps its shards: on a board with runs a change starts a
    live resharding, a background job of the session's servers (up to 1,024 shards built
    per period under the exclusive apply lock, holding up every other test's log consumer);
    tests/integration/services/test_resharding.py covers moves."""
    if isinstance(case.body, dict):
        case.body.pop("shards", None)
    return case


def own_ids(case: Any) -> Any:
    """A PUT's or DELETE's generated ids, and any player route's, get a prefix of their own:
    the boards it creates or deletes, the names it sets and the players it bans or erases
    must not be other tests' (they are global: player "0" is in other tests' boards)."""
    for name, value in case.path_parameters.items():
        if isinstance(value, str):
            case.path_parameters[name] = f"{OWN_PREFIX}{value}"
    return case


def start(urls: Urls) -> Fuzz:
    """The app in schemathesis's own ASGI client (its lifespan runs in that client's event
    loop thread), with two boards that hold ranked players."""
    app = create_app(make_settings(urls))
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    tag = uuid.uuid4().hex[:8]
    boards = [f"fuzz-{tag}", f"fuzz.{tag}.asc"]
    players = ["p1", "p2"]
    # schemathesis types an ASGI app's messages as dict, Starlette as MutableMapping
    with asgi.get_client(app) as http:  # type: ignore[arg-type]
        configs: list[dict[str, str | list[str]]] = [
            {"windows": ["all-time", "daily", "weekly", "monthly"]},
            {"windows": ["weekly", "all-time"], "order": "asc", "policy": "sum"},
        ]
        for board, config in zip(boards, configs, strict=True):
            response = http.put(f"/v1/boards/{board}", json=config, headers=ADMIN_H)
            assert response.status_code == 201, response.text
            for i, player in enumerate(players):
                run: dict[str, str | int] = {
                    "run_id": f"seed-{i}",
                    "player_id": player,
                    "score": 10 + i,
                }
                response = http.post(f"/v1/boards/{board}/runs", json=run, headers=SERVER_H)
                assert response.status_code == 200, response.text
    return Fuzz(schema, boards, players)


def error_shape_problem(response: Any) -> str | None:
    """Why a 4xx body is not {"error": {"code": "<snake_case>", "message": "..."}}, if it isn't."""
    try:
        body = response.json()
    except ValueError:
        return "not JSON"
    if not isinstance(body, dict) or set(body) != {"error"}:
        return "not exactly {'error': ...}"
    error = body["error"]
    if not isinstance(error, dict) or set(error) != {"code", "message"}:
        return "error is not exactly {'code', 'message'}"
    if not isinstance(error["code"], str) or not SNAKE.fullmatch(error["code"]):
        return "code is not snake_case"
    if not isinstance(error["message"], str) or not error["message"].strip():
        return "message is empty"
    return None


def fuzz_operation(
    operation: Any, strategy: st.SearchStrategy[Any], headers: dict[str, str], cases: int
) -> tuple[int, str | None]:
    """Send ``cases`` cases; the number sent and the first problem found (shrunk), if any."""
    sent = 0

    @settings(
        max_examples=cases,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        nonlocal sent
        sent += 1
        response = case.call(headers=headers)
        status = response.status_code
        if status == 503:
            # "retry shortly" is a documented answer while something heals (a torn period
            # another test left behind is rebuilt by the service it meets): once more, later
            time.sleep(1.0)
            response = case.call(headers=headers)
            status = response.status_code
        problem = None
        if status >= 500:
            problem = f"{status} {response.text[:300]}"
        elif status >= 400:
            shape = error_shape_problem(response)
            if shape:
                problem = f"{status} error shape: {shape}: {response.text[:300]}"
        if problem is None:
            try:
                case.validate_response(response, checks=CONFORMANCE, headers=headers)
            except Exception as exc:  # schemathesis's Failure / FailureGroup
                problem = f"{status} does not conform to /openapi.json: {exc}"[:1500]
        if problem:
            raise AssertionError(f"{problem}\n    {case.as_curl_command(headers=headers)}")

    try:
        run()
    except Unsatisfiable:
        # nothing to violate: an operation without parameters or body has no negative cases
        assert sent == 0, operation.label
    except AssertionError as exc:
        return sent, f"{operation.label}: {exc}"
    except Exception as exc:  # the app raised through the transport: a 500 on a real server
        notes = "\n".join(getattr(exc, "__notes__", []))
        return sent, f"{operation.label}: {type(exc).__name__}: {exc}\n{notes}"
    return sent, None


def fuzz_role(fuzz: Fuzz, headers: dict[str, str], cases: int) -> tuple[int, int, list[str]]:
    """Every operation, both modes: (cases sent, operations, problems)."""
    sent = 0
    problems: list[str] = []
    operations = [result.ok() for result in fuzz.schema.get_all_operations()]
    operations = [op for op in operations if op.label not in STREAMING]
    assert not CONTRACT_OPERATIONS - {op.label for op in operations}, "an operation is missing"
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            strategy = fuzz.strategy(operation, mode)
            count, problem = fuzz_operation(operation, strategy, headers, cases)
            sent += count
            if problem:
                problems.append(f"[{mode.value}] {problem}")
    return sent, len(operations), problems


def main(argv: list[str]) -> int:
    role, redis, postgres, nats = argv
    started = time.perf_counter()
    fuzz = start(Urls(redis, postgres, nats))
    try:
        per_operation = WRONG_KEY_CASES if role == "wrong-key" else CASES
        cases, operations, problems = fuzz_role(fuzz, ROLES[role], per_operation)
    finally:
        asgi.shutdown_lifespans()
    seconds = round(time.perf_counter() - started, 1)
    result = {"role": role, "cases": cases, "operations": operations, "problems": problems}
    print(json.dumps(result | {"seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
