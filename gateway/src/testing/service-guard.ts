/**
 * The rules that keep every test's way to Postgres and Redis through the one guard (services.ts),
 * checked on the sources by service-guard.test.ts. The helpers enforce the same at run time (they throw
 * when the test file never asked the guard or was told no); these rules catch what the run time cannot:
 * a service URL read straight from the environment, a local service's address written out, a client
 * opened by hand, and a test file that reaches a service without asking the guard at all.
 *
 * `serviceTestFiles()` lists the unit test files that reach a service: CI (.ci/run) runs them once
 * without the service URLs to prove they skip cleanly. Run this file to print that list:
 *   node --conditions=taskq-source --import tsx gateway/src/testing/service-guard.ts
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository's root. */
export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** Where tests live (the vitest projects' includes). */
const TEST_DIRS = ["gateway/src", "sdk-ts/src", "conformance/src", "examples"];

/** Where test helpers live: like tests, they reach services only through the guard. */
const HELPER_DIRS = ["gateway/src/testing", "gateway/src/faults"];

/**
 * The guard itself, which alone reads the URLs and names the default local ports, and these rules with
 * their test, whose examples break them on purpose.
 */
const GUARD_FILES = new Set([
  "gateway/src/testing/services.ts",
  "gateway/src/testing/local-services.ts",
  "gateway/src/testing/service-guard.ts",
  "gateway/src/testing/service-guard.test.ts",
]);

/** One broken rule, at a file and line. */
export interface Violation {
  file: string;
  line: number;
  rule: string;
  text: string;
}

/** A source file, by its path from the repository root. */
export interface Source {
  file: string;
  text: string;
}

/** Helpers that reach a service: a test file using one must ask the guard. */
const OPENERS: RegExp[] = [
  /\bengine:\s*["']postgres["']/,
  /["']postgres["']\s+as\s+const\b/,
  /\b(freshPostgres|testRedis|startCluster|startPgBouncer|startFaultEnv|explainSetup|startRedisCluster|startRedisServer|testEngines)\(/,
  /\btestServices\./,
  /\bstartTestGateway\(\{\s*databaseUrl\b/,
  /\bimport\s*\{[^}]*\bengines\b[^}]*\}\s*from\s*["'][^"']*services\.js["']/,
];

/** How a test file asks the guard (services.ts), or the engine list's `available()` that asks it. */
const CONSULTS = /\b(haveService|haveCommand)\(|\.available\(\)/;

const ENV_READ = /\bTASKQ_TEST_(DATABASE|REDIS)_URL\b/;
const LOCAL_ADDRESS = /\b(127\.0\.0\.1|localhost):(5432|6379)\b/;
// ioredis's constructor, which with no URL connects to 127.0.0.1:6379; a lazy one never connects.
const NEW_REDIS = /\bnew\s+(Redis|IORedis)\s*\((?!\s*\{\s*lazyConnect:\s*true\s*\}\s*\))/;
const EACH = /\b(describe|it|test)(\.\w+)*\.each\s*\(/g;
const GUARD_IN_TEST = /\bif\s*\(\s*!\s*(haveService|haveCommand)\(/;

const isTest = (file: string) => file.endsWith(".test.ts");

/** The rules, over `sources` (paths from the repository root); empty when every one holds. */
export function checkSources(sources: readonly Source[]): Violation[] {
  const out: Violation[] = [];
  for (const { file, text } of sources) {
    if (GUARD_FILES.has(file)) continue;
    const lines = text.split("\n");
    const at = (index: number) => text.slice(0, index).split("\n").length;
    const flag = (line: number, rule: string) =>
      out.push({ file, line, rule, text: (lines[line - 1] ?? "").trim() });
    lines.forEach((l, i) => {
      if (ENV_READ.test(l))
        flag(
          i + 1,
          "names a service URL's variable: only the guard (services.ts) reads them; use testServices",
        );
      if (LOCAL_ADDRESS.test(l))
        flag(i + 1, "names a local service's default address: take the URL from the guard (testServices)");
      if (isTest(file) && NEW_REDIS.test(l))
        flag(i + 1, "opens Redis by hand: use testRedis() from services.ts");
      if (isTest(file) && GUARD_IN_TEST.test(l))
        flag(
          i + 1,
          "asks the guard inside a test or hook, which then passes unseen: use describe.skipIf / it.skipIf",
        );
    });
    if (!isTest(file)) continue;
    for (const m of text.matchAll(EACH)) {
      // The table: up to the call's closing parenthesis.
      let depth = 0;
      let end = m.index + m[0].length - 1;
      for (; end < text.length; end++) {
        if (text[end] === "(" || text[end] === "[") depth++;
        else if (text[end] === ")" || text[end] === "]") depth--;
        if (depth === 0) break;
      }
      if (/postgres/.test(text.slice(m.index, end)))
        flag(
          at(m.index),
          ".each over engines runs the postgres case unguarded: for (const engine of engines) describe.skipIf(!engine.available())",
        );
    }
    const opener = OPENERS.map((r) => r.exec(text)).find((m) => m !== null);
    if (opener && !CONSULTS.test(text))
      flag(
        at(opener.index),
        "reaches a service without asking the guard: describe.skipIf(!haveService(...)) (or engine.available())",
      );
  }
  return out;
}

/** Whether a test file reaches a service (or asks the guard for one): the ones to run without URLs. */
export function reachesService({ text }: Source): boolean {
  return CONSULTS.test(text) || OPENERS.some((r) => r.test(text));
}

function walk(dir: string, keep: (file: string) => boolean, out: string[] = []): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== "node_modules" && e.name !== "gen" && e.name !== "dist") walk(path, keep, out);
    } else if (keep(path)) out.push(path);
  }
  return out;
}

/** Every test file, and every helper beside them, with its text. */
export function repositorySources(): Source[] {
  const tests = TEST_DIRS.flatMap((d) => walk(d, isTest));
  const helpers = HELPER_DIRS.flatMap((d) => walk(d, (f) => f.endsWith(".ts") && !isTest(f)));
  return [...new Set([...tests, ...helpers])]
    .sort()
    .map((file) => ({ file, text: readFileSync(join(ROOT, file), "utf8") }));
}

/** The unit project's test files that reach a service (no cluster or fault scenarios). */
export function serviceTestFiles(sources = repositorySources()): string[] {
  return sources
    .filter((s) => isTest(s.file) && !/\.(cluster|faults)\.test\.ts$/.test(s.file) && reachesService(s))
    .map((s) => s.file);
}

if (process.argv[1] && relative(process.argv[1], fileURLToPath(import.meta.url)) === "") {
  for (const f of serviceTestFiles()) console.log(f);
}
