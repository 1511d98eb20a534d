// A service in ESM TypeScript that installed @taskq/sdk: enqueue a job, run it with a Worker, wait
// until it succeeded, stop. Type-checked against the shipped .d.ts, then run (.ci/packages).
import { Client, type JobContext, Worker } from "@taskq/sdk";
import { JobState } from "@taskq/sdk/proto";

const baseUrl = process.env.TASKQ_GRPC_URL ?? "http://127.0.0.1:7070";

const client = new Client({ baseUrl });
const { jobId } = await client.enqueue({ queue: "esm-emails", payload: { to: "ada" } });

const worker = new Worker({
  baseUrl,
  queues: ["esm-emails"],
  handler: async (job: JobContext) => {
    const { to } = job.json<{ to: string }>();
    return { sent: to };
  },
});
await worker.start();

let job = await client.getJob(jobId);
for (let i = 0; job.state !== JobState.SUCCEEDED && i < 300; i++) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  job = await client.getJob(jobId);
}
await worker.stop();
if (job.state !== JobState.SUCCEEDED) throw new Error(`job ${jobId} did not succeed: state ${job.state}`);
console.log(`esm: job ${jobId} succeeded: ${new TextDecoder().decode(job.result)}`);
