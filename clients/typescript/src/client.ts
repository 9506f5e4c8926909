// RankdClient: the HTTP API from Node (18+) or a browser, over the platform's fetch. It
// behaves as the Python client (rankd.client) does: errors are RankdAPIError subclasses;
// only submits are retried (a run_id is counted once, so a resent run changes nothing
// twice), on 503, a lost connection or a timeout, and on 429 when its Retry-After is short;
// reads and admin calls are the caller's to retry. No other error answer is retried (a 403
// or any other 4xx, a 501 `not_enabled` or `not_implemented`): sending again changes nothing.
//
// `key` is any bearer credential: an admin or server key, or a player token (mintToken's
// `token`), which a game client holds: its reads are that player's own view, and it submits
// that player's runs on boards with `client_submits`.

import { RankdAPIError, RateLimited, Unavailable, errorFor } from "./errors.js";
import { EventReader, lines, playerEvent, type PlayerEvent } from "./events.js";
import type { Operations } from "./wire.js";

type Answer<K extends keyof Operations> = Operations[K]["response"];
type Body<K extends keyof Operations> = Operations[K]["request"];

export type Board = Answer<"get_board">;
export type BoardConfig = Body<"put_board">;
export type Run = Body<"submit_run">;
export type SubmitResult = Answer<"submit_run">;
export type BatchItem = Answer<"submit_batch">["results"][number];
export type Top = Answer<"top">;
export type Entry = Top["entries"][number];
export type PlayerStanding = Answer<"player">;
export type Around = Answer<"around">;
export type Friends = Answer<"friends">;
export type PlayerStandings = Answer<"standings">;
export type BoardStanding = PlayerStandings["standings"][number];
export type RankOf = Answer<"rank_of">;
export type Periods = Answer<"periods">;
export type Profile = Answer<"get_profile">;
export type TokenRequest = Body<"mint_token">;
export type TokenScope = NonNullable<TokenRequest["scope"]>[number];
export type PlayerTokenIssued = Answer<"mint_token">;
export type Joined = Answer<"join">;
export type Cohort = Answer<"league">;
export type LeagueEntry = Cohort["entries"][number];
export type LeagueHistory = Answer<"leagues">;
export type Ban = Answer<"ban">;
export type Hold = Answer<"holds">["holds"][number];
export type HoldDecision = Answer<"approve">;
export type Bans = Answer<"bans">;
export type BanInfo = Bans["bans"][number];
export type BanRequest = Body<"ban">;
export type BoardDeleted = Answer<"delete_board">;
export type PlayerErased = Answer<"erase_player">;
export type EntryRemoved = Answer<"delete_entry">;
export type PeriodClosed = Answer<"close_period">;
export type Deliveries = Answer<"list_deliveries">;
export type Delivery = Deliveries["deliveries"][number];
export type Segments = Answer<"segments">;
export type Health = Answer<"healthz">;
export type Ready = Answer<"readyz">;

export const MAX_BATCH = 1000; // runs per runs:batch call

/** Bounded exponential backoff for submits: at most `attempts` calls, waiting about
 * `firstDelayMs`, then twice as long each time, never more than `maxDelayMs` (each wait
 * jittered between half and all of it, so many clients do not retry in step). */
export class RetryPolicy {
  readonly attempts: number;
  readonly firstDelayMs: number;
  readonly maxDelayMs: number;

  constructor({ attempts = 5, firstDelayMs = 100, maxDelayMs = 2000 } = {}) {
    if (!(attempts >= 1 && firstDelayMs >= 0 && maxDelayMs >= firstDelayMs)) {
      throw new RangeError("attempts >= 1 and 0 <= firstDelayMs <= maxDelayMs");
    }
    this.attempts = attempts;
    this.firstDelayMs = firstDelayMs;
    this.maxDelayMs = maxDelayMs;
  }

  /** Milliseconds to wait before retry number `retry` (0 for the first). */
  delay(retry: number, retryAfterS: number | null = null): number {
    const ceiling = Math.min(this.maxDelayMs, this.firstDelayMs * 2 ** retry);
    let wait = ceiling / 2 + Math.random() * (ceiling / 2);
    if (retryAfterS !== null) wait = Math.max(wait, retryAfterS * 1000);
    return wait;
  }

