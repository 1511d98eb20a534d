// A taskq worker written against the wire contract only: plain @grpc/grpc-js stubs loaded at run time
// from proto/*.proto, no SDK, no generated code. Read it as a recipe for a worker in any language with
// a gRPC library: the same three streams, the same fields.
//
//   npm start                                              # the gateway, in another terminal
//   node examples/grpc-js-worker.mjs                       # Ctrl-C to stop
//   node examples/grpc-js-worker.mjs --once 3              # exit after settling 3 jobs
//
// Environment: TASKQ_GRPC_URL (default http://127.0.0.1:7070), TASKQ_QUEUES (comma-separated, default
// "emails"), TASKQ_LEASE_MS (lease to ask for, default 15000), TASKQ_WORK_MS (pretend work per job,
// default 200), TASKQ_TOKEN (a bearer token, when the gateway requires one). Enqueue jobs with the SDK, the CLI or examples/claim-once.sh.
// An https:// TASKQ_GRPC_URL connects with TLS: TASKQ_CA_FILE is the CA to trust (PEM; default the
// system's), TASKQ_CERT_FILE and TASKQ_KEY_FILE this worker's client certificate for mutual TLS.
//
// The protocol, in short:
//   Claim     — each request is a poll {queues, max_jobs, max_wait}; the gateway answers each poll with
//               exactly one response: jobs, throttled verdicts {queue, reason, retry_after}, or nothing
//               once max_wait has passed. A verdict is not an error: skip that queue for retry_after.
//   Heartbeat — {leases: [{job_id, attempt}]} extends leases; one status per lease comes back.
//   Settle    — {settlements: [{lease, success | failure | cancelled}]}; one result per settlement.
// A lease is (job_id, attempt): the attempt is the fencing token and goes into every heartbeat/settle.

