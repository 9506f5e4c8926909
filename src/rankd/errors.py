"""One error hierarchy: a snake_case code and one sentence a person can act on.

api/errors.py maps each code to its HTTP status, in one place.
"""

from __future__ import annotations


class RankdError(Exception):
    """An error a client can act on: a snake_case code and one sentence."""

    code = "invalid_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequest(RankdError):
    code = "invalid_request"


class ScoreOutOfRange(RankdError):
    code = "score_out_of_range"


class Unauthorized(RankdError):
    code = "unauthorized"


class Forbidden(RankdError):
    code = "forbidden"


class BoardNotFound(RankdError):
    code = "board_not_found"


class PlayerNotRanked(RankdError):
    code = "player_not_ranked"


class HoldNotFound(RankdError):
    code = "hold_not_found"


class RunConflict(RankdError):
    """A run_id already sent on the board with another player, score or ended_at."""

    code = "run_conflict"


class BoardImmutableField(RankdError):
    code = "board_immutable_field"


class ReshardInProgress(BoardImmutableField):
    """``shards`` cannot change while the board's last change of it is still being moved."""


class NoRoomToReshard(BoardImmutableField):
    """A new ``shards`` whose move would fill Redis past its memory warning ratio."""


class BoardFull(RankdError):
    code = "board_full"


class NotOpen(RankdError):
    code = "not_open"


class BodyTooLarge(RankdError):
    code = "body_too_large"


class RateLimited(RankdError):
    """A key or client address over its request rate; ``retry_after_s`` (at least 1) goes
    out as the Retry-After header."""

    code = "rate_limited"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Unavailable(RankdError):
    code = "unavailable"


class Deadlock(Unavailable):
    """PostgreSQL broke a deadlock by rolling this transaction back: the whole of it can be
    tried again at once."""


class PeriodBusy(Unavailable):
    """One board period refuses writes for now: a rebuild holds its lease (``torn`` False),
    or a rebuild died midway and the period must be rebuilt first (``torn`` True). Only
    that board's writes wait: the log consumer applies the other boards' runs meanwhile."""

    def __init__(self, message: str, *, key: str, board_id: str, torn: bool) -> None:
        super().__init__(message)
        self.key = key  # the period's public Redis key
        self.board_id = board_id
        self.torn = torn


class LogUnavailable(Unavailable):
    """The run log cannot be reached or did not answer in time."""


class TooManyStreams(Unavailable):
    """This process serves as many live streams as it may (RANKD_LIVE_MAX_STREAMS)."""


class NotEnabled(RankdError):
    """A feature this service was not configured for (player tokens without a secret)."""

    code = "not_enabled"


class UnsupportedMediaType(RankdError):
    code = "unsupported_media_type"


class ClientGone(RankdError):
    """The client hung up mid-request: nobody reads the answer; logged at debug only."""

    code = "client_closed_request"


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure of the stores rather than of the messages applied.

    Transient: a store unreachable or busy (connection errors, pool and socket timeouts,
    any Redis error, PostgreSQL OperationalError: shutdown, deadlock, serialization, disk
    full, ...) or not in a state to work (ProgrammingError, InternalError: a missing
    table, a privilege, a corrupt index); applying later, or after a fix, can succeed, and
    parking would only park every message. Anything else that fails on its own is the
    message's: DataError (NUL in text, a value out of range, BadCopyFileFormat),
    IntegrityError, a value too large for an index (ProgramLimitExceeded),
    ValueError/ArithmeticError from a run that cannot be packed, and unexpected errors,
    which are kept parked rather than redelivered until the log gives up on them.

    The stores sort their drivers' errors into these (stores/postgres.py,
    stores/redis/connection.py): ``Unavailable`` for the transient kinds,
    ``InvalidRequest`` for what PostgreSQL refuses to store, so the applier needs no driver.
    """
    return isinstance(exc, Unavailable | OSError)  # TimeoutError and ConnectionError included
