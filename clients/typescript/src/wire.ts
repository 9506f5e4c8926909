// Generated from the service's /openapi.json by scripts/gen-wire.mjs (npm run gen).
// Do not edit: test/client.test.ts checks it against a running rankd serve.

export interface AroundOut {
  board_id: string;
  window: string;
  period: string;
  total: number;
  entries: Entry[];
}

export interface BanInfo {
  player_id: string;
  banned_at: string;
}

export interface BanOut {
  player_id: string;
  banned: boolean;
}

export interface BansOut {
  bans: BanInfo[];
  next: string | null;
}

export interface BatchIn {
  runs: RunIn[];
}

export interface BatchOut {
  results: BatchResult[];
}

export interface BatchResult {
  run_id: string | null;
  standings?: Standing[] | null;
  error?: ErrorBody | null;
}

export interface BoardDeletedOut {
  board_id: string;
  deleted: true;
}

export interface BoardIn {
  windows?: Array<"all-time" | "daily" | "weekly" | "monthly"> | null;
  order?: "desc" | "asc" | null;
  policy?: "best" | "sum" | null;
  max_score?: number | null;
  max_run_score?: number | null;
  shards?: number | null;
  hold_top?: number | null;
  grace_seconds?: number | null;
  retention_days?: Record<string, number> | null;
  segments?: string[] | null;
  score_format?: "integer" | "duration_ms" | "decimal_1" | "decimal_2" | "decimal_3" | null;
}

export interface BoardOut {
  board_id: string;
  windows: string[];
  order: string;
  policy: string;
  max_score: number;
  max_run_score: number;
  shards: number;
  hold_top: number;
  grace_seconds: number;
  retention_days: Record<string, number>;
  segments: string[];
  score_format: "integer" | "duration_ms" | "decimal_1" | "decimal_2" | "decimal_3";
  created_at: string;
  tie_resolution_ms: Record<string, number>;
}

export interface BoardsOut {
  boards: BoardOut[];
}

export interface ConsumerLag {
  pending: number;
  ack_pending: number;
  oldest_unacked_seconds: number;
  parked: number;
  parked_since: string | null;
}

export interface Entry {
  rank: number;
  player_id: string;
  score: number;
  achieved_at: string;
  name: string | null;
}

export interface ErrorBody {
  code: string;
  message: string;
}

export interface ErrorOut {
  error: ErrorBody;
}

export interface FriendEntry {
  rank: number;
  player_id: string;
  score: number;
  achieved_at: string;
  name: string | null;
  position: number;
}

export interface FriendsOut {
  board_id: string;
  window: string;
  period: string;
  entries: FriendEntry[];
}

export interface HealthOut {
  status: "ok";
}

export interface HoldDecisionOut {
  board_id: string;
  run_id: string;
  decision: "approved" | "rejected";
}

export interface HoldOut {
  run_id: string;
  player_id: string;
  score: number;
  window: string;
  period: string;
  ended_at: string;
}

export interface HoldsOut {
  board_id: string;
  holds: HoldOut[];
}

export interface PeriodOut {
  period: string;
  status: "open" | "closed" | "archived";
  starts_at: string;
  ends_at: string;
}

export interface PeriodsOut {
  board_id: string;
  window: string;
  periods: PeriodOut[];
}

export interface PlayerErasedOut {
  player_id: string;
  erased: true;
}

export interface PlayerOut {
  rank: number;
  player_id: string;
  score: number;
  achieved_at: string;
  name: string | null;
  board_id: string;
  window: string;
  period: string;
  total: number;
  percentile: number;
  approximate?: boolean | null;
  error_bound?: number | null;
}

export interface ProfileIn {
  name?: string | null;
  segments?: Record<string, string> | null;
}

export interface ProfileOut {
  player_id: string;
  name: string | null;
  segments: Record<string, string>;
  banned?: boolean | null;
}

export interface RankOfOut {
  board_id: string;
  window: string;
  period: string;
  score: number;
  rank: number;
  total: number;
}

export interface ReadyOut {
  status: "ready" | "degraded" | "unavailable";
  checks: Record<string, string>;
  consumer: ConsumerLag | null;
  reasons?: string[] | null;
  recovering?: Record<string, string> | null;
  error?: ErrorBody | null;
}

