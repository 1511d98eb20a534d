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

// fault -> [the case aimed at it, the check that must catch it]
const caught: Record<string, [string, RegExp]> = {
  "ignores-retry-after": ["verdict/retry-after-honoured", /^verdictsHonoured: .* after only/],
  "never-heartbeats": ["heartbeat/before-expiry", /^heartbeatsInTime: lease 1\/1 reached its deadline/],
  "settles-twice": ["settle/one-per-lease-with-attempt", /^settleCount: .* want at most 1/],
  "exceeds-concurrency": [
    "concurrency/never-exceeded",
    /^concurrency: a poll .* asked for \d+ jobs, more than 2/,
  ],
  "hot-loops-on-empty": ["claim/long-poll-no-hot-loop", /^pollRate: \d+ polls within/],
  "drops-token": ["claim/worker-identity", /call did not carry the bearer token/],
  "cancels-instead-of-half-closing": [
    "drain/half-closes-claim-stream",
    /^claimStreamHalfClosed: claim stream 1 was cancelled \(reset\)/,
  ],
  "keeps-buffer-on-pause": [
    "prefetch/released-on-pause",
    /^releasedOnVerdict: job 2\/1, held unstarted at the PAUSED verdict .*: its handler started at/,
  ],
};
// Every run hands the program a token, so each case also checks that every call carries it.
const token = "conformance-s3cret";

const all = loadWorkerCases(fileURLToPath(new URL("worker/", builtInCasesDir)));
const cases = selectCases(all, { run: Object.values(caught).map(([name]) => name), requiredOnly: false });

describe("the suite catches broken workers", () => {
  it("passes the working SDK on every case aimed at a fault", async () => {
    const results = await runWorkerSuite(cases, { command: sdk, token }, 3);
    expect(results.filter((r) => !r.passed).map((r) => ({ name: r.name, failures: r.failures }))).toEqual([]);
    expect(results).toHaveLength(Object.keys(caught).length);
  });

  it.each(Object.entries(caught))("fails a worker that %s", async (fault, [name, why]) => {
    const k = cases.filter((c) => c.name === name);
    const [result] = await runWorkerSuite(k, { command: broken(fault), token }, 1);
    expect(result?.passed).toBe(false);
    expect(result?.failures).toContainEqual(expect.stringMatching(why));
  });
});
