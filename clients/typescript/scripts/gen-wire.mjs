// Writes src/wire.ts, the wire shapes as TypeScript, from the service's OpenAPI document:
//   node scripts/gen-wire.mjs [http://127.0.0.1:8000/openapi.json | openapi.json]
// (npm run gen). test/client.test.ts runs the same generator on a live `rankd serve`'s
// /openapi.json and fails if src/wire.ts differs, so the types cannot drift from the service.
// Only shapes are generated (properties, types, required, enums), not descriptions or
// examples, so documentation edits do not churn the file.
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const HEADER = `// Generated from the service's /openapi.json by scripts/gen-wire.mjs (npm run gen).
// Do not edit: test/client.test.ts checks it against a running rankd serve.
`;

function literal(value) {
  return JSON.stringify(value);
}

function typeOf(schema) {
  if (schema === undefined || schema === true || Object.keys(schema).length === 0) return "unknown";
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.title && schema.properties && inline.has(schema.title)) return schema.title;
  if (schema.anyOf || schema.oneOf) {
    const parts = (schema.anyOf ?? schema.oneOf).map(typeOf);
    return [...new Set(parts)].join(" | ");
  }
  if (schema.enum) return schema.enum.map(literal).join(" | ");
  if (schema.const !== undefined) return literal(schema.const);
  switch (schema.type) {
    case "string": return "string";
    case "integer": case "number": return "number";
    case "boolean": return "boolean";
    case "null": return "null";
    case "array": {
      const item = typeOf(schema.items);
      return /[ |]/.test(item) ? `Array<${item}>` : `${item}[]`;
    }
    case "object": {
      if (schema.properties) return objectBody(schema, "");
      if (schema.additionalProperties && schema.additionalProperties !== true) {
        return `Record<string, ${typeOf(schema.additionalProperties)}>`;
      }
      return "Record<string, unknown>";
    }
    default: return "unknown";
  }
}

function objectBody(schema, indent) {
  const required = new Set(schema.required ?? []);
  const lines = Object.entries(schema.properties ?? {}).map(([name, prop]) => {
    const key = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : literal(name);
    return `${indent}  ${key}${required.has(name) ? "" : "?"}: ${typeOf(prop)};`;
  });
  return `{\n${lines.join("\n")}\n${indent}}`;
}

// object schemas written inline under a title (FastAPI's request bodies: RunIn, BoardIn...)
const inline = new Set();
function collectInline(schema, named) {
  if (!schema || typeof schema !== "object") return;
  if (Array.isArray(schema)) { for (const s of schema) collectInline(s, named); return; }
  if (schema.title && schema.properties && !named.has(schema.title)) {
    named.set(schema.title, schema);
    inline.add(schema.title);
  }
  for (const value of Object.values(schema)) collectInline(value, named);
}

/** The TypeScript source for an OpenAPI document (an object). */
export function generate(openapi) {
  const named = new Map(Object.entries(openapi.components?.schemas ?? {}));
  inline.clear();
  const operations = [];
  for (const [path, item] of Object.entries(openapi.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== "object" || !op.operationId) continue;
      const body = op.requestBody?.content?.["application/json"]?.schema;
      collectInline(body, named);
      const ok = Object.entries(op.responses ?? {}).filter(([status]) => status.startsWith("2"));
      const json = ok.map(([, r]) => r.content?.["application/json"]?.schema).filter(Boolean);
      const answer = json.length ? [...new Set(json.map(typeOf))].join(" | ") : "string";
      const request = body ? typeOf(body) : "never";
      operations.push({ id: op.operationId, method: method.toUpperCase(), path, answer, request });
    }
  }
  const out = [HEADER];
  for (const name of [...named.keys()].sort()) {
    const schema = named.get(name);
    if (schema.type === "object" || schema.properties) {
      out.push(`export interface ${name} ${objectBody(schema, "")}\n`);
    } else {
      out.push(`export type ${name} = ${typeOf(schema)};\n`);
    }
  }
  operations.sort((a, b) => a.id.localeCompare(b.id));
  out.push("/** Each operation (by operationId): its method, path, JSON body and 2xx answer. */");
  out.push("export interface Operations {");
  for (const op of operations) {
    out.push(`  ${op.id}: { method: ${literal(op.method)}; path: ${literal(op.path)}; ` +
      `request: ${op.request}; response: ${op.answer} };`);
  }
  out.push("}\n");
  return out.join("\n");
}

async function load(source) {
  if (/^https?:/.test(source)) {
    const response = await fetch(source);
    if (!response.ok) throw new Error(`${source}: HTTP ${response.status}`);
    return response.json();
  }
  return JSON.parse(await readFile(source, "utf8"));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const source = process.argv[2] ?? "http://127.0.0.1:8000/openapi.json";
  const target = new URL("../src/wire.ts", import.meta.url);
  await writeFile(target, generate(await load(source)));
  console.log(`wrote ${fileURLToPath(target)} from ${source}`);
}
