// The TypeScript client against a real `rankd serve` (started here, embedded servers): every
// endpoint, errors as classes with status/code/message, the Python client's retry rules
// (through a small HTTP front that answers 503/429 before passing requests on to the real
// service), the event stream, src/wire.ts checked against the service's /openapi.json, and
// a player's own event stream, the README's TypeScript example type-checked and run as
// written (only the port changed).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";

import ts from "typescript";

import {
  BoardFull,
  BoardNotFound,
  Forbidden,
  HoldNotFound,
  InvalidRequest,
  NotBuilt,
  NotEnabled,
  NotOpen,
  PlayerNotRanked,
  RankdAPIError,
  RankdClient,
  RateLimited,
  RetryPolicy,
  Unauthorized,
  Unavailable,
  errorFor,
  type BanInfo,
  type Delivery,
  type Entry,
  type PlayerEvent,
  type Run,
} from "../src/index.js";
import { ADMIN, SERVER, TOKEN_SECRET, freePort, startService, type Service } from "./service.js";

let service: Service;
let admin: RankdClient;
let server: RankdClient;
let counter = 0;
const FAST = new RetryPolicy({ attempts: 3, firstDelayMs: 1, maxDelayMs: 2000 });

function newBoardId(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

before(async () => {
  service = await startService();
  admin = new RankdClient(service.base, { key: ADMIN });
  server = new RankdClient(service.base, { key: SERVER });
});
after(async () => {
  await service?.stop();
});

test("src/wire.ts is what the service's /openapi.json generates", async () => {
  const openapi: unknown = await (await fetch(`${service.base}/openapi.json`)).json();
  const generator = new URL("../../scripts/gen-wire.mjs", import.meta.url).href;
  const { generate } = (await import(generator)) as { generate(doc: unknown): string };
  const committed = await readFile(new URL("../../src/wire.ts", import.meta.url), "utf8");
  assert.equal(
    generate(openapi),
    committed,
    "src/wire.ts differs from the service's OpenAPI document: run `npm run gen -- " +
      "http://127.0.0.1:8000/openapi.json` against a current `rankd serve` and commit it",
  );
});

describe("every endpoint", () => {
  test("boards, runs, reads and profiles", async () => {
    const boardId = newBoardId("ts");
    const board = await admin.putBoard(boardId, { windows: ["all-time", "weekly"], segments: ["country"] });
    assert.equal(board.board_id, boardId);
    assert.deepEqual(board.windows, ["all-time", "weekly"]);
    assert.equal(board.client_submits, false);
    assert.equal((await admin.getBoard(boardId)).order, "desc");
    assert.ok((await admin.listBoards()).some((b) => b.board_id === boardId));

    const submitted = await server.submit(boardId, "r-1", "p1", 500, {
      endedAt: new Date(),
      segments: { country: "FR" },
    });
    assert.equal(submitted.run_id, "r-1");
    const global = submitted.standings.filter((s) => s.segment === null);
    assert.deepEqual(global.map((s) => [s.window, s.status, s.rank]), [
      ["all-time", "ranked", 1],
      ["weekly", "ranked", 1],
    ]);
    const runs: Run[] = [
      { run_id: "r-2", player_id: "p2", score: 700 },
      { run_id: "r-3", player_id: "p3", score: 300 },
      { run_id: "r-bad", player_id: "p4", score: -1 },
    ];
    const results = await server.submitBatch(boardId, runs);
    assert.equal(results.length, 3);
    assert.equal(results[0]?.standings?.[0]?.rank, 1);
    assert.equal(results[2]?.error?.code, "invalid_request");

    const profile = await server.putPlayer("p1", { name: "kai_runs", segments: { country: "FR" } });
    assert.deepEqual(profile, { player_id: "p1", name: "kai_runs", segments: { country: "FR" } });
    assert.equal((await server.getPlayer("p1")).name, "kai_runs");

    const top = await server.top(boardId, { n: 2 });
    assert.equal(top.total, 3);
    assert.deepEqual(top.entries.map((e) => [e.rank, e.player_id, e.score]), [
      [1, "p2", 700],
      [2, "p1", 500],
    ]);
    assert.equal((await server.top(boardId, { n: 1, offset: 2 })).entries[0]?.player_id, "p3");
    const me = await server.player(boardId, "p1", { window: "weekly" });
    assert.equal(me.rank, 2);
    assert.equal(me.name, "kai_runs");
    assert.equal(me.window, "weekly");
    const around = await server.around(boardId, "p1", { range: 1 });
    assert.deepEqual(around.entries.map((e) => e.player_id), ["p2", "p1", "p3"]);
    const friends = await server.friends(boardId, "p1", ["p3", "nobody"]);
    assert.deepEqual(friends.entries.map((e) => [e.position, e.player_id]), [
      [1, "p1"],
      [2, "p3"],
    ]);
    assert.deepEqual(friends.not_found, ["nobody"]);
    assert.equal((await server.rankOf(boardId, 600)).rank, 2);
    const fr = await server.top(boardId, { segment: "country:FR" });
    assert.deepEqual(fr.entries.map((e) => e.player_id), ["p1"]);
    const periods = await server.periods(boardId, { window: "weekly" });
    assert.equal(periods.periods[0]?.status, "open");
    assert.equal((await server.healthz()).status, "ok");
    assert.equal((await server.readyz()).status, "ready");
  });

  test("submitMany sends batches of at most 1000", async () => {
    const boardId = newBoardId("ts-many");
    await admin.putBoard(boardId);
    const sent: number[] = [];
    const counting = new RankdClient(service.base, {
      key: SERVER,
      fetch: async (input, init) => {
        if (String(input).endsWith("runs:batch")) sent.push(JSON.parse(String(init?.body)).runs.length);
        return fetch(input, init);
      },
    });
    const runs = Array.from({ length: 2500 }, (_, i): Run => ({ run_id: `m-${i}`, player_id: `p${i}`, score: i }));
    const results = await counting.submitMany(boardId, runs);
    assert.deepEqual(sent, [1000, 1000, 500]);
    assert.equal(results.length, 2500);
    assert.equal((await counting.top(boardId, { n: 1 })).total, 2500);
    await assert.rejects(counting.submitBatch(boardId, runs.slice(0, 1001)), RangeError);
  });

  test("moderation: holds, approve, reject, ban", async () => {
    const boardId = newBoardId("ts-mod");
    await admin.putBoard(boardId, { hold_top: 1 });
    await server.submit(boardId, "r-low", "p-low", 10); // the first run enters the top 1 too
    assert.equal((await admin.approve(boardId, "r-low")).decision, "approved");
    const held = await server.submit(boardId, "r-top", "p-top", 99);
    assert.equal(held.standings[0]?.status, "held");
    const holds = await admin.holds(boardId);
    assert.deepEqual(holds.map((h) => [h.run_id, h.player_id, h.score]), [["r-top", "p-top", 99]]);
    const decision = await admin.approve(boardId, "r-top");
    assert.equal(decision.decision, "approved");
    assert.equal((await server.top(boardId)).entries[0]?.player_id, "p-top");
    await assert.rejects(admin.reject(boardId, "r-top"), HoldNotFound);

    assert.deepEqual(await admin.ban("p-top"), { player_id: "p-top", banned: true });
    await waitFor(async () => (await server.top(boardId)).entries[0]?.player_id === "p-low");
    assert.equal((await admin.unban("p-top")).banned, false);
    await waitFor(async () => (await server.top(boardId)).entries[0]?.player_id === "p-top");
  });

  test("a ban's reason: sent only when given, listed by bans, replaced by banning again", async () => {
    const sent: { body: unknown; contentType: string | null }[] = [];
    const watching = new RankdClient(service.base, {
      key: ADMIN,
      fetch: async (input, init) => {
        if (String(input).endsWith("/ban") && init?.method === "POST") {
          const headers = new Headers(init.headers);
          sent.push({ body: init.body ?? null, contentType: headers.get("Content-Type") });
        }
        return fetch(input, init);
      },
    });
    const player = `p-why-${process.pid}`;
    const reason = "speed hack: 3 runs under the track record <b>ü</b>";
    const listed = async (): Promise<BanInfo | undefined> =>
      (await admin.bans({ limit: 1000 })).bans.find((b) => b.player_id === player);

    assert.deepEqual(await watching.ban(player, reason), { player_id: player, banned: true });
    const withReason = await listed();
    assert.ok(withReason);
    assert.equal(withReason.reason, reason);
    assert.equal(typeof withReason.banned_at, "string");

    await watching.ban(player); // no reason: no body, and the recorded reason is replaced
    const without = await listed();
    assert.ok(without);
    assert.equal(without.reason, null);
    assert.deepEqual(sent, [
      { body: JSON.stringify({ reason }), contentType: "application/json" },
      { body: null, contentType: null },
    ]);

    // 1..500 printable characters; a refused reason changes nothing
    for (const bad of ["", " ", "x".repeat(501), "two\nlines"]) {
      await assert.rejects(admin.ban(player, bad), InvalidRequest, JSON.stringify(bad));
    }
    assert.equal((await watching.ban(player, "x".repeat(500))).banned, true);
    assert.equal((await listed())?.reason, "x".repeat(500));
    await admin.unban(player);
    assert.equal(await listed(), undefined);
  });

  test("deleteEntry removes one entry from one period: a correction", async () => {
    const boardId = newBoardId("ts-fix");
    await admin.putBoard(boardId, { windows: ["weekly", "all-time"] });
    await server.submit(boardId, "fx-1", "fx-cheat", 999999);
    await server.submit(boardId, "fx-2", "fx-fair", 500);
    const top = async (window: string): Promise<string[]> =>
      (await server.top(boardId, { window })).entries.map((e) => e.player_id);
    assert.deepEqual(await top("weekly"), ["fx-cheat", "fx-fair"]);

    const urls: string[] = [];
    const watching = new RankdClient(service.base, {
      key: ADMIN,
      fetch: async (input, init) => {
        urls.push(String(input));
        return fetch(input, init);
      },
    });
    const current = (await server.periods(boardId, { window: "weekly" })).periods[0]?.period;
    assert.ok(current);
    const removed = await watching.deleteEntry(boardId, "fx-cheat");
    assert.deepEqual(removed, {
      board_id: boardId,
      player_id: "fx-cheat",
      window: "weekly", // none named: the board's first, its current period
      period: current,
      removed: true,
    });
    assert.ok(!urls[0]?.includes("?"), `nothing named, nothing sent: ${urls[0]}`);
    await waitFor(async () => JSON.stringify(await top("weekly")) === JSON.stringify(["fx-fair"]));
    assert.deepEqual(await top("all-time"), ["fx-cheat", "fx-fair"], "the other window keeps its entry");

    // a second removal: no such entry
    await assert.rejects(
      watching.deleteEntry(boardId, "fx-cheat", { window: "weekly", period: current }),
      (e: unknown) => e instanceof PlayerNotRanked && e.status === 404 && e.code === "player_not_ranked",
    );
    assert.ok(urls[1]?.endsWith(`/entries/fx-cheat?window=weekly&period=${current}`), urls[1]);
    await assert.rejects(admin.deleteEntry(boardId, "fx-fair", { window: "daily" }), (e: unknown) =>
      e instanceof InvalidRequest && e.status === 400 && /window/.test(e.message));
    await assert.rejects(admin.deleteEntry(boardId, "fx-fair", { window: "weekly", period: "not-a-week" }), InvalidRequest);
    await assert.rejects(server.deleteEntry(boardId, "fx-fair"), Forbidden);
    await assert.rejects(admin.deleteEntry(`${boardId}-none`, "fx-fair"), BoardNotFound);
    assert.deepEqual(await top("weekly"), ["fx-fair"], "the refused removals changed nothing");

    const allTime = await admin.deleteEntry(boardId, "fx-fair", { window: "all-time", period: "all-time" });
    assert.equal(`${allTime.window}/${allTime.period}`, "all-time/all-time");
    await waitFor(async () => JSON.stringify(await top("all-time")) === JSON.stringify(["fx-cheat"]));
    assert.deepEqual(await top("weekly"), ["fx-fair"]);
  });

  test("closePeriod closes an open period now: runs after it answer closed there", async () => {
    const boardId = newBoardId("ts-close");
    await admin.putBoard(boardId, { windows: ["weekly", "all-time"] });
    await server.submit(boardId, "cl-1", "cl-early", 700);
    const statuses = async (): Promise<Record<string, string>> =>
      Object.fromEntries((await server.periods(boardId, { window: "weekly" })).periods.map((p) => [p.period, p.status]));
    const week = Object.entries(await statuses()).find(([, status]) => status === "open")?.[0];
    assert.ok(week);

    // refused: nothing closes
    await assert.rejects(admin.closePeriod(boardId, "all-time", { window: "all-time" }), (e: unknown) =>
      e instanceof InvalidRequest && e.status === 400 && e.code === "invalid_request" && /all-time/.test(e.message));
    await assert.rejects(admin.closePeriod(boardId, week, { window: "daily" }), InvalidRequest);
    await assert.rejects(admin.closePeriod(boardId, "not-a-week", { window: "weekly" }), InvalidRequest);
    await assert.rejects(server.closePeriod(boardId, week), Forbidden);
    await assert.rejects(admin.closePeriod(`${boardId}-none`, week), BoardNotFound);
    assert.equal((await statuses())[week], "open", "the refused closes changed nothing");

    const urls: string[] = [];
    const watching = new RankdClient(service.base, {
      key: ADMIN,
      fetch: async (input, init) => {
        urls.push(String(input));
        return fetch(input, init);
      },
    });
    const closed = await watching.closePeriod(boardId, week);
    assert.deepEqual({ ...closed, closed_at: "-" }, {
      board_id: boardId,
      window: "weekly", // none named: the board's first
      period: week,
      status: "closed",
      closed_at: "-",
    });
    assert.ok(Date.parse(closed.closed_at) <= Date.now(), `closed_at has come: ${closed.closed_at}`);
    assert.ok(urls[0]?.endsWith(`/periods/${week}/close`), `nothing named, nothing sent: ${urls[0]}`);

    // in force: a run now answers closed in that window, and counts in the others
    const late = await server.submit(boardId, "cl-2", "cl-late", 900);
    assert.deepEqual(
      Object.fromEntries(late.standings.map((s) => [s.window, s.status])),
      { weekly: "closed", "all-time": "ranked" },
    );
    const weekTop = await server.top(boardId, { window: "weekly", period: week });
    assert.deepEqual(weekTop.entries.map((e) => e.player_id), ["cl-early"], "the week as it was closed");
    assert.equal((await statuses())[week], "closed");

    // again: harmless, the same time
    const again = await watching.closePeriod(boardId, week, { window: "weekly" });
    assert.equal(again.closed_at, closed.closed_at);
    assert.ok(urls[1]?.endsWith(`/periods/${week}/close?window=weekly`), urls[1]);
  });

  test("bans, erasure, segments and deleting a board", async () => {
    const boardId = newBoardId("ts-admin");
    await admin.putBoard(boardId, { segments: ["country"] });
    await server.submit(boardId, "e-1", "p-erase", 50, { segments: { country: "FR" } });
    await server.submit(boardId, "e-2", "p-keep", 40, { segments: { country: "FR" } });
    await server.submit(boardId, "e-3", "p-de", 30, { segments: { country: "DE" } });
    // a value is listed once the log consumer has applied its first run (within moments)
    const expected = [
      { dimension: "country", values: [{ value: "FR", total: 2 }, { value: "DE", total: 1 }] },
    ];
    await waitFor(async () => {
      const listed = await server.segments(boardId, { window: "all-time" });
      return JSON.stringify(listed.segments) === JSON.stringify(expected);
    });

    await admin.ban("p-de");
    const bans = await admin.bans({ limit: 1000 });
    assert.ok(bans.bans.some((b) => b.player_id === "p-de" && typeof b.banned_at === "string" && b.reason === null));
    assert.equal((await admin.getPlayer("p-de")).banned, true);
    await admin.unban("p-de");

    assert.deepEqual(await admin.erasePlayer("p-erase"), { player_id: "p-erase", erased: true });
    await waitFor(async () => (await server.top(boardId)).entries[0]?.player_id === "p-keep");
    assert.deepEqual(await admin.deleteBoard(boardId), { board_id: boardId, deleted: true });
    await assert.rejects(server.top(boardId), BoardNotFound);
  });

  test("hooks: an admin's to set, read and remove; deliveries listed (v1.3)", async () => {
    const boardId = newBoardId("ts-hooks");
    const url = "https://game.example/rankd/hooks";
    const hooked = await admin.putBoard(boardId, { windows: ["daily", "all-time"], hooks: { period_closed: url } });
    assert.deepEqual(hooked.hooks, { period_closed: url });
    assert.deepEqual((await admin.getBoard(boardId)).hooks, { period_closed: url });
    assert.deepEqual((await admin.listBoards()).find((b) => b.board_id === boardId)?.hooks, { period_closed: url });
    // a receiver's URL is the game's business: a server key's reads, or none, leave it out
    for (const reader of [server, new RankdClient(service.base)]) {
      assert.ok(!("hooks" in (await reader.getBoard(boardId))));
      const seen = (await reader.listBoards()).find((b) => b.board_id === boardId);
      assert.ok(seen && !("hooks" in seen));
    }
    await assert.rejects(admin.putBoard(boardId, { hooks: { period_closed: "ftp://game.example/x" } }), (e: unknown) =>
      e instanceof InvalidRequest && /hooks\.period_closed/.test(e.message));
    await assert.rejects(server.putBoard(boardId, { hooks: { period_closed: url } }), Forbidden);

    // no period of it has frozen (the service's season job is off here): none yet
    const urls: string[] = [];
    const watching = new RankdClient(service.base, {
      key: ADMIN,
      fetch: async (input, init) => {
        urls.push(String(input));
        return fetch(input, init);
      },
    });
    const none: Delivery[] = await watching.deliveries(boardId);
    assert.deepEqual(none, []);
    assert.deepEqual(await watching.deliveries(boardId, { limit: 1000 }), []);
    assert.ok(urls[0]?.endsWith(`/v1/boards/${boardId}/deliveries?limit=100`), urls[0]);
    assert.ok(urls[1]?.endsWith(`/v1/boards/${boardId}/deliveries?limit=1000`), urls[1]);
    await assert.rejects(admin.deliveries(boardId, { limit: 0 }), InvalidRequest);
    await assert.rejects(server.deliveries(boardId), Forbidden);
    await assert.rejects(admin.deliveries(`${boardId}-none`), BoardNotFound);

    // null removes it; the other settings stay
    const removed = await admin.putBoard(boardId, { hooks: { period_closed: null } });
    assert.deepEqual(removed.hooks, {});
    assert.deepEqual(removed.windows, ["daily", "all-time"]);
    assert.deepEqual((await admin.getBoard(boardId)).hooks, {});
    await admin.deleteBoard(boardId);
  });
});

describe("player tokens and one player across boards (v1.3)", () => {
  test("a token client reads its own view and submits its own runs", async () => {
    const serversOnly = newBoardId("ts-tok");
    const open = newBoardId("ts-tok-open");
    await admin.putBoard(serversOnly);
    assert.equal((await admin.putBoard(open, { client_submits: true, max_run_score: 1000 })).client_submits, true);
    const banned = newBoardId("tok-banned");
    const other = newBoardId("tok-other");
    const friend = newBoardId("tok-friend");
    await server.submit(serversOnly, "r-1", banned, 50);
    await server.submit(serversOnly, "r-2", other, 10);
    await admin.ban(banned);
    await waitFor(async () => (await server.top(serversOnly)).entries.length === 1);

    const issued = await server.mintToken(banned, { scope: ["submit", "read"], ttlS: 600 });
    assert.deepEqual(issued.scope, ["read", "submit"]); // in the service's order
    const left = Date.parse(issued.expires_at) - Date.now();
    assert.ok(590_000 < left && left <= 600_000, `expires in ${left} ms`);
    const [head, payload, signature] = issued.token.split(".");
    const signed = createHmac("sha256", TOKEN_SECRET).update(`${head}.${payload}`).digest("base64url");
    assert.equal(signature, signed);
    const claims = JSON.parse(Buffer.from(payload ?? "", "base64url").toString()) as Record<string, unknown>;
    assert.deepEqual([claims["sub"], claims["scope"]], [banned, "read submit"]);

    const runs: string[] = [];
    const game = new RankdClient(service.base, {
      key: issued.token,
      retry: FAST,
      fetch: async (input, init) => {
        if (String(input).endsWith("/runs")) runs.push(String(input));
        return fetch(input, init);
      },
    });
    // shadow-banned: the player still sees themselves, where they would stand
    assert.deepEqual((await game.top(serversOnly)).entries.map((e) => e.player_id), [banned, other]);
    assert.equal((await game.player(serversOnly, banned)).rank, 1);
    assert.equal((await game.top(serversOnly, { viewer: banned })).total, 2);
    assert.deepEqual((await game.around(serversOnly, banned, { range: 1 })).entries.map((e) => e.player_id), [
      banned,
      other,
    ]);
    const friends = await game.friends(serversOnly, banned, [other, friend]);
    assert.deepEqual(friends.entries.map((e) => e.player_id), [banned, other]);
    assert.deepEqual(friends.not_found, [friend]);
    await assert.rejects(server.player(serversOnly, banned), PlayerNotRanked); // the public view
    await assert.rejects(game.top(serversOnly, { viewer: other }), Forbidden);

    // its own runs, on a board that takes client runs; a refusal is not retried
    const accepted = await game.submit(open, "c-1", banned, 40);
    assert.equal(accepted.standings[0]?.rank, 1);
    assert.equal(runs.length, 1);
    const refused = await game.submit(serversOnly, "c-2", banned, 60).catch((e: unknown) => e);
    assert.ok(refused instanceof Forbidden);
    assert.equal(refused.status, 403);
    assert.match(refused.message, /client_submits/);
    assert.equal(runs.length, 2);
    await assert.rejects(game.submit(open, "c-3", other, 60), Forbidden);
    await assert.rejects(game.submitBatch(open, [{ run_id: "c-4", player_id: banned, score: 1 }]), Forbidden);
    // key routes answer a token 403
    await assert.rejects(game.putBoard(open, { grace_seconds: 1 }), Forbidden);
    await assert.rejects(game.mintToken(banned), Forbidden);
    await assert.rejects(game.getPlayer(banned), Forbidden);
    await assert.rejects(game.ban(other), Forbidden);
    assert.deepEqual((await server.top(serversOnly)).entries.map((e) => e.player_id), [other]);

    // the default scope is read only; a submit-only token reads nothing
    const readOnly = await server.mintToken(friend);
    assert.deepEqual(readOnly.scope, ["read"]);
    const reader = new RankdClient(service.base, { key: readOnly.token });
    assert.equal((await reader.top(open)).total, 0); // the banned player's run: not in others' view
    await assert.rejects(reader.submit(open, "f-1", friend, 1), (e: unknown) => e instanceof Forbidden && /submit/.test(e.message));
    const submitOnly = new RankdClient(service.base, { key: (await server.mintToken(friend, { scope: ["submit"] })).token });
    await assert.rejects(submitOnly.top(open), Forbidden);
    await assert.rejects(new RankdClient(service.base, { key: "not-a-key" }).top(open), Unauthorized);
    await assert.rejects(server.mintToken(friend, { ttlS: 10 }), InvalidRequest);
  });

  test("a player's own runs are rate-limited: 429 with Retry-After", async () => {
    const boardId = newBoardId("ts-tok-rate");
    await admin.putBoard(boardId, { client_submits: true });
    const player = newBoardId("tok-rate");
    const token = (await server.mintToken(player, { scope: ["submit"] })).token;
    // burst 10 at 1 run/s; a policy that waits at most 10 ms leaves a 1 s Retry-After to us
    const game = new RankdClient(service.base, {
      key: token,
      retry: new RetryPolicy({ attempts: 3, firstDelayMs: 1, maxDelayMs: 10 }),
    });
    let failure: unknown = null;
    for (let i = 0; i < 15 && failure === null; i++) {
      failure = await game.submit(boardId, `r-${i}`, player, i).then(() => null, (e: unknown) => e);
    }
    assert.ok(failure instanceof RateLimited, String(failure));
    assert.equal(failure.status, 429);
    assert.ok(failure.retryAfter !== null && failure.retryAfter >= 1);
  });

  test("top pages follow cursors", async () => {
    const boardId = newBoardId("ts-cursor");
    await admin.putBoard(boardId);
    for (let i = 0; i < 7; i++) await server.submit(boardId, `c${i}`, `cp${i}`, i);
    const first = await server.top(boardId, { n: 3 });
    assert.ok(first.next_cursor);
    const second = await server.top(boardId, { n: 3, cursor: first.next_cursor });
    const last = await server.top(boardId, { n: 3, cursor: second.next_cursor ?? undefined });
    assert.deepEqual(
      [first, second, last].map((p) => p.entries.map((e) => e.rank)),
      [[1, 2, 3], [4, 5, 6], [7]],
    );
    assert.equal(last.next_cursor, null);
  });

  test("standings: one player across boards", async () => {
    const weeklyFirst = newBoardId("ts-st-weekly");
    const plain = newBoardId("ts-st-plain");
    const empty = newBoardId("ts-st-empty");
    const missing = newBoardId("ts-st-missing");
    await admin.putBoard(weeklyFirst, { windows: ["weekly", "all-time"], order: "asc" });
    await admin.putBoard(plain);
    await admin.putBoard(empty);
    const player = newBoardId("st-player");
    const rival = newBoardId("st-rival");
    for (const boardId of [weeklyFirst, plain]) {
      await server.submit(boardId, `${boardId}-1`, player, 70);
      await server.submit(boardId, `${boardId}-2`, rival, 50);
    }
    const found = await server.standings(player, [weeklyFirst, plain, empty, missing]);
    assert.equal(found.player_id, player);
    const byBoard = new Map(found.standings.map((s) => [s.board_id, s]));
    assert.deepEqual([...byBoard.keys()].sort(), [plain, weeklyFirst].sort());
    const weekly = byBoard.get(weeklyFirst);
    assert.deepEqual([weekly?.window, weekly?.rank, weekly?.total], ["weekly", 2, 2]);
    const top = byBoard.get(plain);
    assert.deepEqual([top?.window, top?.rank, top?.score], ["all-time", 1, 70]);
    assert.deepEqual(found.unknown_boards, [missing]);
    const allTime = await server.standings(player, [weeklyFirst, plain], { window: "all-time" });
    assert.deepEqual([...new Set(allTime.standings.map((s) => s.window))], ["all-time"]);
    const onlyWeekly = await server.standings(player, [weeklyFirst, plain], { window: "weekly" });
    assert.deepEqual(onlyWeekly.standings.map((s) => s.board_id), [weeklyFirst]);
    await assert.rejects(server.standings(player, []), InvalidRequest);

    // banned: gone from the public answer, still in the player's own (token or viewer=)
    await admin.ban(player);
    await waitFor(async () => (await server.standings(player, [plain])).standings.length === 0);
    assert.equal((await server.standings(player, [plain], { viewer: player })).standings.length, 1);
    const game = new RankdClient(service.base, { key: (await server.mintToken(player)).token });
    assert.equal((await game.standings(player, [weeklyFirst, plain])).standings.length, 2);
    await assert.rejects(new RankdClient(service.base).standings(player, [plain], { viewer: player }), Unauthorized);
  });
});

describe("leagues: a player's cohort, a cohort by id, the history (v1.3)", () => {
  test("league, cohort, leagues; zones; PlayerNotRanked and InvalidRequest", async () => {
    const boardId = newBoardId("ts-league");
    const league = { window: "weekly" as const, tiers: ["bronze", "silver"], cohort_size: 5, promote: 1, relegate: 1 };
    await admin.putBoard(boardId, { windows: ["weekly"], league });
    assert.deepEqual((await server.getBoard(boardId)).league, league);
    const players = Array.from({ length: 7 }, (_, i) => newBoardId(`ts-lg-${i}`));
    for (const [i, player] of players.entries()) await server.submit(boardId, `r${i}`, player, 10 * i);
    const mine = await server.league(boardId, players[6]!);
    assert.deepEqual([mine.tier, mine.cohort], ["bronze", "bronze-2"]);
    assert.deepEqual(mine.entries.map((e) => [e.rank, e.player_id, e.zone]), [
      [1, players[6], "promote"],
      [2, players[5], "stay"],
    ]);
    const first = await server.cohort(boardId, "bronze-1");
    assert.deepEqual(first.entries.map((e) => e.player_id), players.slice(0, 5).reverse());
    assert.deepEqual(await server.leagues(players[0]!, boardId), {
      board_id: boardId,
      player_id: players[0],
      tier: "bronze",
      history: [],
    });
    await assert.rejects(server.league(boardId, newBoardId("ts-lg-none")), PlayerNotRanked);
    await assert.rejects(server.cohort(boardId, "gold-1"), InvalidRequest);
  });
});

describe("tournaments: joining a scheduled board's occurrence (v1.3)", () => {
  test("join: harmless again, a token joins its own player, BoardFull, NotOpen, not_joined", async () => {
    const boardId = newBoardId("ts-join");
    // a daily occurrence that began a minute ago and lasts two hours
    const start = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000);
    const schedule = { starts_at: start.toISOString().replace(".000Z", "Z"), every: "P1D", duration: "PT2H" };
    await admin.putBoard(boardId, { windows: ["all-time"], schedule, join_required: true, max_entrants: 2 });
    const board = await server.getBoard(boardId);
    assert.deepEqual([board.join_required, board.max_entrants, board.max_attempts], [true, 2, 0]);
    const current = board.current_period?.period;
    const upcoming = board.next_period?.period;
    assert.ok(current && upcoming, "an occurrence open now, and the next one");
    const [ann, bob, cat] = [newBoardId("join-ann"), newBoardId("join-bob"), newBoardId("join-cat")];

    const urls: string[] = [];
    const counting = new RankdClient(service.base, {
      key: SERVER,
      retry: FAST,
      fetch: async (input, init) => {
        urls.push(String(input));
        return fetch(input, init);
      },
    });
    const joined = await counting.join(boardId, ann);
    assert.deepEqual(joined, { player_id: ann, period: current, joined: true });
    assert.deepEqual(await counting.join(boardId, ann), joined); // again: harmless, no second place
    assert.ok(urls[0]?.endsWith(`/v1/boards/${boardId}/players/${ann}/join`), `no period, none sent: ${urls[0]}`);

    // a player token with the join scope joins its own player: the second place
    const game = new RankdClient(service.base, { key: (await server.mintToken(bob, { scope: ["join"] })).token });
    await assert.rejects(game.join(boardId, cat), Forbidden); // another player
    assert.equal((await game.join(boardId, bob)).player_id, bob);
    const reader = new RankdClient(service.base, { key: (await server.mintToken(cat)).token });
    await assert.rejects(reader.join(boardId, cat), (e: unknown) => e instanceof Forbidden && /join/.test(e.message));

    const full = await counting.join(boardId, cat).catch((e: unknown) => e);
    assert.ok(full instanceof BoardFull, String(full));
    assert.ok(full instanceof RankdAPIError);
    assert.deepEqual([full.status, full.code], [409, "board_full"]);
    assert.equal(urls.length, 3, "a 409 is not retried");
    // each occurrence afresh: the next one, named, has its places
    assert.deepEqual(await counting.join(boardId, cat, { period: upcoming }), { player_id: cat, period: upcoming, joined: true });
    assert.ok(urls[3]?.endsWith(`/join?period=${upcoming}`), urls[3]);

    const plain = newBoardId("ts-join-plain");
    await admin.putBoard(plain); // no schedule: nothing to join
    const closed = await counting.join(plain, ann).catch((e: unknown) => e);
    assert.ok(closed instanceof NotOpen, String(closed));
    assert.deepEqual([closed.status, closed.code], [409, "not_open"]);
    await assert.rejects(counting.join(boardId, ann, { period: "20200101T0000Z" }), NotOpen); // not an occurrence
    assert.equal(urls.length, 6, "no 409 was retried");
    await assert.rejects(counting.join(`${boardId}-none`, ann), BoardNotFound);

    // only the joined players' runs count in the occurrence; the others' status says why
    const inside = await server.submit(boardId, "j-1", ann, 40);
    const outside = await server.submit(boardId, "j-2", cat, 90);
    assert.deepEqual(Object.fromEntries(outside.standings.map((s) => [s.window, s.status])), {
      "all-time": "ranked",
      scheduled: "not_joined",
    });
    const counted = inside.standings.find((s) => s.window === "scheduled");
    assert.deepEqual([counted?.status, counted?.period, counted?.rank], ["ranked", current, 1]);
    const top = await server.top(boardId, { window: "scheduled" });
    assert.deepEqual(top.entries.map((e) => e.player_id), [ann]);
  });
});

