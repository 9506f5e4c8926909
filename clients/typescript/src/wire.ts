// Generated from the service's /openapi.json by scripts/gen-wire.mjs (npm run gen).
// Do not edit: test/client.test.ts checks it against a running rankd serve.

export interface Ban {
  player_id: string;
  banned: boolean;
}

export interface BanInfo {
  player_id: string;
  banned_at: string;
  reason: string | null;
}

export interface BanRequest {
  reason?: string | null;
}

export interface Bans {
  bans: BanInfo[];
  next: string | null;
}

export interface Batch {
  runs: Run[];
}

export interface BatchItem {
  run_id: string | null;
  standings?: Standing[] | null;
  error?: ErrorBody | null;
}

export interface BatchResults {
  results: BatchItem[];
}

export interface Board {
  board_id: string;
  windows: string[];
  order: string;
  policy: string;
  window_policies: Record<string, string>;
  max_score: number;
  max_run_score: number;
  shards: number;
  hold_top: number;
  grace_seconds: number;
  retention_days: Record<string, number>;
  segments: string[];
  score_format: "integer" | "duration_ms" | "decimal_1" | "decimal_2" | "decimal_3";
  client_submits: boolean;
  join_required: boolean;
  max_entrants: number;
  max_attempts: number;
  league: LeagueSettings | null;
  hooks?: Record<string, string> | null;
  schedule?: Record<string, string | null> | null;
  current_period?: Occurrence | null;
  next_period?: Occurrence | null;
  resharding?: Record<string, number> | null;
  created_at: string;
  tie_resolution_ms: Record<string, number>;
}

export interface BoardDeleted {
  board_id: string;
  deleted: true;
}

export interface BoardSettings {
  windows?: Array<"all-time" | "daily" | "weekly" | "monthly" | "hourly" | "scheduled" | "rolling-7d"> | null;
  order?: "desc" | "asc" | null;
  policy?: "best" | "sum" | "latest" | null;
  window_policies?: Record<string, "best" | "sum" | "latest"> | null;
  max_score?: number | null;
  max_run_score?: number | null;
  shards?: number | null;
  hold_top?: number | null;
  grace_seconds?: number | null;
  retention_days?: Record<string, number> | null;
  segments?: string[] | null;
  score_format?: "integer" | "duration_ms" | "decimal_1" | "decimal_2" | "decimal_3" | null;
  client_submits?: boolean | null;
  schedule?: Record<string, string | null> | null;
  join_required?: boolean | null;
  max_entrants?: number | null;
  max_attempts?: number | null;
  hooks?: Record<string, string | null> | null;
  league?: {
  window: "hourly" | "daily" | "weekly" | "monthly";
  tiers: string[];
  cohort_size?: number | null;
  promote?: number | null;
  relegate?: number | null;
} | null;
}

export interface BoardStanding {
  board_id: string;
  window: string;
  period: string;
  rank: number;
  score: number;
  achieved_at: string;
  total: number;
}

export interface Boards {
  boards: Board[];
}

export interface Cohort {
  board_id: string;
  window: string;
  period: string;
  tier: string;
  cohort: string;
  ends_at: string;
  entries: LeagueEntry[];
}

export interface ConsumerLag {
  pending: number;
  ack_pending: number;
  oldest_unacked_seconds: number;
  parked: number;
  parked_since: string | null;
}

export interface Deliveries {
  board_id: string;
  deliveries: Delivery[];
}

export interface Delivery {
  delivery_id: string;
  event: "period_closed";
  url: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  created_at: string;
  next_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  done_at: string | null;
}

export interface Entry {
  rank: number;
  player_id: string;
  score: number;
  achieved_at: string;
  name: string | null;
  metadata?: Record<string, unknown> | null;
}

export interface EntryRemoved {
  board_id: string;
  player_id: string;
  window: string;
  period: string;
  removed: true;
}

export interface ErrorBody {
  code: string;
  message: string;
}

export interface ErrorResponse {
  error: ErrorBody;
}

export interface FriendEntry {
  rank: number;
  player_id: string;
  score: number;
  achieved_at: string;
  name: string | null;
  metadata?: Record<string, unknown> | null;
  position: number;
}

export interface Friends {
  board_id: string;
  window: string;
  period: string;
  entries: FriendEntry[];
  not_found: string[];
}