  /** Whether a submit that failed on attempt `attempt` (0-based) is sent again. */
  shouldRetry(idempotentSubmit: boolean, attempt: number, failure: unknown): boolean {
    if (!idempotentSubmit || attempt + 1 >= this.attempts) return false;
    if (failure instanceof RateLimited) {
      // only a short wait: a longer one is the caller's decision
      return failure.retryAfter === null || failure.retryAfter * 1000 <= this.maxDelayMs;
    }
    return failure instanceof Unavailable || isTransportError(failure);
  }
}

/** A request that never got an HTTP answer: refused or dropped connection, or timed out. */
export function isTransportError(failure: unknown): boolean {
  if (failure instanceof RankdAPIError) return false;
  if (failure instanceof TypeError) return true; // fetch's "fetch failed"
  const name = (failure as { name?: unknown } | null)?.name;
  return name === "TimeoutError" || name === "AbortError";
}

export interface ClientOptions {
  /** The bearer credential every call sends: an admin or server key, or a player token
   * (`mintToken`'s `token`, for a game client: reads are that player's own view; submits
   * need the `submit` scope and a board with `client_submits`; key routes answer 403
   * `Forbidden`). None: public reads only. */
  key?: string;
  /** Per request, in milliseconds (the event stream has none). Default 10 s. */
  timeoutMs?: number;
  retry?: RetryPolicy;
  /** Another fetch (a test's, a proxy agent's); default the global one. */
  fetch?: typeof fetch;
}

export interface Where {
  window?: string;
  period?: string;
  segment?: string;
}
export interface ViewerWhere extends Where {
  /** A player's own view (needs a server key; a player token reads its own anyway). */
  viewer?: string;
}
/** What top, player, around and friends may add to each entry they answer. */
export interface Include {
  /** "metadata": each entry (the player read: the answer itself) also carries `metadata`,
   * the metadata of the run holding it (null: that run had none). Not asked: no
   * `metadata` member at all. */
  include?: "metadata";
}

type Params = Record<string, string | number | undefined>;

interface Call {
  method: string;
  path: string;
  params?: Params;
  body?: unknown;
  idempotentSubmit?: boolean;
}

