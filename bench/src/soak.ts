// `bench soak`: taskq under a steady offered rate for many jobs, with finished jobs kept (the gateway's
// default retention) and autovacuum at Postgres' defaults, as in production and unlike a drain of a fresh
// table. Per window of jobs it reports what degrades as finished jobs and dead rows pile up: the claim
// statement's time, enqueue→start, Postgres CPU per job, and the jobs tables' sizes.
//
// The claim statement is timed by a probe beside the workers: ten times a second it runs the claim
// function for one job of the soaked queue in a transaction it rolls back (nothing is claimed; the real
// workers skip the one row it locks for that moment). Postgres CPU counts every backend of the database,
// autovacuum's workers included (a backend seen for less than the 250 ms sample interval is missed).
// TASKQ_BENCH_GATEWAY_CLI runs another taskq's cli.ts (an earlier version, for a before/after).
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "@taskq/sdk";
import pg from "pg";
import { type GatewayFleet, procCpuSeconds, startGatewayFleet } from "./gateway-fleet.js";
import { createThrowawayDatabase, loadavg1, type MachineInfo, machineInfo } from "./infra.js";
import { percentile } from "./latency.js";
import { procStat } from "./proc-stat.js";
import { type Scenario, type ScenarioOptions, textTable } from "./scenario.js";

const QUEUE = "soak";
/** Jobs per reported window, as long as the run holds five of them. */
const WINDOW = 100_000;
const TICK_MS = 5;
const MAX_INFLIGHT_ENQUEUES = 64;
const PROBE_MS = 100;
const CPU_SAMPLE_MS = 250;

/** One window of the soak: jobs [from, to) by enqueue order. */
export interface SoakWindow {
  from: number;
  to: number;
  claimP50Ms: number;
  claimP99Ms: number;
  startP50Ms: number;
  startP99Ms: number;
  /** CPU µs per job over the window's time: the database's backends, and the gateway. */
  postgresCpuUsPerJob: number;
  gatewayCpuUsPerJob: number;
  /** Sizes at the window's end, MB: the table of live jobs (the only table before finished jobs moved
   * out), and the history of finished jobs (all its partitions). */
  liveTableMb: number;
  liveIndexesMb: number;
  historyTableMb: number;
  historyIndexesMb: number;
  liveDeadRows: number;
  autovacuums: number;
  load1: number;
}

export interface SoakReport {
  scenario: "soak";
  machine: MachineInfo;
  jobs: number;
  ratePerSec: number;
  /** Rate the producer sustained over the whole run. */
  offeredPerSec: number;
  concurrency: number;
  /** The server's `autovacuum` setting: the soak means to run with it on, as in production. */
  autovacuum: string;
  windows: SoakWindow[];
  /** Last window over first: claim p50 and Postgres CPU per job (the goal: both ≤ 1.2). */
  lastOverFirst: { claimP50: number; postgresCpu: number };
  error?: string;
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
const mb = (bytes: number) => round(bytes / 1_048_576, 1);

/** CPU seconds so far of each backend of `database`, autovacuum's included. */
async function backendCpu(admin: pg.Client, database: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>("select pid from pg_stat_activity where datname = $1", [
    database,
  ]);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    const stat = procStat(pid);
    if (stat?.comm === "postgres") cpu.set(pid, stat.cpuSeconds);
  }
  return cpu;
}

/** The jobs tables' sizes: `taskq.jobs` or `taskq.live_jobs` (live), `taskq.job_history_*` (history). */
async function tableSizes(db: pg.Client) {
  const { rows } = await db.query<{ relname: string; t: string; i: string }>(
    `select c.relname, pg_table_size(c.oid)::text as t, pg_indexes_size(c.oid)::text as i
     from pg_class c where c.relnamespace = 'taskq'::regnamespace and c.relkind = 'r'
       and (c.relname in ('jobs', 'live_jobs') or c.relname like 'job\\_history\\_%')`,
  );
  const sum = (live: boolean, col: "t" | "i") =>
    rows.filter((r) => r.relname.startsWith("job_history") !== live).reduce((s, r) => s + Number(r[col]), 0);
  const { rows: stats } = await db.query<{ dead: string; vacuums: string }>(
    `select n_dead_tup::text as dead, autovacuum_count::text as vacuums from pg_stat_user_tables
     where schemaname = 'taskq' and relname in ('jobs', 'live_jobs')`,
  );
  return {
    liveTableMb: mb(sum(true, "t")),
    liveIndexesMb: mb(sum(true, "i")),
    historyTableMb: mb(sum(false, "t")),
    historyIndexesMb: mb(sum(false, "i")),
    liveDeadRows: Number(stats[0]?.dead ?? 0),
    autovacuums: Number(stats[0]?.vacuums ?? 0),
  };
}

