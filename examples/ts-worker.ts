// A TypeScript worker built on the taskq SDK.
//
// It enqueues a few "send an email" jobs with the Client, then runs a Worker on the `emails` queue with
// five job slots. One job fails on its first attempt with a retryable error, to show a retry; every
// job then succeeds and returns a small JSON result.
//
//   npm start                                                        # the gateway, in another terminal
//   node --conditions=taskq-source --import tsx examples/ts-worker.ts            # Ctrl-C to stop
//   node --conditions=taskq-source --import tsx examples/ts-worker.ts --once 3   # stop after 3 jobs
//
// Environment: TASKQ_GRPC_URL (default http://127.0.0.1:7070), TASKQ_TOKEN (a bearer token, when the
// gateway requires one), TASKQ_QUEUE (default "emails"). For an https:// gateway whose certificate a
// private CA signed, TASKQ_CA_FILE (that CA, PEM); with mutual TLS, TASKQ_CERT_FILE and TASKQ_KEY_FILE
// (this worker's client certificate and key).
//
// The SDK never touches process-wide state; installing signal handlers is the application's job, and
// this file does it: SIGINT/SIGTERM call `worker.stop()`, which lets running handlers finish.

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Client, createTransport, type JobContext, type Logger, RetryAfterError, Worker } from "@taskq/sdk";

const { values } = parseArgs({ options: { once: { type: "string" } } });
const once = values.once === undefined ? undefined : Number(values.once);
if (once !== undefined && !(Number.isInteger(once) && once > 0)) {
  console.error(`--once wants a positive integer, got ${values.once}`);
  process.exit(2);
}

const baseUrl = process.env.TASKQ_GRPC_URL || "http://127.0.0.1:7070";
const token = process.env.TASKQ_TOKEN || undefined;
const queue = process.env.TASKQ_QUEUE || "emails";

const pem = (name: string) => (process.env[name] ? readFileSync(process.env[name]) : undefined);
const tls = { ca: pem("TASKQ_CA_FILE"), cert: pem("TASKQ_CERT_FILE"), key: pem("TASKQ_KEY_FILE") };

// One HTTP/2 connection shared by the producer client and the worker.
const transport = createTransport({ baseUrl, token, tls });
const client = new Client({ baseUrl, transport });

// Enqueue a few jobs: as many as we will wait for with --once, five otherwise.
const recipients = Array.from({ length: once ?? 5 }, (_, i) => `user${i + 1}@example.com`);
const enqueued = await client.enqueueBatch(
  recipients.map((to, i) => ({
    queue,
    payload: { to, subject: "Welcome to taskq", flaky: i === 0 },
    maxAttempts: 5,
  })),
);
for (const [i, r] of enqueued.entries()) console.log(`enqueued job ${r.jobId} for ${recipients[i]}`);

interface Email {
  to: string;
  subject: string;
  /** The first job pretends its mail server is down once. */
  flaky: boolean;
}

async function sendEmail(job: JobContext): Promise<object> {
  const email = job.json<Email>();
  console.log(
    `job ${job.id} attempt ${job.attempt}/${job.maxAttempts}: sending "${email.subject}" to ${email.to}`,
  );
  if (email.flaky && job.attempt === 1) {
    // Any thrown error fails the attempt and is retried (NonRetryableError would fail the job for
    // good). RetryAfterError picks the delay instead of the gateway's exponential backoff.
    throw new RetryAfterError("mail server busy, try again shortly", 200);
  }
  // Pretend to work; honour job.signal so a lost lease, a cancel or a shutdown stops the handler.
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, 100);
    job.signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(job.signal.reason);
      },
      { once: true },
    );
  });
  console.log(`job ${job.id} attempt ${job.attempt}: sent to ${email.to}`);
  return { deliveredTo: email.to, at: new Date().toISOString() };
}

// The SDK logs through any (fields, message) logger; print warnings and errors only.
const print =
  (level: string) =>
  (fields: Record<string, unknown>, message: string): void =>
    console.error(`[taskq ${level}] ${message} ${JSON.stringify(fields)}`);
const logger: Logger = { debug: () => {}, info: () => {}, warn: print("warn"), error: print("error") };

const worker = new Worker({
  baseUrl,
  transport,
  queues: [queue],
  concurrency: 5,
  logger,
  handler: async (job) => {
    try {
      return await sendEmail(job);
    } catch (err) {
      console.log(`job ${job.id} attempt ${job.attempt} failed: ${(err as Error).message}`);
      throw err;
    }
  },
});

let stopping = false;
const stop = (why: string): void => {
  if (stopping) return;
  stopping = true;
  console.log(`${why}: stopping the worker (running handlers may finish)`);
  void worker.stop();
};
process.once("SIGINT", () => stop("SIGINT"));
process.once("SIGTERM", () => stop("SIGTERM"));

// With --once N, stop once N successes have been accepted by the gateway.
const watch =
  once === undefined
    ? undefined
    : setInterval(() => {
        if (worker.snapshot().succeeded >= once) stop(`${once} jobs done`);
      }, 50);

console.log(`worker claiming from "${queue}" at ${baseUrl}${once ? ` until ${once} jobs succeed` : ""}`);
await worker.run(); // resolves once stop() has drained the worker
if (watch) clearInterval(watch);

const s = worker.snapshot();
console.log(`worker stopped: claimed ${s.claimed}, succeeded ${s.succeeded}, failed attempts ${s.failed}`);
