// The README's "Five minutes" TypeScript example, exactly as the README shows it: enqueue a job with
// the Client, run it with a Worker, wait until it succeeded, stop. examples.test.ts and .ci/run run it.
//
//   npm start                                                              # in another terminal
//   node --conditions=taskq-source --import tsx examples/five-minutes.ts
//
// Environment: TASKQ_GRPC_URL (default http://127.0.0.1:7070), TASKQ_TOKEN (when the gateway needs one).
import { Client, Worker } from "@taskq/sdk";
import { JobState } from "@taskq/sdk/proto";

const baseUrl = process.env.TASKQ_GRPC_URL ?? "http://127.0.0.1:7070";
const token = process.env.TASKQ_TOKEN;

// Stands in for your mail code: any async function that gives up when the signal aborts.
async function sendMail(to: string, opts: { signal: AbortSignal }): Promise<void> {
  opts.signal.throwIfAborted();
  console.log(`sending mail to ${to}`);
}

const client = new Client({ baseUrl, token });
const { jobId } = await client.enqueue({ queue: "emails", payload: { to: "ada" } });

const worker = new Worker({
  baseUrl,
  token,
  queues: ["emails"],
  concurrency: 10,
  handler: async (job) => {
    const { to } = job.json<{ to: string }>();
    await sendMail(to, { signal: job.signal }); // aborted on lease loss, cancel or shutdown
    return { sent: true }; // the result is stored with the job
  },
});
await worker.start(); // a failing handler is logged on stderr, and the job retried

// Wait for our job, then stop: stop() lets running handlers finish within the grace period.
let job = await client.getJob(jobId);
while (job.state !== JobState.SUCCEEDED) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  job = await client.getJob(jobId);
}
console.log(`job ${jobId} succeeded: ${new TextDecoder().decode(job.result)}`);
await worker.stop();