/** What is read as a window ends. */
type WindowEnd = Awaited<ReturnType<typeof tableSizes>> & { load1: number };

async function soak(options: ScenarioOptions): Promise<SoakReport> {
  const { jobs, concurrency, log, config } = options;
  const rate = options.rate ?? 3_000;
  const window = Math.min(WINDOW, Math.max(1, Math.floor(jobs / 5)));
  const windows = Math.ceil(jobs / window);
  const report: SoakReport = {
    scenario: "soak",
    machine: machineInfo(),
    jobs,
    ratePerSec: rate,
    offeredPerSec: 0,
    concurrency,
    autovacuum: "",
    windows: [],
    lastOverFirst: { claimP50: Number.NaN, postgresCpu: Number.NaN },
  };
  const db = await createThrowawayDatabase(config.pgAdminUrl, "soak");
  let fleet: GatewayFleet | undefined;
  let worker: Worker | undefined;
  const admin = new pg.Client({ connectionString: config.pgAdminUrl });
  const probe = new pg.Client({ connectionString: db.url });
  const sizes = new pg.Client({ connectionString: db.url });
  try {
    await Promise.all([admin.connect(), probe.connect(), sizes.connect()]);
    report.autovacuum =
      (await admin.query<{ autovacuum: string }>("show autovacuum")).rows[0]?.autovacuum ?? "";
    if (report.autovacuum !== "on")
      log(
        `soak: this Postgres runs with autovacuum ${report.autovacuum}: dead rows pile up as they never would in production`,
      );
    fleet = await startGatewayFleet({ count: 1, databaseUrl: db.url, redisUrl: config.redisUrl, log });
    const member = fleet.members[0];
    if (!member) throw new Error("no gateway");
    const gatewayPid = member.pid;

    const starts: number[][] = Array.from({ length: windows }, () => []);
    const claims: number[][] = Array.from({ length: windows }, () => []);
    const pgCpu: number[] = Array.from({ length: windows }, () => 0);
    const gatewayCpu: number[] = Array.from({ length: windows }, () => 0);
    const ends: Promise<WindowEnd>[] = [];
    let sent = 0;
    const current = () => Math.min(windows - 1, Math.floor(sent / window));
    const seen = new Uint8Array(jobs);
    let started = 0;

    worker = new Worker({
      baseUrl: "unused (transport given)",
      transport: member.transport,
      queues: [QUEUE],
      concurrency,
      handler: async (job) => {
        const view = new DataView(job.payload.buffer, job.payload.byteOffset, job.payload.byteLength);
        const index = view.getUint32(0);
        if (seen[index]) return;
        seen[index] = 1;
        started++;
        starts[Math.floor(index / window)]?.push(performance.now() - view.getFloat64(4));
      },
    });
    await worker.start();

    let done = false;
    const probing = (async () => {
      while (!done) {
        await probe.query("begin");
        const t = performance.now();
        await probe.query(
          "select count(*) from taskq.jobs_claim(array[$1], array[1], array[30000], array['soak-probe'], null::timestamptz, array[]::text[])",
          [QUEUE],
        );
        claims[current()]?.push(performance.now() - t);
        await probe.query("rollback");
        await sleep(PROBE_MS);
      }
    })();
    const metering = (async () => {
      let last = await backendCpu(admin, db.name);
      let lastGateway = procCpuSeconds(gatewayPid);
      while (!done) {
        await sleep(CPU_SAMPLE_MS);
        const w = current();
        const now = await backendCpu(admin, db.name);
        for (const [pid, cpu] of now) pgCpu[w] = (pgCpu[w] ?? 0) + cpu - (last.get(pid) ?? 0);
        last = now;
        const g = procCpuSeconds(gatewayPid);
        gatewayCpu[w] = (gatewayCpu[w] ?? 0) + g - lastGateway;
        lastGateway = g;
      }
    })();

    // The producer: each tick sends every job due since the last, stamped with its scheduled time (a
    // producer that falls behind shows as latency, not as a thinner load).
    const t0 = performance.now();
    let inflight = 0;
    let nextEnd = window;
    while (sent < jobs) {
      const due = Math.min(jobs, Math.floor(((performance.now() - t0) / 1000) * rate));
      if (due > sent && inflight < MAX_INFLIGHT_ENQUEUES) {
        const batch = Array.from({ length: due - sent }, (_, k) => {
          const payload = new Uint8Array(12);
          const view = new DataView(payload.buffer);
          view.setUint32(0, sent + k);
          view.setFloat64(4, t0 + ((sent + k) * 1000) / rate);
          return { queue: QUEUE, payload };
        });
        sent = due;
        inflight++;
        member.client.enqueueBatch(batch).finally(() => inflight--);
      }
      if (sent >= nextEnd || sent >= jobs) {
        const w = Math.min(windows, nextEnd / window) - 1;
        ends[w] = tableSizes(sizes).then((s) => ({ ...s, load1: loadavg1() }));
        log(
          `soak: ${sent.toLocaleString()} of ${jobs.toLocaleString()} enqueued, ${started.toLocaleString()} started`,
        );
        nextEnd += window;
      }
      await sleep(TICK_MS);
    }
    report.offeredPerSec = round(jobs / ((performance.now() - t0) / 1000), 0);
    while (started < jobs) await sleep(50);
    done = true;
    await Promise.all([probing, metering]);
    for (let w = 0; w < windows; w++) {
      const from = w * window;
      const to = Math.min(jobs, from + window);
      const n = to - from;
      const s = (starts[w] ?? []).sort((a, b) => a - b);
      const c = (claims[w] ?? []).sort((a, b) => a - b);
      report.windows.push({
        from,
        to,
        claimP50Ms: round(percentile(c, 50), 3),
        claimP99Ms: round(percentile(c, 99), 3),
        startP50Ms: round(percentile(s, 50)),
        startP99Ms: round(percentile(s, 99)),
        postgresCpuUsPerJob: round(((pgCpu[w] ?? 0) * 1e6) / n, 1),
        gatewayCpuUsPerJob: round(((gatewayCpu[w] ?? 0) * 1e6) / n, 1),
        ...((await ends[w]) as WindowEnd),
      });
    }
    const first = report.windows[0];
    const last = report.windows.at(-1);
    if (first && last)
      report.lastOverFirst = {
        claimP50: round(last.claimP50Ms / first.claimP50Ms),
        postgresCpu: round(last.postgresCpuUsPerJob / first.postgresCpuUsPerJob),
      };
  } catch (err) {
    report.error = err instanceof Error ? err.message : String(err);
    log(`soak: FAILED ${report.error}`);
  } finally {
    await worker?.stop({ graceMs: 0 }).catch(() => {});
    await fleet?.stop();
    await Promise.all([admin.end(), probe.end(), sizes.end()].map((p) => p.catch(() => {})));
    await db.drop();
  }
  return report;
}