describe("entry metadata (v1.3)", () => {
  test("submitted with a run, read back with include: metadata, absent without", async () => {
    const boardId = newBoardId("ts-meta");
    await admin.putBoard(boardId);
    const ann = newBoardId("md-ann");
    const bob = newBoardId("md-bob");
    const cat = newBoardId("md-cat");
    const car = { car: "red-7", laps: [61.2, 60.9], nested: { ok: true, none: null } };
    const urls: string[] = [];
    const watching = new RankdClient(service.base, {
      key: SERVER,
      fetch: async (input, init) => {
        urls.push(String(input));
        return fetch(input, init);
      },
    });
    const sent = await watching.submit(boardId, "m-1", ann, 50, { metadata: car });
    assert.equal(sent.standings[0]?.rank, 1);
    await watching.submit(boardId, "m-2", bob, 40); // none
    const runs: Run[] = [
      { run_id: "m-3", player_id: cat, score: 30, metadata: { car: "blue" } },
      { run_id: "m-4", player_id: cat, score: 99, metadata: { k: "x".repeat(1100) } },
    ];
    const batch = await watching.submitBatch(boardId, runs);
    assert.ok(batch[0]?.standings);
    assert.equal(batch[1]?.error?.code, "invalid_request");
    const expected = { [ann]: car, [bob]: null, [cat]: { car: "blue" } };
    const byPlayer = (entries: readonly Entry[]) => Object.fromEntries(entries.map((e) => [e.player_id, e.metadata]));

    const top = await watching.top(boardId, { include: "metadata" });
    assert.deepEqual(byPlayer(top.entries), expected);
    assert.ok(urls.at(-1)?.includes("include=metadata"), urls.at(-1));
    assert.deepEqual(byPlayer((await watching.around(boardId, bob, { range: 1, include: "metadata" })).entries), expected);
    assert.deepEqual(byPlayer((await watching.friends(boardId, ann, [bob, cat], { include: "metadata" })).entries), expected);
    const me = await watching.player(boardId, ann, { include: "metadata" });
    assert.deepEqual([me.rank, me.metadata], [1, car]);
    assert.equal((await watching.player(boardId, bob, { include: "metadata" })).metadata, null);
    const first = await watching.top(boardId, { n: 1, include: "metadata" });
    const rest = await watching.top(boardId, { n: 2, cursor: first.next_cursor ?? undefined, include: "metadata" });
    assert.deepEqual(byPlayer(rest.entries), { [bob]: null, [cat]: { car: "blue" } });

    // not asked: no "metadata" member, and no include= sent
    urls.length = 0;
    const plain = [
      ...(await watching.top(boardId)).entries,
      ...(await watching.around(boardId, bob)).entries,
      ...(await watching.friends(boardId, ann, [bob, cat])).entries,
      await watching.player(boardId, ann),
    ];
    assert.equal(plain.length, 10);
    assert.ok(plain.every((e) => !("metadata" in e)));
    assert.ok(urls.every((url) => !url.includes("include")), urls.join(" "));
  });

  test("bad metadata: InvalidRequest (400), not retried, nothing stored", async () => {
    const boardId = newBoardId("ts-meta-bad");
    await admin.putBoard(boardId);
    const player = newBoardId("md-bad");
    let calls = 0;
    const counting = new RankdClient(service.base, {
      key: SERVER,
      retry: FAST,
      fetch: async (input, init) => {
        calls += 1;
        return fetch(input, init);
      },
    });
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i]));
    const bad: unknown[] = [tooMany, { blob: "x".repeat(1100) }, ["red"], "red"];
    for (const [n, metadata] of bad.entries()) {
      await assert.rejects(
        counting.submit(boardId, `b-${n}`, player, 5, { metadata: metadata as Record<string, unknown> }),
        (e: unknown) =>
          e instanceof InvalidRequest && e.status === 400 && e.code === "invalid_request" && /metadata/.test(e.message),
      );
    }
    assert.equal(calls, bad.length, "a 400 is not retried");
    await assert.rejects(counting.player(boardId, player), PlayerNotRanked);
    // the bounds themselves are taken: 16 keys, 1,024 bytes encoded
    const most = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${String(i).padStart(2, "0")}`, "v"]));
    const exact = { blob: "x".repeat(1024 - '{"blob":""}'.length) };
    await counting.submit(boardId, "ok-1", player, 5, { metadata: most });
    await counting.submit(boardId, "ok-2", newBoardId("md-exact"), 4, { metadata: exact });
    const top = await counting.top(boardId, { include: "metadata" });
    assert.deepEqual(top.entries.map((e) => e.metadata), [most, exact]);
  });
});

describe("errors", () => {
  test("are classes with status, code and message", async () => {
    const failure = await server.top("no-such-board").catch((e: unknown) => e);
    assert.ok(failure instanceof BoardNotFound);
    assert.ok(failure instanceof RankdAPIError);
    assert.equal(failure.status, 404);
    assert.equal(failure.code, "board_not_found");
    assert.match(failure.message, /no-such-board/);

    const boardId = newBoardId("ts-err");
    await admin.putBoard(boardId);
    const anonymous = new RankdClient(service.base);
    await assert.rejects(anonymous.submit(boardId, "r", "p", 1), (e: unknown) => e instanceof Unauthorized && e.status === 401);
    await assert.rejects(server.putBoard(boardId, {}), (e: unknown) => e instanceof Forbidden && e.status === 403);
    await assert.rejects(server.submit(boardId, "r", "p", -5), (e: unknown) =>
      e instanceof InvalidRequest && e.status === 400 && /score/.test(e.message));
    await assert.rejects(server.player(boardId, "nobody"), PlayerNotRanked);
    await assert.rejects(server.top(boardId, { window: "hourly" }), InvalidRequest);
  });

  test("the v1.3 codes: not_enabled and not_implemented (501)", () => {
    const off = errorFor(501, { error: { code: "not_enabled", message: "set RANKD_PLAYER_TOKEN_SECRET" } });
    assert.ok(off instanceof NotEnabled && off.status === 501 && off.code === "not_enabled");
    const later = errorFor(501, { error: { code: "not_implemented", message: "not built yet" } });
    assert.ok(later instanceof NotBuilt && later.code === "not_implemented");
    assert.equal(errorFor(501, null).constructor, RankdAPIError); // no body: the base class
    assert.ok(errorFor(403, { error: { code: "forbidden", message: "" } }) instanceof Forbidden);
    const full = errorFor(409, { error: { code: "board_full", message: "100 entrants" } });
    assert.ok(full instanceof BoardFull && full.status === 409 && full.code === "board_full");
    assert.ok(errorFor(409, { error: { code: "not_open", message: "" } }) instanceof NotOpen);
  });
});

describe("retries, as the Python client's", () => {
  test("a submit is retried on 503 with bounded backoff; reads are not", async () => {
    const boardId = newBoardId("ts-retry");
    await admin.putBoard(boardId, { policy: "sum" });
    await withFront("/runs", 2, 503, "unavailable", null, async (front, base) => {
      const client = new RankdClient(base, { key: SERVER, retry: FAST });
      const result = await client.submit(boardId, "r-1", "p1", 5);
      assert.equal(front.seen, 3); // two 503s, then the real service
      assert.equal(result.standings[0]?.score, 5);
      await client.submit(boardId, "r-1", "p1", 5); // a resent run counts once
      assert.equal((await client.player(boardId, "p1")).score, 5);
    });
    await withFront("/runs", 100, 503, "unavailable", null, async (front, base) => {
      const client = new RankdClient(base, { key: SERVER, retry: FAST });
      await assert.rejects(client.submit(boardId, "r-2", "p1", 5), Unavailable);
      assert.equal(front.seen, FAST.attempts);
    });
    await withFront("/top", 1, 503, "unavailable", null, async (front, base) => {
      const client = new RankdClient(base, { key: SERVER, retry: FAST });
      await assert.rejects(client.top(boardId), Unavailable); // reads are the caller's to retry
      assert.equal(front.seen, 1);
    });
  });

  test("a 403 or a 501 is never retried, not even for a submit", async () => {
    const boardId = newBoardId("ts-no-retry");
    await admin.putBoard(boardId);
    const cases: Array<[number, string, new (...args: never[]) => RankdAPIError]> = [
      [403, "forbidden", Forbidden],
      [501, "not_implemented", NotBuilt],
      [501, "not_enabled", NotEnabled],
    ];
    for (const [status, code, ErrorType] of cases) {
      await withFront("/runs", 1, status, code, null, async (front, base) => {
        const client = new RankdClient(base, { key: SERVER, retry: FAST });
        const failure = await client.submit(boardId, `r-${code}`, "p1", 5).catch((e: unknown) => e);
        assert.ok(failure instanceof ErrorType, String(failure));
        assert.equal(failure.status, status);
        assert.equal(front.seen, 1);
      });
    }
  });

  test("429: a short Retry-After is waited for, a long one is the caller's", async () => {
    const boardId = newBoardId("ts-429");
    await admin.putBoard(boardId);
    await withFront("/runs", 1, 429, "rate_limited", "30", async (front, base) => {
      const client = new RankdClient(base, { key: SERVER, retry: FAST });
      const failure = await client.submit(boardId, "r-1", "p1", 5).catch((e: unknown) => e);
      assert.ok(failure instanceof RateLimited);
      assert.equal(failure.retryAfter, 30); // longer than maxDelayMs: not waited for
      assert.equal(front.seen, 1);
    });
    await withFront("/runs", 1, 429, "rate_limited", "1", async (front, base) => {
      const client = new RankdClient(base, { key: SERVER, retry: FAST });
      const started = Date.now();
      await client.submit(boardId, "r-2", "p1", 6);
      assert.ok(Date.now() - started >= 1000, "waited for Retry-After");
      assert.equal(front.seen, 2);
    });
  });

  test("a lost connection is retried for submits, then thrown", async () => {
    let calls = 0;
    const port = await freePort(); // nothing listens there
    const client = new RankdClient(`http://127.0.0.1:${port}`, {
      key: SERVER,
      retry: FAST,
      fetch: (input, init) => { calls += 1; return fetch(input, init); },
    });
    await assert.rejects(client.submit("b", "r", "p", 1), TypeError);
    assert.equal(calls, FAST.attempts);
    calls = 0;
    await assert.rejects(client.top("b"), TypeError);
    assert.equal(calls, 1);
  });

  test("backoff grows and stays bounded", () => {
    const policy = new RetryPolicy({ attempts: 10, firstDelayMs: 100, maxDelayMs: 1000 });
    for (let retry = 0; retry < 10; retry++) {
      const ceiling = Math.min(1000, 100 * 2 ** retry);
      const wait = policy.delay(retry);
      assert.ok(ceiling / 2 <= wait && wait <= ceiling, `${retry}: ${wait}`);
    }
    assert.equal(policy.delay(0, 0.5), 500);
    assert.throws(() => new RetryPolicy({ attempts: 0 }), RangeError);
  });
});