export interface Health {
  status: "ok";
}

export interface Hold {
  run_id: string;
  player_id: string;
  score: number;
  window: string;
  period: string;
  ended_at: string;
}

export interface HoldDecision {
  board_id: string;
  run_id: string;
  decision: "approved" | "rejected";
}

export interface Holds {
  board_id: string;
  holds: Hold[];
}

export interface Joined {
  player_id: string;
  period: string;
  joined: boolean;
}

export interface LeagueEntry {
  rank: number;
  player_id: string;
  score: number;
  achieved_at: string;
  name: string | null;
  metadata?: Record<string, unknown> | null;
  zone: "promote" | "stay" | "relegate";
}

export interface LeagueHistory {
  board_id: string;
  player_id: string;
  tier: string;
  history: LeaguePeriod[];
}

export interface LeaguePeriod {
  period: string;
  tier: string;
  cohort: string;
  rank: number | null;
  moved: "up" | "down" | "stay";
}

export interface LeagueSettings {
  window: "hourly" | "daily" | "weekly" | "monthly";
  tiers: string[];
  cohort_size?: number | null;
  promote?: number | null;
  relegate?: number | null;
}

export interface Occurrence {
  period: string;
  starts_at: string;
  ends_at: string;
}

export interface Page {
  board_id: string;
  window: string;
  period: string;
  total: number;
  entries: Entry[];
}

export interface PeriodClosed {
  board_id: string;
  window: string;
  period: string;
  status: "closed";
  closed_at: string;
}

export interface PeriodInfo {
  period: string;
  status: "open" | "closed" | "archived" | "upcoming";
  starts_at: string;
  ends_at: string;
}

export interface Periods {
  board_id: string;
  window: string;
  periods: PeriodInfo[];
}

export interface PlayerErased {
  player_id: string;
  erased: true;
}

export interface PlayerRank {
  rank: number;
  player_id: string;
  score: number;
  achieved_at: string;
  name: string | null;
  metadata?: Record<string, unknown> | null;
  board_id: string;
  window: string;
  period: string;
  total: number;
  percentile: number;
  approximate?: boolean | null;
  error_bound?: number | null;
}

export interface PlayerStandings {
  player_id: string;
  standings: BoardStanding[];
  unknown_boards: string[];
}

export interface PlayerTokenIssued {
  token: string;
  expires_at: string;
  scope: string[];
}

export interface Profile {
  player_id: string;
  name: string | null;
  segments: Record<string, string>;
  banned?: boolean | null;
}

export interface ProfileUpdate {
  name?: string | null;
  segments?: Record<string, string> | null;
}

export interface RankOf {
  board_id: string;
  window: string;
  period: string;
  score: number;
  rank: number;
  total: number;
}

export interface Ready {
  status: "ready" | "degraded" | "unavailable";
  checks: Record<string, string>;
  consumer: ConsumerLag | null;
  reasons?: string[] | null;
  recovering?: Record<string, string> | null;
  error?: ErrorBody | null;
}

export interface Run {
  run_id: string;
  player_id: string;
  score: number;
  ended_at?: string | null;
  segments?: Record<string, string> | null;
  metadata?: Record<string, unknown> | null;
}

export interface SegmentValue {
  value: string;
  total: number;
}

export interface SegmentValues {
  dimension: string;
  values: SegmentValue[];
}

export interface Segments {
  board_id: string;
  window: string;
  period: string;
  segments: SegmentValues[];
}

export interface Standing {
  window: string;
  period: string;
  segment: string | null;
  status: "ranked" | "held" | "closed" | "not_open" | "not_joined" | "full" | "attempts_exhausted";
  rank?: number | null;
  previous_rank?: number | null;
  score?: number | null;
  achieved_at?: string | null;
  improved: boolean;
  is_best: boolean;
}

export interface SubmitResult {
  run_id: string;
  player_id: string;
  score: number;
  standings: Standing[];
}

export interface TokenRequest {
  ttl_s?: number | null;
  scope?: Array<"read" | "submit" | "join"> | null;
}

export interface TopPage {
  board_id: string;
  window: string;
  period: string;
  total: number;
  entries: Entry[];
  next_cursor: string | null;
}

