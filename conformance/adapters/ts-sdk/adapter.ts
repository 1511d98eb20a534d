// The conformance adapter of the TypeScript SDK: maps StartWorker onto WorkerOptions and runs the
// generic handler. Run: node --conditions=taskq-source --import tsx conformance/adapters/ts-sdk/adapter.ts
import { durationMs } from "@bufbuild/protobuf/wkt";
import { NonRetryableError, Worker } from "@taskq/sdk";
import { ProgramSide, parseInstruction, runInstruction } from "../../src/protocol/program-side.js";

const side = new ProgramSide();
const start = await side.start();
const ms = (d: Parameters<typeof durationMs>[0] | undefined) => (d ? durationMs(d) : undefined);

const worker = new Worker({
  baseUrl: start.gatewayUrl,
  token: start.token || undefined,
  queues: start.queues,
  concurrency: start.concurrency || undefined,
  workerId: start.workerId || undefined,
  leaseMs: ms(start.leaseDuration),
  maxWaitMs: ms(start.maxWait),
  shutdownGraceMs: ms(start.shutdownGrace),
  reconnect: {
    ...(start.reconnectInitial && { initialMs: durationMs(start.reconnectInitial) }),
    ...(start.reconnectMax && { maxMs: durationMs(start.reconnectMax) }),
  },
  async handler(job) {
    const ins = parseInstruction(job.payload);
    const finished = await runInstruction(side, job, ins, job.signal);
    if (!finished) throw job.signal.reason;
    const o = ins.outcome;
    if (o.case !== "fail") return o.value?.result ?? "";
    const err = o.value.retryable ? new Error(o.value.message) : new NonRetryableError(o.value.message);
    err.name = o.value.type;
    if (o.value.retryAfter) Object.assign(err, { retryAfterMs: durationMs(o.value.retryAfter) });
    throw err;
  },
});
await worker.start();
side.ready("taskq-sdk-ts");
const stop = await side.stop();
await worker.stop({ graceMs: ms(stop.grace) });
side.stoppedAndExit();