test("events: the top list on connect and after each change", async () => {
  const boardId = newBoardId("ts-live");
  await admin.putBoard(boardId);
  await server.submit(boardId, "r-1", "p1", 10);
  const stop = new AbortController();
  const stream = server.events(boardId, { n: 5, signal: stop.signal });
  const first = await stream.next();
  assert.equal(first.done, false);
  assert.deepEqual(first.value?.entries.map((e) => e.player_id), ["p1"]);
  await server.submit(boardId, "r-2", "p2", 20);
  let latest = first.value;
  while (latest?.entries.length !== 2) latest = (await stream.next()).value;
  assert.deepEqual(latest.entries.map((e) => [e.rank, e.player_id]), [
    [1, "p2"],
    [2, "p1"],
  ]);
  stop.abort();
  await assert.rejects(stream.next(), { name: "AbortError" });
  await assert.rejects(server.events("no-such-board").next(), BoardNotFound);
});

test("playerEvents: rank changes, a friend passing, a token following its own player", { timeout: 60_000 }, async () => {
  const boardId = newBoardId("ts-pe");
  await admin.putBoard(boardId);
  const me = newBoardId("pe-me");
  const pal = newBoardId("pe-pal");
  const rival = newBoardId("pe-rival");
  await server.submit(boardId, "r-1", me, 50);
  await server.submit(boardId, "r-2", pal, 10);
  const { period } = await server.player(boardId, me);
  const standing = (rank: number, previous: number | null): PlayerEvent => ({
    kind: "standing",
    board_id: boardId,
    window: "all-time",
    period,
    rank,
    previous_rank: previous,
  });

  const stream = server.playerEvents(me, [boardId], { friends: [pal, newBoardId("pe-stranger")] });
  assert.deepEqual(await nextOf(stream), standing(1, null)); // on connect
  await server.submit(boardId, "r-3", rival, 70); // no listed friend: no passed event
  assert.deepEqual(await nextOf(stream), standing(2, 1));
  await server.submit(boardId, "r-4", pal, 90); // a friend overtakes
  assert.deepEqual([await nextOf(stream), await nextOf(stream)], [
    standing(3, 2),
    { kind: "passed", board_id: boardId, window: "all-time", period, player_id: pal, rank: 1, your_rank: 3 },
  ]);
  await stream.return(undefined);
  assert.equal((await stream.next()).done, true);

  await assert.rejects(server.playerEvents(me, [boardId, "no-such-board"]).next(), BoardNotFound);
  await assert.rejects(server.playerEvents(me, []).next(), InvalidRequest);
  await assert.rejects(new RankdClient(service.base).playerEvents(me, [boardId]).next(), Unauthorized);

  // a token client follows its own player, and no one else (ending the stream with a signal)
  const game = new RankdClient(service.base, { key: (await server.mintToken(me)).token });
  const stop = new AbortController();
  const own = game.playerEvents(me, [boardId], { signal: stop.signal });
  assert.deepEqual(await nextOf(own), standing(3, null));
  stop.abort();
  await assert.rejects(own.next(), { name: "AbortError" });
  const refused = await game.playerEvents(pal, [boardId]).next().catch((e: unknown) => e);
  assert.ok(refused instanceof Forbidden, String(refused));
  assert.deepEqual([refused.status, refused.code], [403, "forbidden"]);
});