import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const { values } = parseArgs({ options: { once: { type: "string" } } });
const once = values.once === undefined ? Number.POSITIVE_INFINITY : Number(values.once);
if (!(once > 0)) throw new Error(`--once wants a positive integer, got ${values.once}`);
const url = process.env.TASKQ_GRPC_URL || "http://127.0.0.1:7070";
const target = url.replace(/^https?:\/\//, "");
const queues = (process.env.TASKQ_QUEUES || "emails").split(",");
const leaseMs = Number(process.env.TASKQ_LEASE_MS || 15_000);
const workMs = Number(process.env.TASKQ_WORK_MS || 200);
const maxJobs = 5;

// 1. Load the contract. keepCase keeps proto field names (max_jobs, retry_after); 64-bit integers
//    (Duration/Timestamp seconds) arrive as strings, enums as their names.
const definition = protoLoader.loadSync("taskq/v1/worker.proto", {
  includeDirs: [fileURLToPath(new URL("../proto/", import.meta.url))],
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const { WorkerService } = grpc.loadPackageDefinition(definition).taskq.v1;
// Plain-text HTTP/2 (h2c), as `npm start` serves it; TLS for https:// (ALPN h2), trusting TASKQ_CA_FILE.
const pem = (name) => (process.env[name] ? readFileSync(process.env[name]) : null);
const credentials = url.startsWith("https://")
  ? grpc.credentials.createSsl(pem("TASKQ_CA_FILE"), pem("TASKQ_KEY_FILE"), pem("TASKQ_CERT_FILE"))
  : grpc.credentials.createInsecure();
const worker = new WorkerService(target, credentials);

// 2. Each stream answers requests one for one and in order, so a FIFO of pending promises pairs every
//    response with its request.
function orderedStream(call) {
  const pending = [];
  call.on("data", (res) => pending.shift()?.resolve(res));
  call.on("error", (err) => {
    for (const p of pending.splice(0)) p.reject(err);
  });
  return {
    call,
    send: (req) =>
      new Promise((resolve, reject) => {
        pending.push({ resolve, reject });
        call.write(req);
      }),
  };
}
// A gateway with tokens wants `authorization: Bearer <token>` on every call: in gRPC, call metadata.
const metadata = new grpc.Metadata();
if (process.env.TASKQ_TOKEN) metadata.set("authorization", `Bearer ${process.env.TASKQ_TOKEN}`);
const claims = orderedStream(worker.Claim(metadata));
const heartbeats = orderedStream(worker.Heartbeat(metadata));
const settles = orderedStream(worker.Settle(metadata));

const ms = (d) => Number(d?.seconds ?? 0) * 1000 + Math.round((d?.nanos ?? 0) / 1e6);
const duration = (millis) => ({ seconds: Math.floor(millis / 1000), nanos: (millis % 1000) * 1e6 });
const sleep = (millis) => new Promise((resolve) => setTimeout(resolve, millis));
const leaseKey = (lease) => `${lease.job_id}/${lease.attempt}`;

// 3. Heartbeat every leased job each third of a lease, so no lease lapses between two beats.
const running = new Map(); // "job_id/attempt" -> { lease, lost, cancel }
const beat = setInterval(async () => {
  if (running.size === 0) return;
  const leases = [...running.values()].map((r) => r.lease);
  const res = await heartbeats.send({ leases, extend_by: duration(leaseMs) }).catch(() => null);
  for (const status of res?.leases ?? []) {
    const r = running.get(leaseKey(status.lease));
    if (!r) continue;
    if (status.state === "LEASE_STATE_LEASE_LOST") r.lost = true; // someone else may run it now
    if (status.state === "LEASE_STATE_CANCEL_REQUESTED") r.cancel = true;
    console.log(`heartbeat job ${status.lease.job_id}: ${status.state}`);
  }
}, leaseMs / 3);

// 4. Run one job, then settle it with its lease.
async function run(job) {
  const lease = { job_id: job.id, attempt: job.attempt };
  const r = { lease, lost: false, cancel: false };
  running.set(leaseKey(lease), r);
  const started = Date.now();
  console.log(
    `job ${job.id} attempt ${job.attempt} on ${job.queue}: ${job.payload.toString("utf8")}` +
      ` (${job.content_type || "no content type"})`,
  );
  await sleep(workMs); // the real work goes here
  running.delete(leaseKey(lease));
  if (r.lost) return console.log(`job ${job.id}: lease lost, not settling`);
  const outcome = r.cancel
    ? { cancelled: { reason: "cancel requested" } }
    : { success: { result: Buffer.from(JSON.stringify({ ok: true, by: "grpc-js-worker" })) } };
  // Failures look like: { failure: { type: "SmtpError", message: "…", retryable: true } }
  const res = await settles.send({
    settlements: [{ lease, ...outcome, duration: duration(Date.now() - started) }],
  });
  const [result] = res.results;
  console.log(`job ${job.id} settled: ${result.status} -> ${result.state}`);
  return result.status === "SETTLE_STATUS_ACCEPTED";
}

// 5. The claim loop: poll the queues that are not sleeping off a verdict, run what comes back. (A
//    production worker would also reopen a failed stream with backoff; this one just exits.)
let stopping = false;
let settled = 0;
const sleepingUntil = new Map(); // queue -> epoch ms
const workerId = `${hostname()}/${process.pid}/grpc-js-example`;

async function loop() {
  while (!stopping && settled < once) {
    const now = Date.now();
    const awake = queues.filter((q) => (sleepingUntil.get(q) ?? 0) <= now);
    if (awake.length === 0) {
      await sleep(Math.min(...sleepingUntil.values()) - now);
      continue;
    }
    const res = await claims.send({
      queues: awake,
      max_jobs: Math.min(maxJobs, once - settled),
      max_wait: duration(10_000), // long poll: answered early when a job is enqueued
      worker_id: workerId,
      lease_duration: duration(leaseMs),
    });
    for (const v of res.throttled) {
      // e.g. PAUSED, BREAKER_OPEN, MAX_RUNNING, THROTTLE, RATE_LIMIT: sleep exactly retry_after.
      console.log(`queue ${v.queue} throttled (${v.reason}), retry in ${ms(v.retry_after)} ms`);
      sleepingUntil.set(v.queue, Date.now() + ms(v.retry_after));
    }
    const ok = await Promise.all(res.jobs.map(run));
    settled += ok.filter(Boolean).length;
  }
}

function shutdown(signal) {
  console.log(`${signal}: stopping`);
  stopping = true;
  claims.call.cancel(); // ends a long poll at once; jobs it was about to hand out go back
}
process.once("SIGINT", shutdown);
process.once("SIGTERM", shutdown);

console.log(`grpc-js worker polling ${queues.join(", ")} at ${target}`);
try {
  await loop();
} catch (err) {
  if (!stopping) throw err;
} finally {
  clearInterval(beat);
  claims.call.end();
  heartbeats.call.end();
  settles.call.end();
  worker.close();
}
console.log(`stopped after settling ${settled} jobs`);
