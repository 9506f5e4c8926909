// The TypeScript client against a real `rankd serve` (started here, embedded servers): every
// endpoint, errors as classes with status/code/message, the Python client's retry rules
// (through a small HTTP front that answers 503/429 before passing requests on to the real
// service), the event stream, src/wire.ts checked against the service's /openapi.json, and
// the README's TypeScript example type-checked and run as written (only the port changed).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, describe, test } from "node:test";

import ts from "typescript";

import {
  BoardNotFound,
  Forbidden,
  HoldNotFound,
  InvalidRequest,
  PlayerNotRanked,
  RankdAPIError,
  RankdClient,
  RateLimited,
  RetryPolicy,
  Unauthorized,
  Unavailable,
  type Run,
} from "../src/index.js";
import { ADMIN, SERVER, freePort, startService, type Service } from "./service.js";

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
    assert.ok(bans.bans.some((b) => b.player_id === "p-de" && typeof b.banned_at === "string"));
    assert.equal((await admin.getPlayer("p-de")).banned, true);
    await admin.unban("p-de");

    assert.deepEqual(await admin.erasePlayer("p-erase"), { player_id: "p-erase", erased: true });
    await waitFor(async () => (await server.top(boardId)).entries[0]?.player_id === "p-keep");
    assert.deepEqual(await admin.deleteBoard(boardId), { board_id: boardId, deleted: true });
    await assert.rejects(server.top(boardId), BoardNotFound);
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
  for (const file of files) {
    const run = spawnSync(process.execPath, [file.replace(/\.mts$/, ".mjs")], { encoding: "utf8", timeout: 30_000 });
    assert.equal(run.status, 0, `${file} failed:\n${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /board_not_found/); // the example's error handling ran
  }
});

// --- helpers ------------------------------------------------------------------------------

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