// --- the README's example ---------------------------------------------------------------

const PACKAGE = new URL("../../", import.meta.url);
// inside the package, so `import ... from "@rankd/client"` resolves to this package itself
const SNIPPETS = new URL(".snippets/", PACKAGE);

after(async () => {
  await rm(SNIPPETS, { recursive: true, force: true });
});

async function examples(): Promise<string[]> {
  const readme = await readFile(new URL("README.md", PACKAGE), "utf8");
  return [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "");
}

test("the README's TypeScript examples type-check and run", async () => {
  const blocks = await examples();
  assert.ok(blocks.length > 0, "the README has a ```ts example");
  await mkdir(SNIPPETS, { recursive: true });
  const port = new URL(service.base).port;
  const files: string[] = [];
  for (const [i, code] of blocks.entries()) {
    const file = new URL(`readme-${i}.mts`, SNIPPETS);
    await writeFile(file, `export {};\n${code.replaceAll("127.0.0.1:8000", `127.0.0.1:${port}`)}`);
    files.push(file.pathname);
  }
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    outDir: SNIPPETS.pathname,
    rootDir: SNIPPETS.pathname,
    types: ["node"],
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts", "lib.dom.iterable.d.ts"],
  };
  const program = ts.createProgram(files, options);
  const emitted = program.emit();
  const problems = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) =>
    ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  );
  assert.deepEqual(problems, [], "the README's example does not type-check");
  for (const [i, file] of files.entries()) {
    const run = spawnSync(process.execPath, [file.replace(/\.mts$/, ".mjs")], { encoding: "utf8", timeout: 30_000 });
    assert.equal(run.status, 0, `${file} failed:\n${run.stdout}\n${run.stderr}`);
    // each example's error handling ran
    if (blocks[i]?.includes("BoardNotFound")) assert.match(run.stdout, /board_not_found/);
    if (blocks[i]?.includes("Forbidden")) assert.match(run.stdout, /403 forbidden/);
  }
});

