import { fileURLToPath } from "node:url";
import { durationMs } from "@bufbuild/protobuf/wkt";
import { Level, type WorkerCase } from "@taskq/sdk/conformance";
import { beforeAll, describe, expect, it } from "vitest";
import { faults } from "../adapters/broken/faults.js";
import { builtInCasesDir, loadWorkerCases } from "./cases/load-cases.js";
import type { CaseResult } from "./results/case-result.js";
import { pool, selectCases } from "./suite.js";
import { runWorkerCase } from "./worker-mode/run-case.js";

// The suite tests itself: each deliberately broken worker must fail a REQUIRED case aimed at its fault
// (an optional feature's fault, a case of that feature), with the check that should catch it, and the
// same case must pass against the working SDK, so the failure is the fault's and not the case's.
const adapter = (path: string) => fileURLToPath(new URL(`../adapters/${path}`, import.meta.url));
const node = ["node", "--conditions=taskq-source", "--import", "tsx"];
const sdk = [...node, adapter("ts-sdk/adapter.ts")];
const broken = (fault: string) => [...node, adapter("broken/adapter.ts"), fault];

type Fault = keyof typeof faults;
// [fault, the case aimed at it, the failure that must name it]; a fault may be aimed at several cases.
const caught: Array<[Fault, string, RegExp]> = [
  [
    "keeps-buffer-on-pause",
    "prefetch/released-on-pause",
    /^releasedOnVerdict: job 2\/1, .*: its handler started at/,
  ],
  [
    "keeps-buffer-on-breaker-open",
    "prefetch/released-on-breaker-open",
    /^releasedOnVerdict: job 2\/1, held unstarted at the BREAKER_OPEN verdict .*: its handler started at/,
  ],
  [
    "forgets-buffer-in-max-jobs",
    "prefetch/max-jobs-counts-buffer",
    /^held: a poll at \d+ ms asked for 2 jobs while the worker held 3, more than 4 in all/,
  ],
  [
    "hides-slots",
    "prefetch/max-jobs-counts-buffer",
    /^held: a poll at \d+ ms stated concurrency 0 and prefetch 0, want concurrency 2 and prefetch at most 2/,
  ],
  [
    "top-up-waits",
    "prefetch/max-jobs-counts-buffer",
    /^held: a poll at \d+ ms with no free handler slot \(max_jobs \d+, prefetch 2\) asked to wait 1000 ms, want max_wait 0/,
  ],
  ["ignores-retry-after", "verdict/retry-after-honoured", /^verdictsHonoured: .* after only/],
  ["drops-jobs-with-verdict", "verdict/jobs-with-verdict", /^settled: job 1 was never settled/],
  [
    "forgets-sleeps-on-reconnect",
    "verdict/retry-after-across-reconnect-other-queue",
    /^verdictsHonoured: verdict for a .* polled a again after only/,
  ],
  ["never-heartbeats", "heartbeat/before-expiry", /^heartbeatsInTime: lease 1\/1 reached its deadline/],
  [
    "assumes-default-lease",
    "heartbeat/reads-lease-deadline",
    /^heartbeatsInTime: lease 1\/1 reached its deadline/,
  ],
  [
    "beats-until-settle-answered",
    "heartbeat/none-while-settle-unanswered",
    /^noHeartbeatAfterEnd: lease 1\/1 heartbeated at .* after it ended/,
  ],
  ["settles-twice", "settle/one-per-lease-with-attempt", /^settleCount: .* want at most 1/],
  [
    "resends-refused-settle",
    "settle/invalid-argument-not-retried",
    /^settleCount: lease 1\/1 settle sent \d+ times, want at most 1/,
  ],
  ["stragglers-non-retryable", "drain/stragglers-at-deadline", /^settled: job 1 failed with retryable false/],
  ["exceeds-concurrency", "concurrency/never-exceeded", /^concurrency: a poll .* asked for \d+ jobs/],
  [
    "asks-for-concurrency",
    "concurrency/never-exceeded",
    /^concurrency: a poll .* asked for 2 jobs while the worker held 1, more than 2 in all/,
  ],
  [
    "leaks-slot-on-lease-lost",
    "concurrency/slot-freed-after-loss-or-refusal",
    /^settled: job 2 was never handed out/,
  ],
  [
    "leaks-slot-on-refused-settle",
    "concurrency/slot-freed-after-loss-or-refusal",
    /^settled: job [34] was never handed out/,
  ],
  ["hot-loops-on-empty", "claim/long-poll-no-hot-loop", /^pollRate: \d+ polls within/],
  [
    "stops-claiming-on-other-status",
    "reconnect/keeps-claiming-after-any-failure",
    /^settled: job 1 was never handed out/,
  ],
  [
    "uncapped-backoff",
    "reconnect/backoff-grows-capped",
    /^reconnectBackoff: reopened claim \d+ ms after a failure, want at most 650 ms/,
  ],
  [
    "reopens-streams-at-once",
    "reconnect/heartbeat-backoff",
    /^reconnectBackoff: reopened heartbeat \d+ ms after a failure, want at least 50 ms/,
  ],
  [
    "reopens-streams-at-once",
    "reconnect/settle-backoff",
    /^reconnectBackoff: reopened settle \d+ ms after a failure, want at least 50 ms/,
  ],
  [
    "cancels-instead-of-half-closing",
    "drain/half-closes-claim-stream",
    /^claimStreamHalfClosed: claim stream 1 was cancelled \(reset\)/,
  ],
  ["drops-token", "claim/worker-identity", /the claim call did not carry the bearer token/],
  ["drops-token-on-settle", "settle/success-result", /^the settle call did not carry the bearer token/],
];

