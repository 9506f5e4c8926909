// A real `rankd serve` for the tests: embedded Redis, PostgreSQL and NATS in a temporary
// data dir, on a free loopback port; stopped (SIGTERM) and its data dir removed afterwards.
// RANKD_BIN names the rankd executable (make test-ts passes the project's .venv one).

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ADMIN = "dev-admin-key"; // the README's keys, so its example runs as written
export const SERVER = "dev-server-key";
// player tokens are signed with it (HS256: 32 bytes at least)
export const TOKEN_SECRET = "ts-test-player-token-secret-0123456789";
// webhooks are signed with it (32 bytes at least); without it a board's hooks are refused
export const WEBHOOK_SECRET = "ts-test-webhook-secret-0123456789abcdef";

export interface Service {
  base: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => done(port));
    });
  });
}

export async function startService(): Promise<Service> {
  const bin = process.env["RANKD_BIN"] ?? resolve("../../.venv/bin/rankd");
  const dataDir = await mkdtemp(join(tmpdir(), "rankd-ts-"));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    RANKD_ADMIN_KEYS: ADMIN,
    RANKD_SERVER_KEYS: SERVER,
    RANKD_PLAYER_TOKEN_SECRET: TOKEN_SECRET,
    RANKD_WEBHOOK_SECRET: WEBHOOK_SECRET,
    RANKD_LOG_LEVEL: "warning",
    RANKD_SEASON_JOB_INTERVAL_S: "0",
  };
  for (const name of ["RANKD_REDIS_URL", "RANKD_POSTGRES_URL", "RANKD_NATS_URL"]) delete env[name];
  const child: ChildProcess = spawn(
    bin,
    ["serve", "--host", "127.0.0.1", "--port", String(port), "--data-dir", dataDir],
    { env, stdio: ["ignore", "inherit", "inherit"] },
  );
  let exited: number | null = null;
  child.on("exit", (code) => { exited = code ?? -1; });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (exited !== null) throw new Error(`${bin} serve exited with ${exited} before it was ready`);
    if (Date.now() > deadline) { child.kill("SIGKILL"); throw new Error("rankd serve was not ready in 90 s"); }
    try {
      if ((await fetch(`${base}/readyz`)).status === 200) break;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    base,
    async stop() {
      if (exited === null) {
        const gone = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
        await gone;
        clearTimeout(timer);
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
