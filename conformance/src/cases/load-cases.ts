import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { create, type DescMessage, fromJsonString, type MessageShape } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import {
  type GatewayCase,
  GatewayCaseSchema,
  GatewayScriptSchema,
  Level,
  StartWorkerSchema,
  type WorkerCase,
  WorkerCaseSchema,
} from "@taskq/sdk/conformance";

/** Where the suite's own cases live (the package's cases/ directory, from src/ or dist/). */
export const builtInCasesDir = new URL("../../cases/", import.meta.url);

/** Every *.json case under `dir` (recursively), parsed strictly, checked; sorted by name. */
function loadCases<D extends DescMessage>(
  dir: string,
  schema: D,
  check: (c: MessageShape<D>) => string | undefined,
): MessageShape<D>[] {
  const cases = jsonFiles(dir).map((file) => {
    let c: MessageShape<D>;
    try {
      c = fromJsonString(schema, readFileSync(file, "utf8"));
    } catch (err) {
      throw new Error(`${file}: not a ${schema.name}: ${(err as Error).message}`);
    }
    const { name, level, features } = c as unknown as { name: string; level: Level; features: string[] };
    const problem =
      (!/^[a-z0-9-]+\/[a-z0-9-]+$/.test(name) && `name "${name}" is not "<area>/<behaviour>"`) ||
      (level === Level.UNSPECIFIED && "level is required") ||
      (level === Level.OPTIONAL &&
        features.length === 0 &&
        "an optional case names its feature in features") ||
      check(c);
    if (problem) throw new Error(`${file}: ${problem}`);
    return c;
  });
  const names = cases.map((c) => (c as unknown as { name: string }).name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new Error(`two cases are named ${twice}`);
  return cases.sort((a, b) =>
    (a as unknown as { name: string }).name.localeCompare((b as unknown as { name: string }).name),
  );
}

/** The worker-mode cases under `dir`, with the documented defaults applied. */
export function loadWorkerCases(dir: string): WorkerCase[] {
  return loadCases(dir, WorkerCaseSchema, checkWorkerCase).map(withDefaults);
}

/** The gateway-mode cases under `dir`. */
export function loadGatewayCases(dir: string): GatewayCase[] {
  return loadCases(dir, GatewayCaseSchema, (c) => {
    if (c.steps.length === 0) return "a case without steps cannot fail";
    const i = c.steps.findIndex((s) => !s.action.case);
    return i >= 0 ? `steps[${i}] names no action` : undefined;
  });
}

function jsonFiles(dir: string): string[] {
  return readdirSync(dir)
    .map((name) => join(dir, name))
    .flatMap((path) =>
      statSync(path).isDirectory() ? jsonFiles(path) : path.endsWith(".json") ? [path] : [],
    );
}

function checkWorkerCase(c: WorkerCase): string | undefined {
  if (c.expect.length === 0) return "a case without expectations cannot fail";
  if (!c.stopAfter) return "stop_after is required";
  const i = c.expect.findIndex((e) => !e.check.case);
  return i >= 0 ? `expect[${i}] names no check` : undefined;
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