/** Each operation (by operationId): its method, path, JSON body and 2xx answer. */
export interface Operations {
  approve: { method: "POST"; path: "/v1/boards/{board_id}/holds/{run_id}/approve"; request: never; response: HoldDecision };
  around: { method: "GET"; path: "/v1/boards/{board_id}/players/{player_id}/around"; request: never; response: Page };
  ban: { method: "POST"; path: "/v1/players/{player_id}/ban"; request: BanRequest; response: Ban };
  bans: { method: "GET"; path: "/v1/bans"; request: never; response: Bans };
  close_period: { method: "POST"; path: "/v1/boards/{board_id}/periods/{period}/close"; request: never; response: PeriodClosed };
  cohort: { method: "GET"; path: "/v1/boards/{board_id}/cohorts/{cohort}"; request: never; response: Cohort };
  delete_board: { method: "DELETE"; path: "/v1/boards/{board_id}"; request: never; response: BoardDeleted };
  delete_entry: { method: "DELETE"; path: "/v1/boards/{board_id}/entries/{player_id}"; request: never; response: EntryRemoved };
  erase_player: { method: "DELETE"; path: "/v1/players/{player_id}"; request: never; response: PlayerErased };
  events: { method: "GET"; path: "/v1/boards/{board_id}/events"; request: never; response: string };
  friends: { method: "GET"; path: "/v1/boards/{board_id}/players/{player_id}/friends"; request: never; response: Friends };
  get_board: { method: "GET"; path: "/v1/boards/{board_id}"; request: never; response: Board };
  get_profile: { method: "GET"; path: "/v1/players/{player_id}"; request: never; response: Profile };
  healthz: { method: "GET"; path: "/healthz"; request: never; response: Health };
  holds: { method: "GET"; path: "/v1/boards/{board_id}/holds"; request: never; response: Holds };
  join: { method: "POST"; path: "/v1/boards/{board_id}/players/{player_id}/join"; request: never; response: Joined };
  league: { method: "GET"; path: "/v1/boards/{board_id}/players/{player_id}/league"; request: never; response: Cohort };
  leagues: { method: "GET"; path: "/v1/players/{player_id}/leagues"; request: never; response: LeagueHistory };
  list_boards: { method: "GET"; path: "/v1/boards"; request: never; response: Boards };
  list_deliveries: { method: "GET"; path: "/v1/boards/{board_id}/deliveries"; request: never; response: Deliveries };
  metrics_text: { method: "GET"; path: "/metrics"; request: never; response: string };
  mint_token: { method: "POST"; path: "/v1/players/{player_id}/tokens"; request: TokenRequest; response: PlayerTokenIssued };
  periods: { method: "GET"; path: "/v1/boards/{board_id}/periods"; request: never; response: Periods };
  player: { method: "GET"; path: "/v1/boards/{board_id}/players/{player_id}"; request: never; response: PlayerRank };
  player_events: { method: "GET"; path: "/v1/players/{player_id}/events"; request: never; response: string };
  put_board: { method: "PUT"; path: "/v1/boards/{board_id}"; request: BoardSettings; response: Board };
  put_profile: { method: "PUT"; path: "/v1/players/{player_id}"; request: ProfileUpdate; response: Profile };
  rank_of: { method: "GET"; path: "/v1/boards/{board_id}/rank-of"; request: never; response: RankOf };
  readyz: { method: "GET"; path: "/readyz"; request: never; response: Ready };
  reject: { method: "POST"; path: "/v1/boards/{board_id}/holds/{run_id}/reject"; request: never; response: HoldDecision };
  segments: { method: "GET"; path: "/v1/boards/{board_id}/segments"; request: never; response: Segments };
  standings: { method: "GET"; path: "/v1/players/{player_id}/standings"; request: never; response: PlayerStandings };
  submit_batch: { method: "POST"; path: "/v1/boards/{board_id}/runs:batch"; request: Batch; response: BatchResults };
  submit_run: { method: "POST"; path: "/v1/boards/{board_id}/runs"; request: Run; response: SubmitResult };
  top: { method: "GET"; path: "/v1/boards/{board_id}/top"; request: never; response: TopPage };
  unban: { method: "DELETE"; path: "/v1/players/{player_id}/ban"; request: never; response: Ban };
}
