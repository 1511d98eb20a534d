// `bench fairness`: long jobs landing at once on a few workers of one queue. A worker that holds jobs
// ahead of its free slots can take more than its share of a backlog while the others idle; the
// makespan over the ideal shows what that costs. The default worker (no `prefetch` option) runs beside
// one with an explicit prefetch (`--prefetch`, default 0: none held ahead), interleaved run by run.
//
// How it measures: one production gateway (gateway-fleet.ts) on a throwaway database, a queue per
// variant. Each run makes WORKERS fresh SDK Workers, each on its own connection as separate hosts
// would be, lets their first polls park, then enqueues `--jobs` (200) jobs whose handler sleeps
// `--job-ms` (100) with `Client.enqueueBatch`. The clock starts when the first enqueue call returns and
// stops when the gateway has accepted the last settle (the workers' `succeeded`); the workers are
// stopped outside it. Ideal: jobs × job ms / (workers × `--concurrency` slots, 5).
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "@taskq/sdk";
import {
  type FairnessReport,
  type FairnessResult,
  type FairnessRun,
  fairnessMarkdown,
  fairnessTable,
  medianByMakespan,
} from "./fairness-report.js";
import { type FleetMember, startGatewayFleet } from "./gateway-fleet.js";
import { createThrowawayDatabase, loadavg1, machineInfo } from "./infra.js";
import { Countdown, waitUntil } from "./peers/adapter.js";
import type { Scenario, ScenarioOptions } from "./scenario.js";
import { BENCH_TOKEN } from "./token.js";

export type { FairnessReport } from "./fairness-report.js";

const WORKERS = 4;
/** Time for every worker's first poll to reach the gateway and park before the backlog lands. */
const SETTLE_MS = 250;
const ENQUEUE_BATCH = 1_000;

/** A worker configuration under test: `prefetch` undefined passes no option (the SDK's default). */
interface Variant {
  readonly name: string;
  readonly prefetch: number | undefined;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** One run of one variant: fresh workers, the backlog, the makespan and who ran what. */
async function fairnessRun(
  member: FleetMember,
  variant: Variant,
  idealMs: number,
  { jobs, concurrency, jobMs }: ScenarioOptions,
): Promise<FairnessRun> {
  const queue = `fairness-${variant.name}`;
  const perWorker: number[] = Array(WORKERS).fill(0);
  const handled = new Countdown(jobs);
  const workers = perWorker.map(
    (_, i) =>
      new Worker({
        baseUrl: member.grpcUrl,
        token: BENCH_TOKEN,
        queues: [queue],
        concurrency,
        ...(variant.prefetch === undefined ? {} : { prefetch: variant.prefetch }),
        handler: async () => {
          perWorker[i] = (perWorker[i] ?? 0) + 1;
          await sleep(jobMs);
          handled.tick();
        },
      }),
  );
  try {
    await Promise.all(workers.map((w) => w.start()));
    await sleep(SETTLE_MS);
    const load = loadavg1();
    let startedAt: number | undefined;
    for (let i = 0; i < jobs; i += ENQUEUE_BATCH) {
      const specs = Array.from({ length: Math.min(ENQUEUE_BATCH, jobs - i) }, () => ({ queue }));
      await member.client.enqueueBatch(specs);
      startedAt ??= performance.now();
    }
    await handled.done;
    const settled = () => workers.reduce((sum, w) => sum + w.snapshot().succeeded, 0);
    await waitUntil(async () => settled() >= jobs);
    const makespanMs = Math.round(performance.now() - (startedAt ?? 0));
    const snapshots = workers.map((w) => w.snapshot());
    if (settled() !== jobs || snapshots.some((s) => s.failed > 0 || s.settleRefused > 0)) {
      throw new Error(`fairness run: ${JSON.stringify(snapshots)} for ${jobs} jobs`);
    }
    return { makespanMs, overIdeal: round2(makespanMs / idealMs), perWorker, loadavg1: load };
  } finally {
    await Promise.all(workers.map((w) => w.stop({ graceMs: 5_000 })));
  }
}

export const fairnessScenario: Scenario<FairnessReport> = {
  name: "fairness",
  summary: "long jobs landing on 4 workers × 5 slots: makespan over the ideal, default worker vs --prefetch",
  defaultJobs: 200,
  defaultConcurrency: 5,
  defaultJobMs: 100,
  async run(options) {
    const { jobs, concurrency, jobMs, log } = options;
    if (jobMs === 0) throw new Error("fairness needs jobs that take time: --job-ms ≥ 1");
    const machine = machineInfo();
    const idealMs = Math.round((jobs * jobMs) / (WORKERS * concurrency));
    const comparison = options.prefetch ?? 0;
    const variants: Variant[] = [
      { name: "default", prefetch: undefined },
      { name: `prefetch-${comparison}`, prefetch: comparison },
    ];
    const runs = new Map<string, FairnessRun[]>(variants.map((v) => [v.name, []]));
    const errors = new Map<string, string>();
    const db = await createThrowawayDatabase(options.config.pgAdminUrl, "fairness");
    try {
      const fleet = await startGatewayFleet({
        count: 1,
        databaseUrl: db.url,
        redisUrl: options.config.redisUrl,
        log,
      });
      try {
        const member = fleet.members[0];
        if (!member) throw new Error("no gateway");
        const step = async (v: Variant, label: string, timed: boolean) => {
          if (errors.has(v.name)) return;
          try {
            const r = await fairnessRun(member, v, idealMs, options);
            log(
              `fairness ${v.name}: ${label}, makespan ${r.makespanMs} ms (${r.overIdeal}× ideal ${idealMs}), ` +
                `jobs per worker ${r.perWorker.join("/")}, load ${r.loadavg1}`,
            );
            if (timed) runs.get(v.name)?.push(r);
          } catch (err) {
            errors.set(v.name, `${label}: ${err instanceof Error ? err.message : String(err)}`);
            log(`fairness ${v.name}: FAILED ${errors.get(v.name)}`);
          }
        };
        if (options.warmup > 0) for (const v of variants) await step(v, "warm-up (untimed)", false);
        for (let round = 1; round <= options.runs; round++) {
          // Alternate the order, so neither variant always runs first in a round.
          for (const v of round % 2 === 1 ? variants : [...variants].reverse()) {
            await step(v, `run ${round} of ${options.runs}`, true);
          }
        }
      } finally {
        await fleet.stop();
      }
    } finally {
      await db.drop();
    }
    const results: Record<string, FairnessResult> = {};
    for (const v of variants) {
      const error = errors.get(v.name);
      const done = runs.get(v.name) ?? [];
      results[v.name] = error !== undefined ? { error } : { ...medianByMakespan(done), runs: done };
    }
    return {
      scenario: "fairness",
      workers: WORKERS,
      slotsPerWorker: concurrency,
      jobs,
      jobMs,
      idealMs,
      runs: options.runs,
      warmup: options.warmup > 0,
      machine,
      results,
    };
  },
  failed: (report) => Object.values(report.results).some((r) => "error" in r),
  table: fairnessTable,
  markdown: fairnessMarkdown,
};
