import { parseArgs } from "node:util";
import { adaptiveScenario } from "./adaptive.js";
import { breakerScenario } from "./breaker.js";
import { loadBenchConfig } from "./config.js";
import { consoleScenario } from "./console.js";
import { drainScenario } from "./drain.js";
import { drainGridScenario } from "./drain-grid.js";
import { fairnessScenario } from "./fairness.js";
import { gatesScenario } from "./gates.js";
import { loadavg1, machineInfo } from "./infra.js";
import { parkedScenario } from "./parked.js";
import { checkSection, commandLine, README_PATH, stamp, writeSection } from "./readme-section.js";
import type { Scenario, ScenarioOptions } from "./scenario.js";
import { soakScenario } from "./soak.js";
import { storeScenario } from "./store.js";

/** Every runnable scenario by name. */
const scenarios: Record<string, Scenario<object>> = {
  [drainScenario.name]: drainScenario,
  [fairnessScenario.name]: fairnessScenario,
  [gatesScenario.name]: gatesScenario,
  [breakerScenario.name]: breakerScenario,
  [adaptiveScenario.name]: adaptiveScenario,
  [consoleScenario.name]: consoleScenario,
  [storeScenario.name]: storeScenario,
  [soakScenario.name]: soakScenario,
  [parkedScenario.name]: parkedScenario,
};

function usage(): string {
  const list = Object.values(scenarios)
    .map((s) => `  ${s.name.padEnd(10)} ${s.summary}`)
    .join("\n");
  return `usage: npm run bench -- <scenario> [options]

scenarios:
${list}

options:
  --json             print one JSON object on stdout (progress goes to stderr)
  --markdown         also write the results into bench/README.md, between the scenario's markers
                     (<!-- bench:KEY:start --> … <!-- bench:KEY:end -->; KEY drain-grid, drain-latency,
                     fairness, gates, …), stamped with the command, machine, load, date and commit
  --jobs N           jobs per timed run (default 20000; soak: 1000000; fairness: 200)
  --concurrency N    jobs in flight per worker (default 50; fairness: 5 slots per worker)
  --warmup N         jobs drained untimed first, per peer (default 1000; 0 skips; fairness: any
                     other value runs each worker once untimed)
  --runs N           timed runs per peer, interleaved across peers, median reported (default 1)
  --only a,b         run only these peers (drain: also graphile-worker-localQueue-small, the fast
                     path with a local queue as large as the concurrency; gates: these parts of
                     throttle,claimRate,maxRunning,flowKey,ramp,cost)
  --seconds N        gates: length of each accuracy window (default 10);
                     breaker: length of the downstream outage (default 30);
                     parked: how long the streams stay parked while idle CPU is read (default 10);
                     adaptive: length of each run at full capacity (default 60)
  --gateways N       gates, breaker, adaptive: gateway child processes sharing the database and Redis
                     (default 3)
  --job-ms N         drain: each handler takes N ms (a timer) instead of returning at once (default 0;
                     fairness: 100)
  --prefetch N       drain: the taskq-prefetch worker holds up to N jobs beyond its free slots
                     (default 500, graphile-worker's documented local queue; 0 holds none), beside
                     taskq, the worker given no prefetch option (the SDK's default).
                     fairness: the worker compared with the default (default 0).
                     gates, breaker: every worker's prefetch (default 0)
  --rate N           soak: jobs offered per second (default 3000); parked: jobs enqueued per second
                     to the parked streams (default 20)
  --streams N        parked: Claim streams held open on the gateway (default 10000)
  --connections N    parked: HTTP/2 connections those streams share (default 20)
  --enqueue rpc|sql  parked: enqueue through the gateway's RPC (default), or with taskq.enqueue in a
                     transaction of the bench's own, which reaches the parked polls by notification
  --grid             drain: concurrency 1, 10, 50 and 200 in one run (3,000, 10,000, 20,000 and 20,000
                     jobs unless --jobs), taskq beside graphile-worker with and without its local queue
                     and BullMQ unless --only; one table
  --latency          drain: also measure enqueue→handler-start p50/p99 at 1000 and 5000 jobs/s,
                     --runs rounds interleaved across peers, medians
  --help             this text

env: TASKQ_BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
     TASKQ_BENCH_REDIS_URL (default redis://127.0.0.1:6379/9; db 0 is refused)`;
}

