import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { builtInCasesDir, loadWorkerCases } from "./cases/load-cases.js";
import { runWorkerSuite, selectCases } from "./suite.js";

// The suite tests itself: each deliberately broken worker must fail the case aimed at its fault, and
// the same case must pass against the working SDK, so the failure is the fault's and not the case's.
const adapter = (path: string) => fileURLToPath(new URL(`../adapters/${path}`, import.meta.url));
const node = ["node", "--conditions=taskq-source", "--import", "tsx"];
const sdk = [...node, adapter("ts-sdk/adapter.ts")];
const broken = (fault: string) => [...node, adapter("broken/adapter.ts"), fault];

const caught: Record<string, string> = {
  "ignores-retry-after": "verdict/retry-after-honoured",
  "never-heartbeats": "heartbeat/before-expiry",
  "settles-twice": "settle/one-per-lease-with-attempt",
  "exceeds-concurrency": "concurrency/never-exceeded",
  "hot-loops-on-empty": "claim/long-poll-no-hot-loop",
};

const all = loadWorkerCases(fileURLToPath(new URL("worker/", builtInCasesDir)));
const cases = selectCases(all, { run: Object.values(caught), requiredOnly: false });

describe("the suite catches broken workers", () => {
  it("passes the working SDK on every case aimed at a fault", async () => {
    const results = await runWorkerSuite(cases, { command: sdk }, 3);
    expect(results.filter((r) => !r.passed).map((r) => ({ name: r.name, failures: r.failures }))).toEqual([]);
    expect(results).toHaveLength(Object.keys(caught).length);
  });

  it.each(Object.entries(caught))("fails a worker that %s on %s", async (fault, name) => {
    const k = cases.filter((c) => c.name === name);
    const [result] = await runWorkerSuite(k, { command: broken(fault) }, 1);
    expect(result?.passed).toBe(false);
    expect(result?.failures.length).toBeGreaterThan(0);
  });
});
