"""The contract's errors as exceptions: one base class, one subclass per error code.

Every error answer is ``{"error": {"code", "message"}}``; :func:`error_for` turns one into the
subclass of its code (the base class for a code this client does not know yet), carrying the
HTTP status, the code, the message and, for 429, the Retry-After seconds.
"""

from __future__ import annotations

from typing import Any


class RankdAPIError(Exception):
    """An error answer from the service."""

    code: str = "error"

    def __init__(
        self, status: int, code: str, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class InvalidRequest(RankdAPIError):
    code = "invalid_request"


class ScoreOutOfRange(RankdAPIError):
    code = "score_out_of_range"


class Unauthorized(RankdAPIError):
    """401: no credentials where some are needed, or a wrong key, or a player token that is
    expired, altered or signed with a secret the service does not hold."""

    code = "unauthorized"


class Forbidden(RankdAPIError):
    """403: the credentials are valid but not enough: a server key on an admin route, or a
    player token on a key route, a batch, another player's view or run, a board without
    ``client_submits``, or without the scope the call needs."""

    code = "forbidden"


class BoardNotFound(RankdAPIError):
    code = "board_not_found"


class PlayerNotRanked(RankdAPIError):
    code = "player_not_ranked"


class HoldNotFound(RankdAPIError):
    code = "hold_not_found"


class BoardImmutableField(RankdAPIError):
    code = "board_immutable_field"


class RunConflict(RankdAPIError):
    """409: the run_id was sent before with other content; nothing was accepted."""

    code = "run_conflict"


class BoardFull(RankdAPIError):
    """409: the occurrence to join already has its board's ``max_entrants`` players; the
    player was not joined. Not retried (the same join is refused again until the next
    occurrence)."""

    code = "board_full"


class NotOpen(RankdAPIError):
    """409: nothing to join: the board has no occurrence open now (nor the one named with
    ``period`` open or upcoming), or has no schedule at all. Not retried."""

    code = "not_open"


class BodyTooLarge(RankdAPIError):
    code = "body_too_large"


class UnsupportedMediaType(RankdAPIError):
    code = "unsupported_media_type"


class RateLimited(RankdAPIError):
    code = "rate_limited"


class NotEnabled(RankdAPIError):
    """501: a feature the service was not configured for (player tokens without
    RANKD_PLAYER_TOKEN_SECRET); not retried."""

    code = "not_enabled"


class NotBuilt(RankdAPIError):
    """501 ``not_implemented``: something the contract names that this version of the
    service does not build yet; not retried."""

    code = "not_implemented"


class Unavailable(RankdAPIError):
    """503: nothing was accepted; retrying is safe (submits are idempotent by run_id)."""

    code = "unavailable"


BY_CODE: dict[str, type[RankdAPIError]] = {
    cls.code: cls
    for cls in (
        InvalidRequest,
        ScoreOutOfRange,
        Unauthorized,
        Forbidden,
        BoardNotFound,
        PlayerNotRanked,
        HoldNotFound,
        BoardImmutableField,
        RunConflict,
        BoardFull,
        NotOpen,
        BodyTooLarge,
        UnsupportedMediaType,
        RateLimited,
        NotEnabled,
        NotBuilt,
        Unavailable,
    )
}


def error_for(status: int, body: Any, retry_after: str | None = None) -> RankdAPIError:
    """The exception for an error answer (``body`` as parsed JSON, or None if it was not)."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code = error["code"]
        message = str(error.get("message", ""))
    else:  # not the contract's shape (a proxy in between, say)
        code = "unavailable" if status == 503 else f"http_{status}"
        message = f"HTTP {status} without the error body"
    cls = BY_CODE.get(code, RankdAPIError)
    seconds: float | None = None
    if retry_after is not None:
        try:
            seconds = float(retry_after)
        except ValueError:
            seconds = None
    return cls(status, code, message, seconds)