export const soakScenario: Scenario<SoakReport> = {
  name: "soak",
  summary: "taskq at a steady rate (--rate, default 3000/s) for --jobs (default 1,000,000) with retention on",
  defaultJobs: 1_000_000,
  run: soak,
  table: (r) =>
    [
      `soak: ${r.jobs.toLocaleString()} jobs offered at ${r.ratePerSec}/s (sustained ${r.offeredPerSec}/s), concurrency ${r.concurrency}, autovacuum ${r.autovacuum}, ${r.machine.cpus} cpus`,
      textTable([
        [
          "jobs",
          "claim p50/p99 ms",
          "start p50/p99 ms",
          "pg µs/job",
          "gw µs/job",
          "live MB (idx)",
          "history MB (idx)",
          "live dead",
          "autovac",
          "load",
        ],
        ...r.windows.map((w) => [
          `${w.from.toLocaleString()}-${w.to.toLocaleString()}`,
          `${w.claimP50Ms} / ${w.claimP99Ms}`,
          `${w.startP50Ms} / ${w.startP99Ms}`,
          String(w.postgresCpuUsPerJob),
          String(w.gatewayCpuUsPerJob),
          `${w.liveTableMb} (${w.liveIndexesMb})`,
          `${w.historyTableMb} (${w.historyIndexesMb})`,
          String(w.liveDeadRows),
          String(w.autovacuums),
          String(w.load1),
        ]),
      ]),
      `last window over first: claim p50 ${r.lastOverFirst.claimP50}x, Postgres CPU per job ${r.lastOverFirst.postgresCpu}x`,
      ...(r.error ? [`FAILED: ${r.error}`] : []),
    ].join("\n"),
  failed: (r) => r.error !== undefined,
};
