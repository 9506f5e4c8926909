"""One error hierarchy; api/errors.py maps it to HTTP in one place."""

from __future__ import annotations


class RankdError(Exception):
    """An error a client can act on: a status, a snake_case code and one sentence."""

    status = 400
    code = "invalid_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequest(RankdError):
    status, code = 400, "invalid_request"


class ScoreOutOfRange(RankdError):
    status, code = 400, "score_out_of_range"


class Unauthorized(RankdError):
    status, code = 401, "unauthorized"


class Forbidden(RankdError):
    status, code = 403, "forbidden"


class BoardNotFound(RankdError):
    status, code = 404, "board_not_found"


class PlayerNotRanked(RankdError):
    status, code = 404, "player_not_ranked"


class HoldNotFound(RankdError):
    status, code = 404, "hold_not_found"


class NotFound(RankdError):
    status, code = 404, "not_found"


class BoardImmutableField(RankdError):
    status, code = 409, "board_immutable_field"


class BodyTooLarge(RankdError):
    status, code = 413, "body_too_large"


class RateLimited(RankdError):
    status, code = 429, "rate_limited"


class Unavailable(RankdError):
    status, code = 503, "unavailable"


class LogUnavailable(Unavailable):
    """The run log cannot be reached or did not answer in time."""
