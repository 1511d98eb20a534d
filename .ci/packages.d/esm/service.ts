// A service in ESM TypeScript that installed @taskq/sdk: enqueue a job, run it with a Worker, wait
// until it succeeded, stop. Type-checked against the shipped .d.ts, then run (.ci/packages).
import { createClient } from "@connectrpc/connect";
import { Client, createTransport, type JobContext, Worker } from "@taskq/sdk";
import { AdminService, JobState } from "@taskq/sdk/proto";

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

// A stubs-level client from @taskq/sdk/proto, as the API page shows: pause a queue, read it back.
const admin = createClient(AdminService, createTransport({ baseUrl }));
await admin.pauseQueue({ queue: "esm-emails" });
const { queue } = await admin.getQueue({ queue: "esm-emails" });
if (!queue?.paused) throw new Error("AdminService.pauseQueue did not pause esm-emails");
console.log("esm: paused esm-emails through AdminService");
