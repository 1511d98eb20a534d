import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Level } from "@taskq/sdk/conformance";
import { describe, expect, it } from "vitest";
import { builtInCasesDir, loadWorkerCases } from "./load-cases.js";

const caseDir = (files: Record<string, unknown>) => {
  const dir = mkdtempSync(join(tmpdir(), "taskq-cases-"));
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), JSON.stringify(body));
  return dir;
};
const minimal = {
  name: "x/y",
  level: "LEVEL_REQUIRED",
  stopAfter: "1s",
  expect: [{ workerIdentity: {} }],
};

describe("loadWorkerCases", () => {
  it("loads the built-in cases: at least 25, both levels, defaults applied", () => {
    const cases = loadWorkerCases(fileURLToPath(new URL("worker/", builtInCasesDir)));
    expect(cases.length).toBeGreaterThanOrEqual(25);
    expect(cases.some((c) => c.level === Level.RECOMMENDED)).toBe(true);
    expect(cases.filter((c) => c.level === Level.REQUIRED).length).toBeGreaterThanOrEqual(25);
    const [first] = cases;
    expect(first?.worker?.queues.length).toBeGreaterThan(0);
    expect(first?.worker?.concurrency).toBeGreaterThan(0);
  });

  it("refuses a case that cannot fail, an unknown field and a duplicate name", () => {
    expect(() => loadWorkerCases(caseDir({ "a.json": { ...minimal, expect: [] } }))).toThrow(/cannot fail/);
    expect(() => loadWorkerCases(caseDir({ "a.json": { ...minimal, surprise: 1 } }))).toThrow(
      /not a WorkerCase/,
    );
    expect(() => loadWorkerCases(caseDir({ "a.json": minimal, "b.json": minimal }))).toThrow(/two cases/);
    expect(() => loadWorkerCases(caseDir({ "a.json": { ...minimal, name: "nameless" } }))).toThrow(/area/);
    expect(() => loadWorkerCases(caseDir({ "a.json": { ...minimal, level: "LEVEL_OPTIONAL" } }))).toThrow(
      /optional case names its feature/,
    );
  });
});
