// The client as a package, as a consumer gets it: `npm pack` on a checkout with no dist/
// (its `prepare` script builds dist/), the tarball holding only the built ES modules, their
// .d.ts, package.json and README.md; installed into an empty project (offline: it has no
// runtime dependencies) without running any of its scripts; then a script there,
// `import { ... } from "@rankd/client"`, type-checked against the installed .d.ts and run
// against a real `rankd serve` (submit, top).

import assert from "node:assert/strict";
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";

import ts from "typescript";

import { ADMIN, SERVER, startService, type Service } from "./service.js";

const PACKAGE = fileURLToPath(new URL("../../", import.meta.url));
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";

let service: Service;
let scratch: string;

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), "rankd-package-"));
  service = await startService();
});
after(async () => {
  await service?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

function npm(args: string[], cwd: string): SpawnSyncReturns<string> {
  const run = spawnSync(NPM, args, { cwd, encoding: "utf8", timeout: 120_000 });
  assert.equal(run.status, 0, `npm ${args.join(" ")} failed in ${cwd}:\n${run.stdout}\n${run.stderr}`);
  return run;
}

interface Packed {
  filename: string;
  files: { path: string }[];
}

/** `npm pack` of a checkout of the package: its sources and configuration, no dist/. */
async function pack(): Promise<string> {
  const checkout = join(scratch, "checkout");
  await mkdir(checkout);
  for (const name of ["package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json", "README.md", "src"]) {
    await cp(join(PACKAGE, name), join(checkout, name), { recursive: true });
  }
  // the dev dependencies `prepare` builds with (typescript), as `npm ci` installed them
  await symlink(join(PACKAGE, "node_modules"), join(checkout, "node_modules"), "dir");
  const run = npm(["pack", "--json", "--pack-destination", scratch], checkout);
  assert.match(run.stderr, /> @rankd\/client@[^ ]+ prepare\n/, "npm pack ran `prepare`");
  const [packed] = JSON.parse(run.stdout) as Packed[];
  assert.ok(packed);
  const files = packed.files.map((f) => f.path).sort();
  const unexpected = files.filter(
    (path) => !["package.json", "README.md"].includes(path) && !/^dist\/[a-z]+\.(js|d\.ts)$/.test(path),
  );
  assert.deepEqual(unexpected, [], "the tarball holds only what a consumer needs");
  for (const path of ["dist/index.js", "dist/index.d.ts", "dist/client.js", "dist/wire.d.ts"]) {
    assert.ok(files.includes(path), `the tarball has ${path}: ${files.join(", ")}`);
  }
  return join(scratch, packed.filename);
}

test("npm pack makes a tarball an empty project installs and imports from", async () => {
  const tarball = await pack();

  const app = join(scratch, "app");
  await mkdir(app);
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "a-game-server", private: true, type: "module" }));
  // --offline: nothing but the tarball is needed; the package's `prepare` does not run on
  // the install of a tarball (no typescript there to run it with: dist/ comes built)
  npm(["install", tarball, "--no-audit", "--no-fund", "--offline"], app);
  const installed = join(app, "node_modules", "@rankd", "client");
  const manifest = JSON.parse(await readFile(join(installed, "package.json"), "utf8")) as Record<string, unknown>;
  assert.equal(manifest["private"], undefined);
  assert.equal(manifest["type"], "module");
  assert.deepEqual(manifest["engines"], { node: ">=18" });
  assert.equal(manifest["dependencies"], undefined, "no runtime dependencies");

  const board = `pkg-${process.pid}-${Date.now().toString(36)}`;
  const source = `import { BoardNotFound, RankdClient, type Top } from "@rankd/client";

const admin = new RankdClient("${service.base}", { key: "${ADMIN}" });
const rankd = new RankdClient("${service.base}", { key: "${SERVER}" });
await admin.putBoard("${board}", { windows: ["all-time"] });
await rankd.submit("${board}", "r-1", "p-ace", 900);
const result = await rankd.submit("${board}", "r-2", "p-bob", 300);
const top: Top = await rankd.top("${board}", { n: 10 });
let missing = "";
try {
  await rankd.top("no-such-board");
} catch (e) {
  if (e instanceof BoardNotFound) missing = e.code;
}
console.log(JSON.stringify({
  rank: result.standings[0]?.rank,
  top: top.entries.map((e) => [e.rank, e.player_id, e.score]),
  total: top.total,
  missing,
}));
`;
  await writeFile(join(app, "consumer.mts"), source);
  // type-checked as a consumer's TypeScript would: the installed package's .d.ts, found
  // through its "exports", with no Node types and no access to the client's sources
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    types: [],
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts", "lib.dom.iterable.d.ts"],
    outDir: app,
    rootDir: app,
  };
  const program = ts.createProgram([join(app, "consumer.mts")], options);
  const resolved = program.getSourceFiles().map((f) => f.fileName).filter((f) => f.includes("@rankd/client"));
  assert.ok(resolved.length > 0 && resolved.every((f) => f.startsWith(installed)), resolved.join(", "));
  const emitted = program.emit();
  const problems = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics].map((d) =>
    ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  );
  assert.deepEqual(problems, [], "the consumer does not type-check against the installed package");

  const run = spawnSync(process.execPath, ["consumer.mjs"], { cwd: app, encoding: "utf8", timeout: 30_000 });
  assert.equal(run.status, 0, `consumer.mjs failed:\n${run.stdout}\n${run.stderr}`);
  assert.deepEqual(JSON.parse(run.stdout), {
    rank: 2,
    top: [
      [1, "p-ace", 900],
      [2, "p-bob", 300],
    ],
    total: 2,
    missing: "board_not_found",
  });
});