function positiveInt(name: string, raw: string | undefined, fallback: number, allowZero = false): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < (allowZero ? 0 : 1)) {
    throw new Error(`--${name} must be an integer ≥ ${allowZero ? 0 : 1}, got "${raw}"`);
  }
  return n;
}

function enqueueVia(raw: string | undefined): "rpc" | "sql" | undefined {
  if (raw === undefined || raw === "rpc" || raw === "sql") return raw;
  throw new Error(`--enqueue must be rpc or sql, got "${raw}"`);
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: "boolean", default: false },
      jobs: { type: "string" },
      concurrency: { type: "string" },
      warmup: { type: "string" },
      runs: { type: "string" },
      only: { type: "string" },
      latency: { type: "boolean", default: false },
      seconds: { type: "string" },
      gateways: { type: "string" },
      "job-ms": { type: "string" },
      prefetch: { type: "string" },
      rate: { type: "string" },
      streams: { type: "string" },
      connections: { type: "string" },
      enqueue: { type: "string" },
      grid: { type: "boolean", default: false },
      markdown: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  const name = positionals[0];
  const scenario =
    name === "drain" && values.grid ? drainGridScenario : name === undefined ? undefined : scenarios[name];
  if (!scenario || positionals.length > 1) {
    process.stderr.write(
      `${name === undefined ? "missing scenario" : `unknown scenario "${name}"`}\n\n${usage()}\n`,
    );
    return 2;
  }
  const options: ScenarioOptions = {
    jobs: positiveInt("jobs", values.jobs, scenario.defaultJobs ?? 20_000),
    jobsGiven: values.jobs !== undefined,
    concurrency: positiveInt("concurrency", values.concurrency, scenario.defaultConcurrency ?? 50),
    warmup: positiveInt("warmup", values.warmup, 1_000, true),
    runs: positiveInt("runs", values.runs, 1),
    rate: values.rate === undefined ? undefined : positiveInt("rate", values.rate, 3_000),
    jobMs: positiveInt("job-ms", values["job-ms"], scenario.defaultJobMs ?? 0, true),
    prefetch: values.prefetch === undefined ? undefined : positiveInt("prefetch", values.prefetch, 0, true),
    latency: values.latency,
    // Each scenario has its own default (gates 10, breaker 30).
    seconds: values.seconds === undefined ? undefined : positiveInt("seconds", values.seconds, 10),
    gateways: positiveInt("gateways", values.gateways, 3),
    streams: values.streams === undefined ? undefined : positiveInt("streams", values.streams, 10_000),
    connections:
      values.connections === undefined ? undefined : positiveInt("connections", values.connections, 20),
    enqueueVia: enqueueVia(values.enqueue),
    only: values.only ? values.only.split(",").map((s) => s.trim()) : null,
    config: loadBenchConfig(process.env),
    log: (message) => process.stderr.write(`[bench] ${message}\n`),
  };
  const readmeKey = scenario.readmeKey?.(options) ?? scenario.name;
  if (values.markdown) checkSection(readmeKey);
  const machine = machineInfo();
  const startedAt = new Date();
  const report = await scenario.run(options);
  process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${scenario.table(report)}\n`);
  const failed = scenario.failed(report);
  if (values.markdown && failed) options.log(`not written to ${README_PATH}: the run failed`);
  if (values.markdown && !failed) {
    const body = scenario.markdown?.(report) ?? `\`\`\`text\n${scenario.table(report)}\n\`\`\``;
    const head = stamp({
      command: commandLine(argv, process.env),
      machine,
      loadAtEnd: loadavg1(),
      startedAt,
      tookMs: Date.now() - startedAt.getTime(),
    });
    writeSection(readmeKey, `${head}\n\n${body}`);
    options.log(`wrote the ${readmeKey} section of ${README_PATH}`);
  }
  return failed ? 1 : 0;
}

// A peer library's idle Postgres client that its teardown left open is ended by the database drop that
// follows (FORCE); the error it emits then is the teardown, not a failure of the run, and has no listener
// of ours to go to. Anything else still ends the process.
process.on("uncaughtException", (err: Error & { code?: string }) => {
  if (err.code === "57P01") {
    process.stderr.write(`[bench] a connection ended by the database drop: ${err.message}\n`);
    return;
  }
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
