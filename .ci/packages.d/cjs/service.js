// A service in CommonJS JavaScript that loads @taskq/sdk with require(): enqueue a job, run it with a
// Worker, wait until it succeeded, stop. Type-checked (checkJs) against the shipped .d.ts, then run.
const { Client, Worker } = require("@taskq/sdk");
const { JobState } = require("@taskq/sdk/proto");

const baseUrl = process.env.TASKQ_GRPC_URL ?? "http://127.0.0.1:7070";

async function main() {
  const client = new Client({ baseUrl });
  const { jobId } = await client.enqueue({ queue: "cjs-emails", payload: { to: "grace" } });

  const worker = new Worker({
    baseUrl,
    queues: ["cjs-emails"],
    handler: async (job) => {
      /** @type {{ to: string }} */
      const { to } = job.json();
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
  console.log(`cjs: job ${jobId} succeeded: ${new TextDecoder().decode(job.result)}`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
