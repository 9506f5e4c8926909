"""The OpenAPI document's field keywords (``Doc``) and the input limits the contract states,
which the validators check (boards.py, validation.py, the routes) and rankd.results names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args


class Doc:
    """What the document says of a field beside its type: JSON schema keywords (a
    description, a pattern, bounds). Pydantic adds them to the field's schema when it reads
    the shape (``__get_pydantic_json_schema__``); the validators apply the same constants.
    Not pydantic's ``Field``: the client imports this module, and pydantic only serves the
    document."""

    __slots__ = ("keywords",)

    def __init__(self, **keywords: object) -> None:
        self.keywords = keywords

    def __get_pydantic_json_schema__(
        self, core_schema: Any, handler: Callable[[Any], dict[str, Any]]
    ) -> dict[str, Any]:
        schema = handler(core_schema)
        schema.update(self.keywords)
        return schema


# --- input limits (checked by boards.py, validation.py and the routes) ---------------------

MAX_BATCH = 1000  # runs per runs:batch call
MAX_NAME = 64  # characters of a player's display name
MAX_BAN_REASON = 500  # characters of a ban's reason
MAX_SHARDS = 1024
MAX_HOLD_TOP = 10_000
MAX_GRACE_S = 31_536_000  # a year
MAX_SEGMENT_DIMENSIONS = 4
# How pages and clients display a score (display only); the API always carries the integer.
ScoreFormat = Literal["integer", "duration_ms", "decimal_1", "decimal_2", "decimal_3"]
SCORE_FORMATS: tuple[ScoreFormat, ...] = get_args(ScoreFormat)