// Faults of an optional feature: only a case of that feature (LEVEL_OPTIONAL) binds a worker to it.
const optionalFeatureFaults = new Set<Fault>([
  "keeps-buffer-on-pause",
  "keeps-buffer-on-breaker-open",
  "forgets-buffer-in-max-jobs",
  "hides-slots",
  "top-up-waits",
]);

const all = loadWorkerCases(fileURLToPath(new URL("worker/", builtInCasesDir)));
const cases = selectCases(all, { run: [...new Set(caught.map(([, name]) => name))], requiredOnly: false });
const byName = new Map(cases.map((k) => [k.name, k]));

// Every run, the SDK's and each fault's, in one pool: the whole self-test takes about as long as its
// slowest few cases rather than their sum. No run names a token: the runner generates one, so every
// case checks that every call carries it.
const PARALLEL = 3;
let sdkResults: CaseResult[] = [];
let faultResults: CaseResult[] = [];
beforeAll(async () => {
  const runs = [
    ...cases.map((k) => ({ k, command: sdk })),
    ...caught.map(([fault, name]) => ({ k: byName.get(name) ?? fail(name), command: broken(fault) })),
  ];
  // Longest cases first, so the pool does not end waiting on one.
  const order = runs.map((_, i) => i).sort((a, b) => length(runs[b]?.k) - length(runs[a]?.k));
  const results = await pool(order, PARALLEL, (i) => {
    const run = runs[i] ?? fail(`run ${i}`);
    return runWorkerCase(run.k, { command: run.command }).then((r) => [i, r] as const);
  });
  const byRun = new Map(results);
  const at = (i: number) => byRun.get(i) ?? fail(`run ${i}`);
  sdkResults = cases.map((_, i) => at(i));
  faultResults = caught.map((_, i) => at(cases.length + i));
}, 240_000);

/** How long a case runs before its stop, in ms. */
function length(k: WorkerCase | undefined): number {
  return k?.stopAfter ? durationMs(k.stopAfter) : 1_000;
}

function fail(name: string): never {
  throw new Error(`no case ${name}`);
}

describe("the suite catches broken workers", () => {
  it("has a fault for every case aimed at, and aims at every fault", () => {
    expect(new Set(caught.map(([fault]) => fault))).toEqual(new Set(Object.keys(faults)));
    expect(cases.map((k) => k.name).sort()).toEqual([...byName.keys()].sort());
  });

  it("passes the working SDK on every case aimed at a fault", () => {
    expect(sdkResults.filter((r) => !r.passed).map((r) => ({ name: r.name, failures: r.failures }))).toEqual(
      [],
    );
    expect(sdkResults).toHaveLength(byName.size);
  });

  it.each(caught.map((c, i) => [...c, i] as const))("fails a worker that %s on %s", (fault, name, why, i) => {
    const k = byName.get(name) ?? fail(name);
    expect(k.level).toBe(optionalFeatureFaults.has(fault) ? Level.OPTIONAL : Level.REQUIRED);
    const result = faultResults[i];
    expect(result?.passed).toBe(false);
    expect(result?.failures).toContainEqual(expect.stringMatching(why));
  });
});
