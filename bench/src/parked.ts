// `bench parked`: what a big fleet of idle workers costs a gateway. One production-mode gateway, built
// and on plain node as users run it (gateway-fleet.ts; `npm run build` first), on a throwaway database;
// a child process (parked-client.ts) opens `--streams` Claim streams (default 10,000) over
// `--connections` (20) HTTP/2 connections, plain grpc-js workers each polling an empty queue with
// max_wait 60 s. Reported: the gateway's resident memory before and with them parked (VmRSS from
// /proc), its CPU while they stay parked for `--seconds` (10) with nothing enqueued, and then enqueue →
// job received by one of them for `--jobs` (200) jobs enqueued one at a time at `--rate` (20) a second,
// through the SDK Client or (`--enqueue sql`) in transactions of the bench's own (received is stamped in
// the client process as the answer arrives; both processes read one wall clock).
import { type ChildProcess, fork } from "node:child_process";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { Client } from "@taskq/sdk";
import pg from "pg";
import { type GatewayFleet, procCpuSeconds, startGatewayFleet } from "./gateway-fleet.js";
import { createThrowawayDatabase, loadavg1, type MachineInfo, machineInfo } from "./infra.js";
import { percentile } from "./latency.js";
import type { ParkedClientMessage } from "./parked-client.js";
import { waitUntil } from "./peers/adapter.js";
import { type Scenario, type ScenarioOptions, textTable } from "./scenario.js";
import { BENCH_TOKEN } from "./token.js";

const QUEUE = "parked";
const CLIENT = fileURLToPath(new URL("./parked-client.ts", import.meta.url));
/** After the last stream's first poll, time for the gateway to take them all in before memory is read. */
const SETTLE_MS = 5_000;

export interface ParkedReport {
  scenario: "parked";
  machine: MachineInfo;
  streams: number;
  connections: number;
  /** Gateway resident memory, MB: started and idle, then with every stream parked. */
  rssIdleMb: number;
  rssParkedMb: number;
  /** (parked − idle) / streams, KB. */
  kbPerStream: number;
  /** The gateway's CPU while every stream stayed parked and nothing was enqueued, % of one core. */
  idleCpuPercent: number;
  /** The client process's resident memory with every stream parked, MB (not the gateway's cost). */
  clientRssMb: number;
  jobs: number;
  ratePerSec: number;
  /** How the jobs were enqueued (`--enqueue`): the gateway's RPC, or SQL in a transaction of one's own. */
  enqueueVia: "rpc" | "sql";
  /** Enqueue (before the call) → the job's answer arrived at a parked stream, ms. */
  receivedP50Ms: number;
  receivedP99Ms: number;
  receivedMaxMs: number;
  /** Jobs not received within 10 s of the last enqueue. */
  lost: number;
  streamErrors: number;
  loadavg1: { start: number; end: number };
  error?: string;
}

/**
 * Enqueues one stamped job: through the gateway's RPC (which hands it to a poll parked there in its own
 * statement), or in a transaction of the bench's own on the database (`taskq.enqueue`), as an
 * application does, so the job reaches the parked polls as every other gateway's would: by the
 * notification its commit sends.
 */
async function enqueuer(via: "rpc" | "sql", databaseUrl: string, client: Client) {
  if (via === "rpc") {
    return Object.assign(() => client.enqueue({ queue: QUEUE, payload: stamp() }).then(() => undefined), {
      close: async () => undefined,
    });
  }
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  return Object.assign(
    () =>
      db.query("select taskq.enqueue($1, $2::bytea)", [QUEUE, Buffer.from(stamp())]).then(() => undefined),
    { close: () => db.end() },
  );
}

/** A job's payload: the wall-clock ms it was enqueued at, read back by parked-client.ts. */
const stamp = () =>
  new TextEncoder().encode(JSON.stringify({ sentAt: performance.timeOrigin + performance.now() }));
const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Resident memory of a process, MB, from /proc; NaN where unavailable. */
function rssMb(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+) kB/m);
    return line ? round(Number(line[1]) / 1024, 1) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

