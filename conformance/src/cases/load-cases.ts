import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { create, fromJsonString } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import {
  GatewayScriptSchema,
  Level,
  StartWorkerSchema,
  type WorkerCase,
  WorkerCaseSchema,
} from "@taskq/sdk/conformance";

/** Where the suite's own cases live (the package's cases/ directory, from src/ or dist/). */
export const builtInCasesDir = new URL("../../cases/", import.meta.url);

/** Every *.json case under `dir` (recursively), parsed strictly, defaulted and checked; sorted by name. */
export function loadWorkerCases(dir: string): WorkerCase[] {
  const cases = jsonFiles(dir).map((file) => {
    let c: WorkerCase;
    try {
      c = fromJsonString(WorkerCaseSchema, readFileSync(file, "utf8"));
    } catch (err) {
      throw new Error(`${file}: not a WorkerCase: ${(err as Error).message}`);
    }
    return withDefaults(checked(c, file));
  });
  const seen = new Set<string>();
  for (const c of cases) {
    if (seen.has(c.name)) throw new Error(`two cases are named ${c.name}`);
    seen.add(c.name);
  }
  return cases.sort((a, b) => a.name.localeCompare(b.name));
}

function jsonFiles(dir: string): string[] {
  return readdirSync(dir)
    .map((name) => join(dir, name))
    .flatMap((path) =>
      statSync(path).isDirectory() ? jsonFiles(path) : path.endsWith(".json") ? [path] : [],
    );
}

function checked(c: WorkerCase, file: string): WorkerCase {
  const problem = (msg: string) => new Error(`${file}: ${msg}`);
  if (!/^[a-z0-9-]+\/[a-z0-9-]+$/.test(c.name)) throw problem(`name "${c.name}" is not "<area>/<behaviour>"`);
  if (c.level === Level.UNSPECIFIED) throw problem("level is required");
  if (c.expect.length === 0) throw problem("a case without expectations cannot fail");
  if (!c.stopAfter) throw problem("stop_after is required");
  for (const [i, e] of c.expect.entries()) if (!e.check.case) throw problem(`expect[${i}] names no check`);
  return c;
}

/** The documented defaults of unset worker settings (see WorkerCase.worker). */
function withDefaults(c: WorkerCase): WorkerCase {
  const w = c.worker ?? create(StartWorkerSchema);
  if (w.queues.length === 0) w.queues = ["conformance"];
  w.concurrency ||= 4;
  w.maxWait ??= durationFromMs(1_000);
  w.shutdownGrace ??= durationFromMs(2_000);
  w.reconnectInitial ??= durationFromMs(100);
  w.reconnectMax ??= durationFromMs(1_000);
  c.worker = w;
  c.script ??= create(GatewayScriptSchema);
  return c;
}