export interface RunIn {
  run_id: string;
  player_id: string;
  score: number;
  ended_at?: string | null;
  segments?: Record<string, string> | null;
}

export interface SegmentValue {
  value: string;
  total: number;
}

export interface SegmentValues {
  dimension: string;
  values: SegmentValue[];
}

export interface SegmentsOut {
  board_id: string;
  window: string;
  period: string;
  segments: SegmentValues[];
}

export interface Standing {
  window: string;
  period: string;
  segment: string | null;
  status: "ranked" | "held" | "closed";
  rank?: number | null;
  score?: number | null;
  achieved_at?: string | null;
  improved: boolean;
  is_best: boolean;
}

export interface SubmitOut {
  run_id: string;
  player_id: string;
  score: number;
  standings: Standing[];
}

export interface TopOut {
  board_id: string;
  window: string;
  period: string;
  total: number;
  entries: Entry[];
}

/** Each operation (by operationId): its method, path, JSON body and 2xx answer. */
export interface Operations {
  approve: { method: "POST"; path: "/v1/boards/{board_id}/holds/{run_id}/approve"; request: never; response: HoldDecisionOut };
  around: { method: "GET"; path: "/v1/boards/{board_id}/players/{player_id}/around"; request: never; response: AroundOut };
  ban: { method: "POST"; path: "/v1/players/{player_id}/ban"; request: never; response: BanOut };
  bans: { method: "GET"; path: "/v1/bans"; request: never; response: BansOut };
  delete_board: { method: "DELETE"; path: "/v1/boards/{board_id}"; request: never; response: BoardDeletedOut };
  erase_player: { method: "DELETE"; path: "/v1/players/{player_id}"; request: never; response: PlayerErasedOut };
  events: { method: "GET"; path: "/v1/boards/{board_id}/events"; request: never; response: string };
  friends: { method: "GET"; path: "/v1/boards/{board_id}/players/{player_id}/friends"; request: never; response: FriendsOut };
  get_board: { method: "GET"; path: "/v1/boards/{board_id}"; request: never; response: BoardOut };
  get_profile: { method: "GET"; path: "/v1/players/{player_id}"; request: never; response: ProfileOut };
  healthz: { method: "GET"; path: "/healthz"; request: never; response: HealthOut };
  holds: { method: "GET"; path: "/v1/boards/{board_id}/holds"; request: never; response: HoldsOut };
  list_boards: { method: "GET"; path: "/v1/boards"; request: never; response: BoardsOut };
  metrics_text: { method: "GET"; path: "/metrics"; request: never; response: string };
  periods: { method: "GET"; path: "/v1/boards/{board_id}/periods"; request: never; response: PeriodsOut };
  player: { method: "GET"; path: "/v1/boards/{board_id}/players/{player_id}"; request: never; response: PlayerOut };
  put_board: { method: "PUT"; path: "/v1/boards/{board_id}"; request: BoardIn; response: BoardOut };
  put_profile: { method: "PUT"; path: "/v1/players/{player_id}"; request: ProfileIn; response: ProfileOut };
  rank_of: { method: "GET"; path: "/v1/boards/{board_id}/rank-of"; request: never; response: RankOfOut };
  readyz: { method: "GET"; path: "/readyz"; request: never; response: ReadyOut };
  reject: { method: "POST"; path: "/v1/boards/{board_id}/holds/{run_id}/reject"; request: never; response: HoldDecisionOut };
  segments: { method: "GET"; path: "/v1/boards/{board_id}/segments"; request: never; response: SegmentsOut };
  submit_batch: { method: "POST"; path: "/v1/boards/{board_id}/runs:batch"; request: BatchIn; response: BatchOut };
  submit_run: { method: "POST"; path: "/v1/boards/{board_id}/runs"; request: RunIn; response: SubmitOut };
  top: { method: "GET"; path: "/v1/boards/{board_id}/top"; request: never; response: TopOut };
  unban: { method: "DELETE"; path: "/v1/players/{player_id}/ban"; request: never; response: BanOut };
}