// --- helpers ------------------------------------------------------------------------------

/** The next value of a stream that does not end, within `withinMs`. */
async function nextOf<T>(stream: AsyncGenerator<T>, withinMs = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(`no event within ${withinMs} ms`)), withinMs);
  });
  try {
    const next = await Promise.race([stream.next(), late]);
    assert.equal(next.done, false, "the stream ended");
    return next.value as T;
  } finally {
    clearTimeout(timer);
  }
}

async function waitFor(check: () => Promise<boolean>, withinMs = 5000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Front {
  seen: number;
}

/** An HTTP front for the real service: answers the first `failures` requests whose path
 * ends with `suffix` itself (`status`, the contract's error body), passes the rest on. */
async function withFront(
  suffix: string,
  failures: number,
  status: number,
  code: string,
  retryAfter: string | null,
  body: (front: Front, base: string) => Promise<void>,
): Promise<void> {
  const front: Front = { seen: 0 };
  const http: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    void (async () => {
      const path = (request.url ?? "/").split("?")[0] ?? "/";
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      if (path.endsWith(suffix)) {
        front.seen += 1;
        if (front.seen <= failures) {
          const headers: Record<string, string> = { "content-type": "application/json" };
          if (retryAfter !== null) headers["retry-after"] = retryAfter;
          response.writeHead(status, headers);
          response.end(JSON.stringify({ error: { code, message: "try again" } }));
          return;
        }
      }
      const headers: Record<string, string> = {};
      for (const name of ["authorization", "content-type"]) {
        const value = request.headers[name];
        if (typeof value === "string") headers[name] = value;
      }
      const init: RequestInit = { method: request.method ?? "GET", headers };
      if (chunks.length) init.body = Buffer.concat(chunks);
      const answer = await fetch(`${service.base}${request.url ?? "/"}`, init);
      response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "" });
      response.end(Buffer.from(await answer.arrayBuffer()));
    })().catch((error: unknown) => {
      response.writeHead(502);
      response.end(String(error));
    });
  });
  const port = await freePort();
  await new Promise<void>((done) => http.listen(port, "127.0.0.1", done));
  try {
    await body(front, `http://127.0.0.1:${port}`);
  } finally {
    http.closeAllConnections();
    await new Promise((done) => http.close(done));
  }
}
