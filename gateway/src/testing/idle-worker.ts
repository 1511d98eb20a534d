import { silentLogger, Worker } from "@taskq/sdk";
import { onTestFinished } from "vitest";

/** A started SDK worker whose jobs do nothing, polling at least every second; it stops with the test. */
export async function idleWorker(opts: {
  baseUrl: string;
  workerId: string;
  queues: string[];
  concurrency: number;
  prefetch?: number;
}): Promise<Worker> {
  const w = new Worker({
    ...opts,
    maxWaitMs: 1000,
    shutdownGraceMs: 0,
    logger: silentLogger,
    handler: async () => {},
  });
  onTestFinished(() => w.stop());
  await w.start();
  return w;
}
