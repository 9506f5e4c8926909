// The contract's errors as exceptions, as in the Python client (rankd.client.errors): one
// base class, one subclass per error code, each carrying the HTTP status, the code, the
// message and, for 429, the Retry-After seconds.

/** An error answer from the service: `{"error": {"code", "message"}}` with its status. */
export class RankdAPIError extends Error {
  readonly status: number;
  readonly code: string;
  readonly retryAfter: number | null;

  constructor(status: number, code: string, message: string, retryAfter: number | null = null) {
    super(message);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }

  override toString(): string {
    return `${this.name}: ${this.status} ${this.code}: ${this.message}`;
  }
}

export class InvalidRequest extends RankdAPIError {}
export class ScoreOutOfRange extends RankdAPIError {}
/** 401: no credentials where some are needed, a wrong key, or a player token that is
 * expired, altered or signed with a secret the service does not hold. */
export class Unauthorized extends RankdAPIError {}
/** 403: valid credentials that are not enough: a server key on an admin route, or a player
 * token on a key route, a batch, another player's view or run, a board without
 * `client_submits`, or without the scope the call needs. */
export class Forbidden extends RankdAPIError {}
export class BoardNotFound extends RankdAPIError {}
export class PlayerNotRanked extends RankdAPIError {}
export class HoldNotFound extends RankdAPIError {}
export class BoardImmutableField extends RankdAPIError {}
export class RunConflict extends RankdAPIError {}
/** 409 `board_full`: the occurrence to join already has its board's `max_entrants` players;
 * the player was not joined. Not retried. */
export class BoardFull extends RankdAPIError {}
/** 409 `not_open`: nothing to join: no occurrence open now (nor the one named with `period`
 * open or upcoming), or a board without a schedule. Not retried. */
export class NotOpen extends RankdAPIError {}
export class BodyTooLarge extends RankdAPIError {}
export class UnsupportedMediaType extends RankdAPIError {}
export class RateLimited extends RankdAPIError {}
/** 501 `not_enabled`: a feature the service was not configured for (player tokens without
 * RANKD_PLAYER_TOKEN_SECRET); not retried. */
export class NotEnabled extends RankdAPIError {}
/** 501 `not_implemented`: something the contract names that this version of the service
 * does not build yet; not retried. */
export class NotBuilt extends RankdAPIError {}
/** 503: nothing was accepted; retrying is safe (submits are idempotent by run_id). */
export class Unavailable extends RankdAPIError {}

type ErrorClass = new (
  status: number,
  code: string,
  message: string,
  retryAfter?: number | null,
) => RankdAPIError;

export const BY_CODE: Readonly<Record<string, ErrorClass>> = {
  invalid_request: InvalidRequest,
  score_out_of_range: ScoreOutOfRange,
  unauthorized: Unauthorized,
  forbidden: Forbidden,
  board_not_found: BoardNotFound,
  player_not_ranked: PlayerNotRanked,
  hold_not_found: HoldNotFound,
  board_immutable_field: BoardImmutableField,
  run_conflict: RunConflict,
  board_full: BoardFull,
  not_open: NotOpen,
  body_too_large: BodyTooLarge,
  unsupported_media_type: UnsupportedMediaType,
  rate_limited: RateLimited,
  not_enabled: NotEnabled,
  not_implemented: NotBuilt,
  unavailable: Unavailable,
};

/** The exception for an error answer (`body` as parsed JSON, or null if it was not). */
export function errorFor(status: number, body: unknown, retryAfter: string | null = null): RankdAPIError {
  const error = isObject(body) ? body["error"] : undefined;
  let code: string;
  let message: string;
  if (isObject(error) && typeof error["code"] === "string") {
    code = error["code"];
    message = String(error["message"] ?? "");
  } else {
    // not the contract's shape (a proxy in between, say)
    code = status === 503 ? "unavailable" : `http_${status}`;
    message = `HTTP ${status} without the error body`;
  }
  const seconds = retryAfter === null || retryAfter.trim() === "" ? NaN : Number(retryAfter);
  const ErrorType = BY_CODE[code] ?? RankdAPIError;
  return new ErrorType(status, code, message, Number.isFinite(seconds) ? seconds : null);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