async function parked(options: ScenarioOptions): Promise<ParkedReport> {
  const { log, config } = options;
  const streams = options.streams ?? 10_000;
  const connections = options.connections ?? 20;
  const seconds = options.seconds ?? 10;
  const rate = options.rate ?? 20;
  const jobs = options.jobsGiven ? options.jobs : 200;
  const report: ParkedReport = {
    scenario: "parked",
    machine: machineInfo(),
    streams,
    connections,
    rssIdleMb: Number.NaN,
    rssParkedMb: Number.NaN,
    kbPerStream: Number.NaN,
    idleCpuPercent: Number.NaN,
    clientRssMb: Number.NaN,
    jobs,
    ratePerSec: rate,
    enqueueVia: options.enqueueVia ?? "rpc",
    receivedP50Ms: Number.NaN,
    receivedP99Ms: Number.NaN,
    receivedMaxMs: Number.NaN,
    lost: jobs,
    streamErrors: 0,
    loadavg1: { start: loadavg1(), end: Number.NaN },
  };
  const db = await createThrowawayDatabase(config.pgAdminUrl, "parked");
  let fleet: GatewayFleet | undefined;
  let client: ChildProcess | undefined;
  try {
    fleet = await startGatewayFleet({
      count: 1,
      databaseUrl: db.url,
      redisUrl: config.redisUrl,
      log,
      built: true,
    });
    const gateway = fleet.members[0];
    if (!gateway) throw new Error("no gateway");
    await gateway.client.enqueue({ queue: QUEUE, payload: stamp() });
    await sleep(SETTLE_MS);
    report.rssIdleMb = rssMb(gateway.pid);

    let polling = false;
    const latencies: number[] = [];
    client = fork(
      CLIENT,
      [
        `--url=${gateway.grpcUrl}`,
        `--token=${BENCH_TOKEN}`,
        `--queue=${QUEUE}`,
        `--streams=${streams}`,
        `--connections=${connections}`,
      ],
      {
        execArgv: ["--conditions=taskq-source", "--import", "tsx"],
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      },
    );
    client.on("message", (m: ParkedClientMessage) => {
      if (m.type === "polling") polling = true;
      else if (m.type === "error") report.streamErrors++;
      else if (m.type === "job" && m.sentAt !== undefined && m.receivedAt !== undefined)
        latencies.push(m.receivedAt - m.sentAt);
    });
    await waitUntil(async () => polling, 50, 120_000);
    // The one job enqueued above (so the queue exists) goes to one of the first streams; what follows is idle.
    await waitUntil(async () => latencies.length >= 1, 20, 120_000);
    latencies.length = 0;
    log(`parked: ${streams} streams sent their first poll; waiting ${SETTLE_MS} ms`);
    await sleep(SETTLE_MS);
    report.rssParkedMb = rssMb(gateway.pid);
    report.clientRssMb = rssMb(client.pid);
    report.kbPerStream = round(((report.rssParkedMb - report.rssIdleMb) * 1024) / streams, 1);
    const cpu0 = procCpuSeconds(gateway.pid);
    const t0 = performance.now();
    await sleep(seconds * 1000);
    report.idleCpuPercent = round(
      ((procCpuSeconds(gateway.pid) - cpu0) * 100_000) / (performance.now() - t0),
      2,
    );
    log(`parked: rss ${report.rssIdleMb} → ${report.rssParkedMb} MB, idle cpu ${report.idleCpuPercent} %`);

    const enqueue = await enqueuer(options.enqueueVia ?? "rpc", db.url, gateway.client);
    const start = performance.now();
    try {
      for (let i = 0; i < jobs; i++) {
        const due = start + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        await enqueue();
      }
    } finally {
      await enqueue.close();
    }
    await waitUntil(async () => latencies.length >= jobs, 20, 10_000).catch(() => undefined);
    const sorted = [...latencies].sort((a, b) => a - b);
    report.lost = jobs - sorted.length;
    report.receivedP50Ms = round(percentile(sorted, 50));
    report.receivedP99Ms = round(percentile(sorted, 99));
    report.receivedMaxMs = round(sorted.at(-1) ?? Number.NaN);
  } catch (err) {
    report.error = err instanceof Error ? err.message : String(err);
  } finally {
    client?.kill();
    await fleet?.stop();
    await db.drop();
    report.loadavg1.end = loadavg1();
  }
  return report;
}

export const parkedScenario: Scenario<ParkedReport> = {
  name: "parked",
  summary: "10,000 idle grpc-js workers parked on one gateway: its memory, idle CPU, wake latency",
  run: parked,
  table: (r) =>
    textTable([
      [
        "streams",
        "conns",
        "rss idle MB",
        "rss parked MB",
        "KB/stream",
        "idle cpu %",
        "enqueue",
        "p50 ms",
        "p99 ms",
        "max ms",
        "lost",
        "load",
      ],
      [
        String(r.streams),
        String(r.connections),
        String(r.rssIdleMb),
        String(r.rssParkedMb),
        String(r.kbPerStream),
        String(r.idleCpuPercent),
        `${r.enqueueVia} ${r.ratePerSec}/s`,
        String(r.receivedP50Ms),
        String(r.receivedP99Ms),
        String(r.receivedMaxMs),
        String(r.lost),
        `${r.loadavg1.start}→${r.loadavg1.end}`,
      ],
    ]) + (r.error ? `\nerror: ${r.error}` : ""),
  readmeKey: (o) => (o.enqueueVia === "sql" ? "parked-sql" : "parked"),
  failed: (r) => r.error !== undefined || r.lost > 0 || r.streamErrors > 0,
};