const part = encodeURIComponent;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class RankdClient {
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly fetch: typeof fetch;

  constructor(baseUrl = "http://127.0.0.1:8000", options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.retry = options.retry ?? new RetryPolicy();
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.headers = options.key ? { Authorization: `Bearer ${options.key}` } : {};
  }

  private url(path: string, params: Params = {}): string {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) {
      if (value !== undefined) query.set(name, String(value));
    }
    const text = query.toString();
    return `${this.baseUrl}${path}${text ? `?${text}` : ""}`;
  }

  private async once(call: Call): Promise<unknown> {
    const headers: Record<string, string> = { ...this.headers, Accept: "application/json" };
    const init: RequestInit = {
      method: call.method,
      headers,
      signal: AbortSignal.timeout(this.timeoutMs),
    };
    if (call.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(call.body);
    }
    const response = await this.fetch(this.url(call.path, call.params), init);
    return decode(response);
  }

  private async send<T>(call: Call): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return (await this.once(call)) as T;
      } catch (failure) {
        if (!this.retry.shouldRetry(call.idempotentSubmit === true, attempt, failure)) throw failure;
        const after = failure instanceof RankdAPIError ? failure.retryAfter : null;
        await sleep(this.retry.delay(attempt, after));
      }
    }
  }

  // --- boards (admin key to write) ---------------------------------------------------------

  /** Create or update a board (admin key); omitted fields keep their value.
   * `hooks: { period_closed: url }` has each frozen period POSTed to `url` (the service
   * needs RANKD_WEBHOOK_SECRET, else `InvalidRequest`); `null` as the URL removes it. Only
   * an admin key's reads show a board's `hooks`. */
  putBoard(boardId: string, config: BoardConfig = {}): Promise<Board> {
    return this.send({ method: "PUT", path: `/v1/boards/${part(boardId)}`, body: config });
  }

  async listBoards(): Promise<Board[]> {
    return (await this.send<Answer<"list_boards">>({ method: "GET", path: "/v1/boards" })).boards;
  }

  getBoard(boardId: string): Promise<Board> {
    return this.send({ method: "GET", path: `/v1/boards/${part(boardId)}` });
  }

  /** Delete a board with its standings, archive and holds (admin key); the id can be reused. */
  deleteBoard(boardId: string): Promise<BoardDeleted> {
    return this.send({ method: "DELETE", path: `/v1/boards/${part(boardId)}` });
  }

  /** The segment values with public entries in a period, most entries first. */
  segments(boardId: string, options: { window?: string; period?: string } = {}): Promise<Segments> {
    return this.send({ method: "GET", path: `/v1/boards/${part(boardId)}/segments`, params: { ...options } });
  }

  // --- runs (server key; a player token its own runs, on client_submits boards) ------------

  /** Submit one run; retried on 503 (resending a run_id is harmless). With a player token:
   * that player's own run, on a board with `client_submits` (else `Forbidden`). `metadata`:
   * a JSON object (at most 16 keys, 1,024 bytes encoded; else `InvalidRequest`) kept with
   * the entry the run holds; the reads return it with `{ include: "metadata" }`. */
  submit(
    boardId: string,
    runId: string,
    playerId: string,
    score: number,
    options: { endedAt?: string | Date; segments?: Record<string, string>; metadata?: Record<string, unknown> } = {},
  ): Promise<SubmitResult> {
    const run: Run = { run_id: runId, player_id: playerId, score };
    if (options.endedAt !== undefined) run.ended_at = timeText(options.endedAt);
    if (options.segments !== undefined) run.segments = options.segments;
    if (options.metadata !== undefined) run.metadata = options.metadata;
    return this.send({
      method: "POST",
      path: `/v1/boards/${part(boardId)}/runs`,
      body: run,
      idempotentSubmit: true,
    });
  }

  /** Up to 1000 runs in one call: one result per run, in order. */
  async submitBatch(boardId: string, runs: readonly Run[]): Promise<BatchItem[]> {
    if (runs.length > MAX_BATCH) {
      throw new RangeError(`${runs.length} runs: at most ${MAX_BATCH} per batch (see submitMany)`);
    }
    const answer = await this.send<Answer<"submit_batch">>({
      method: "POST",
      path: `/v1/boards/${part(boardId)}/runs:batch`,
      body: { runs: runs.map((run) => ({ ...run })) },
      idempotentSubmit: true,
    });
    return answer.results;
  }

  /** Any number of runs, as runs:batch calls of `batchSize`; results in order. */
  async submitMany(boardId: string, runs: Iterable<Run>, batchSize = MAX_BATCH): Promise<BatchItem[]> {
    if (!(batchSize >= 1 && batchSize <= MAX_BATCH)) {
      throw new RangeError(`batch size must be 1..${MAX_BATCH}`);
    }
    const results: BatchItem[] = [];
    let chunk: Run[] = [];
    for (const run of runs) {
      chunk.push(run);
      if (chunk.length === batchSize) {
        results.push(...(await this.submitBatch(boardId, chunk)));
        chunk = [];
      }
    }
    if (chunk.length) results.push(...(await this.submitBatch(boardId, chunk)));
    return results;
  }

  // --- tournaments (server key; a player token with the join scope, its own player) --------

  /** Join a scheduled board's occurrence: the one open now, or with `period` an upcoming (or
   * open) one by its id (`20261205T1800Z`); joining again is harmless. On a board with
   * `join_required` only joined players' runs count there. `BoardFull` (409) when the
   * occurrence has its `max_entrants` players, `NotOpen` (409) when there is none to join
   * (none open, the named one over or not an occurrence, or no schedule); neither is
   * retried. With a player token: that player only, and the token needs the "join" scope
   * (else `Forbidden`). */
  join(boardId: string, playerId: string, options: { period?: string } = {}): Promise<Joined> {
    return this.send({
      method: "POST",
      path: `/v1/boards/${part(boardId)}/players/${part(playerId)}/join`,
      params: { period: options.period },
    });
  }

  // --- reads (public; viewer= needs a server key; a player token reads its own view) -------

  /** `n` entries from `offset`, or after `cursor` (a page's `next_cursor`: exact under
   * concurrent writes, at any depth); `next_cursor` is null on the last page. */
  top(
    boardId: string,
    options: ViewerWhere & Include & { n?: number; offset?: number; cursor?: string } = {},
  ): Promise<Top> {
    const { n = 10, offset = 0, cursor, ...where } = options;
    const paging = cursor !== undefined ? { cursor } : { offset };
    return this.send({
      method: "GET",
      path: `/v1/boards/${part(boardId)}/top`,
      params: { ...where, n, ...paging },
    });
  }

  player(
    boardId: string,
    playerId: string,
    options: ViewerWhere & Include & { accuracy?: "exact" | "approx" } = {},
  ): Promise<PlayerStanding> {
    return this.send({
      method: "GET",
      path: `/v1/boards/${part(boardId)}/players/${part(playerId)}`,
      params: { ...options },
    });
  }

  around(boardId: string, playerId: string, options: ViewerWhere & Include & { range?: number } = {}): Promise<Around> {
    const { range = 5, ...where } = options;
    return this.send({
      method: "GET",
      path: `/v1/boards/${part(boardId)}/players/${part(playerId)}/around`,
      params: { ...where, range },
    });
  }

  friends(
    boardId: string,
    playerId: string,
    ids: readonly string[],
    options: ViewerWhere & Include = {},
  ): Promise<Friends> {
    return this.send({
      method: "GET",
      path: `/v1/boards/${part(boardId)}/players/${part(playerId)}/friends`,
      params: { ...options, ids: ids.join(",") },
    });
  }

  /** The player's league cohort in the league window's `period` (default: the current one),
   * ranked within it, each entry with its `zone` ("promote", "stay" or "relegate").
   * `PlayerNotRanked` before their first counted run of the period. */
  league(
    boardId: string,
    playerId: string,
    options: { period?: string; viewer?: string } & Include = {},
  ): Promise<Cohort> {
    return this.send({
      method: "GET",
      path: `/v1/boards/${part(boardId)}/players/${part(playerId)}/league`,
      params: { ...options },
    });
  }

  /** One league cohort by its id (`"silver-3"`), ranked within it. */
  cohort(
    boardId: string,
    cohort: string,
    options: { period?: string; viewer?: string } & Include = {},
  ): Promise<Cohort> {
    return this.send({
      method: "GET",
      path: `/v1/boards/${part(boardId)}/cohorts/${part(cohort)}`,
      params: { ...options },
    });
  }

  /** The player's tier on a league board now, and what each frozen period did to it. */
  leagues(playerId: string, boardId: string): Promise<LeagueHistory> {
    return this.send({
      method: "GET",
      path: `/v1/players/${part(playerId)}/leagues`,
      params: { board: boardId },
    });
  }

  /** One player's standing on each of `boards` (up to 100) in the current period of
   * `window` (default: each board's first). Boards where the player has no entry, or that
   * lack the window, are left out; ids of boards that do not exist are in `unknown_boards`. */
  standings(
    playerId: string,
    boards: readonly string[],
    options: { window?: string; viewer?: string } = {},
  ): Promise<PlayerStandings> {
    return this.send({
      method: "GET",
      path: `/v1/players/${part(playerId)}/standings`,
      params: { ...options, boards: boards.join(",") },
    });
  }

  rankOf(boardId: string, score: number, options: Where = {}): Promise<RankOf> {
    return this.send({
      method: "GET",
      path: `/v1/boards/${part(boardId)}/rank-of`,
      params: { ...options, score },
    });
  }

  periods(boardId: string, options: { window?: string; segment?: string } = {}): Promise<Periods> {
    return this.send({ method: "GET", path: `/v1/boards/${part(boardId)}/periods`, params: { ...options } });
  }

  /** The live top list: the first on connect, then each change (Server-Sent Events). The
   * stream has no timeout; end it with `signal` (or by leaving a `for await` loop). */
  async *events(
    boardId: string,
    options: Where & { n?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<Top> {
    const { n = 10, signal, ...where } = options;
    for await (const found of this.stream(`/v1/boards/${part(boardId)}/events`, { ...where, n }, signal)) {
      if (found[0] === "top") yield JSON.parse(found[1]) as Top;
    }
  }

  /** One player's live events on `boards` (up to 20; each board window's current period,
   * global standings), read as they come (Server-Sent Events): a `StandingEvent` on connect
   * for each window where the player has an entry and whenever their rank changes (at most
   * one a second per board and window), a `PassedEvent` when one of `friends` (up to 100)
   * overtakes them; narrow on `event.kind`. Needs a server key or that player's own token
   * (scope "read"; another player's id is `Forbidden`). The request goes out at the first
   * `next()`, which throws an error answer as any call does (`InvalidRequest`,
   * `BoardNotFound`, `Unavailable` when the instance serves its maximum of streams, ...).
   * The stream has no timeout; end it with `signal` (or by leaving a `for await` loop). */
  async *playerEvents(
    playerId: string,
    boards: readonly string[],
    options: { friends?: readonly string[]; signal?: AbortSignal } = {},
  ): AsyncGenerator<PlayerEvent> {
    const { friends, signal } = options;
    const params = { boards: boards.join(","), friends: friends?.length ? friends.join(",") : undefined };
    for await (const found of this.stream(`/v1/players/${part(playerId)}/events`, params, signal)) {
      const event = playerEvent(found);
      if (event) yield event;
    }
  }

  /** The [event, data] pairs of a text/event-stream, line by line as they arrive; an error
   * answer throws its RankdAPIError subclass before any. */
  private async *stream(path: string, params: Params, signal?: AbortSignal): AsyncGenerator<[string, string]> {
    const init: RequestInit = { headers: { ...this.headers, Accept: "text/event-stream" } };
    if (signal) init.signal = signal;
    const response = await this.fetch(this.url(path, params), init);
    if (response.status >= 400) await decode(response); // throws its error
    if (!response.body) return;
    const reader = new EventReader();
    for await (const line of lines(response.body)) {
      const found = reader.feed(line);
      if (found) yield found;
    }
  }

  // --- players (server key) and moderation (admin key) ----------------------------------------

  putPlayer(playerId: string, profile: { name?: string; segments?: Record<string, string> } = {}): Promise<Profile> {
    return this.send({ method: "PUT", path: `/v1/players/${part(playerId)}`, body: profile });
  }

  getPlayer(playerId: string): Promise<Profile> {
    return this.send({ method: "GET", path: `/v1/players/${part(playerId)}` });
  }

  /** A player token for a game client (server key): `scope` of "read", "submit", "join"
   * (service default: read only), valid `ttlS` seconds, 60..604800 (service default: 3600).
   * Give its `token` to the game, as its client's `key`. `NotEnabled` (501) when the service
   * has no RANKD_PLAYER_TOKEN_SECRET. */
  mintToken(
    playerId: string,
    options: { scope?: readonly TokenScope[]; ttlS?: number } = {},
  ): Promise<PlayerTokenIssued> {
    const body: TokenRequest = {};
    if (options.scope !== undefined) body.scope = [...options.scope];
    if (options.ttlS !== undefined) body.ttl_s = options.ttlS;
    return this.send({ method: "POST", path: `/v1/players/${part(playerId)}/tokens`, body });
  }

  /** Shadow-ban a player on every board (admin key). `reason` (1..500 printable characters)
   * is recorded for moderators and listed by `bans`; without one, the call sends no body and
   * the ban has none. Banning again replaces the reason. */
  ban(playerId: string, reason?: string | null): Promise<Ban> {
    const call: Call = { method: "POST", path: `/v1/players/${part(playerId)}/ban` };
    if (reason !== undefined && reason !== null) {
      const body: BanRequest = { reason };
      call.body = body;
    }
    return this.send(call);
  }

  unban(playerId: string): Promise<Ban> {
    return this.send({ method: "DELETE", path: `/v1/players/${part(playerId)}/ban` });
  }

  /** Players banned now, newest first, each with its `reason` (null: none given); pass
   * `next` as `after` for the next page. */
  bans(options: { limit?: number; after?: string } = {}): Promise<Bans> {
    const { limit = 100, after } = options;
    return this.send({ method: "GET", path: "/v1/bans", params: { limit, after } });
  }

  /** Erase a player everywhere, for a privacy request (admin key). */
  erasePlayer(playerId: string): Promise<PlayerErased> {
    return this.send({ method: "DELETE", path: `/v1/players/${part(playerId)}` });
  }

  async holds(boardId: string): Promise<Hold[]> {
    const answer = await this.send<Answer<"holds">>({ method: "GET", path: `/v1/boards/${part(boardId)}/holds` });
    return answer.holds;
  }

  approve(boardId: string, runId: string): Promise<HoldDecision> {
    return this.send({ method: "POST", path: `/v1/boards/${part(boardId)}/holds/${part(runId)}/approve` });
  }

  reject(boardId: string, runId: string): Promise<HoldDecision> {
    return this.send({ method: "POST", path: `/v1/boards/${part(boardId)}/holds/${part(runId)}/reject` });
  }

  /** The board's webhook deliveries (admin key), newest first: one per period frozen while
   * it had `hooks.period_closed`, with its `status` ("pending", retried with backoff;
   * "delivered"; "failed"), `attempts` and the receiver's `last_status`. `limit`: 1..1000
   * (default 100). */
  async deliveries(boardId: string, options: { limit?: number } = {}): Promise<Delivery[]> {
    const { limit = 100 } = options;
    const answer = await this.send<Deliveries>({
      method: "GET",
      path: `/v1/boards/${part(boardId)}/deliveries`,
      params: { limit },
    });
    return answer.deliveries;
  }

  /** Remove one player's entry from one period, a correction (admin key): their runs that
   * ended by now no longer count there (not after a replay or a rebuild either); a run that
   * ends later counts again, as a new entry. The player's other windows, periods and boards
   * keep theirs. `window`: the board's first when absent; `period`: that window's current
   * one when absent (the answer names both). `PlayerNotRanked` (404) when there is no such
   * entry; `InvalidRequest` for a window the board does not have or a bad period id;
   * `Unavailable` (503, not retried: the caller's to retry) while the log consumer is behind. */
  deleteEntry(
    boardId: string,
    playerId: string,
    options: { window?: string; period?: string } = {},
  ): Promise<EntryRemoved> {
    const { window, period } = options;
    return this.send({
      method: "DELETE",
      path: `/v1/boards/${part(boardId)}/entries/${part(playerId)}`,
      params: { window, period },
    });
  }

  /** Close an open period now, as if it had ended (admin key): runs received from the
   * answer's `closed_at` on answer `status: "closed"` in that window and change nothing there
   * (they still count in the board's other windows), `periods` lists it closed, and the
   * season job freezes it into the archive. The call answers once every instance of the
   * service has the close (a few seconds). `window`: the board's first when absent. Closing
   * again a period an admin closed is harmless and answers the same `closed_at`.
   * `InvalidRequest` for the all-time window (it never closes), a window the board does not
   * have, a bad period id, a period that has not started yet or one closed already;
   * `BoardNotFound` for no such board. */
  closePeriod(boardId: string, period: string, options: { window?: string } = {}): Promise<PeriodClosed> {
    return this.send({
      method: "POST",
      path: `/v1/boards/${part(boardId)}/periods/${part(period)}/close`,
      params: { window: options.window },
    });
  }

  // --- operations -----------------------------------------------------------------------------

  healthz(): Promise<Health> {
    return this.send({ method: "GET", path: "/healthz" });
  }

  /** 200 answers (ready or degraded); a 503 raises Unavailable. */
  readyz(): Promise<Ready> {
    return this.send({ method: "GET", path: "/readyz" });
  }
}

/** The JSON of a 2xx answer; an error answer throws its RankdAPIError subclass. */
export async function decode(response: Response): Promise<unknown> {
  const text = await response.text();
  if (response.status >= 400) {
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    throw errorFor(response.status, body, response.headers.get("retry-after"));
  }
  return JSON.parse(text);
}

/** RFC 3339 as the contract writes it: UTC with milliseconds. */
export function timeText(value: string | Date): string {
  return typeof value === "string" ? value : value.toISOString();
}
