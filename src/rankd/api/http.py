"""Small request/response helpers shared by the routers."""

from __future__ import annotations

from typing import Any, cast

import orjson
from starlette.requests import Request
from starlette.responses import Response

from rankd.errors import BodyTooLarge, InvalidRequest
from rankd.runtime import Runtime

MAX_BODY = 1 << 20  # 1 MiB


def runtime(request: Request) -> Runtime:
    return cast(Runtime, request.app.state.runtime)


async def read_json(request: Request) -> Any:
    """The request body as JSON; 413 past 1 MiB (checked while streaming), 400 if not JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise BodyTooLarge("the request body is larger than 1 MiB; send fewer runs per request")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise BodyTooLarge("the request body is larger than 1 MiB; send fewer runs per request")
        chunks.append(chunk)
    try:
        return orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"the body is not valid JSON: {exc.msg}") from exc


class JSONBody(Response):
    """JSON rendered by orjson: several times faster than the stdlib on entry lists."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def reply(content: Any, status: int = 200) -> JSONBody:
    return JSONBody(content, status_code=status)
