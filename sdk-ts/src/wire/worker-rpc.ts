import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Duration } from "@bufbuild/protobuf/wkt";
import { createClient, type Transport } from "@connectrpc/connect";
import type { ThrottledVerdict } from "../gen/taskq/v1/job_pb.js";
import {
  type HeartbeatRequestSchema,
  type HeartbeatResponse,
  WorkerService,
} from "../gen/taskq/v1/worker_pb.js";
import type { OpenStream } from "../stream.js";
import { leanClaimParts, speaksBinary } from "./binary-transports.js";
import { claimCall } from "./claim-call.js";
import { answerFromView, type ClaimResponseView } from "./claim-codec.js";
import { type ClaimedJob, jobFromMessage } from "./claimed-job.js";
import { mapAsync } from "./map-async.js";
import {
  answerFromMessage,
  decodeSettleResult,
  encodeSettlements,
  type SettleAnswer,
  type SettleEntry,
  settlementMessage,
} from "./settlement.js";
import { WorkerServiceViews } from "./worker-views.js";

/** One poll: taskq.v1.ClaimRequest's fields, its settlements as the worker queued them. */
export interface ClaimAsk {
  queues: string[];
  maxJobs: number;
  maxWait?: Duration;
  workerId?: string;
  leaseDuration?: Duration;
  settlements?: SettleEntry[];
  /** The worker's job slots and prefetch buffer, for the gateway's workers list and explain. */
  concurrency?: number;
  prefetch?: number;
}

/** One poll's answer: the jobs it brought, the verdicts of declined queues, its settlements' results. */
export interface ClaimAnswer {
  jobs: ClaimedJob[];
  throttled: ThrottledVerdict[];
  settled: SettleAnswer[];
}

/** The worker's three streams, in the worker's own terms. */
export interface WorkerRpc {
  claim: OpenStream<ClaimAsk, ClaimAnswer>;
  /** Each request is one batch of settlements; each answer holds their results in order. */
  settle: OpenStream<SettleEntry[], SettleAnswer[]>;
  heartbeat: OpenStream<MessageInitShape<typeof HeartbeatRequestSchema>, HeartbeatResponse>;
}

/** The views' calls (worker-views.ts): jobs, settlements and results as their encoded bytes. */
interface ViewCalls {
  claim: OpenStream<Omit<ClaimAsk, "settlements"> & { settlements: Uint8Array[] }, ClaimResponseView>;
  settle: OpenStream<{ settlements: Uint8Array[] }, { results: Uint8Array[] }>;
}

/**
 * WorkerService for a worker. On a transport known to speak binary protobuf (built by createTransport),
 * claimed jobs and settle answers are read and settlements written by hand (wire/), which costs a worker
 * a fraction of protobuf-es's reflection per job; on any other transport (JSON, a custom one) through
 * ordinary messages. Both give the worker the same values; wire tests hold them equal.
 */
export function workerRpc(transport: Transport): WorkerRpc {
  const rpc = createClient(WorkerService, transport);
  const heartbeat: WorkerRpc["heartbeat"] = (reqs, o) => rpc.heartbeat(reqs, o);
  if (!speaksBinary(transport)) {
    return {
      claim: (reqs, o) =>
        mapAsync(
          rpc.claim(
            mapAsync(reqs, (ask) => ({
              ...ask,
              settlements: (ask.settlements ?? []).map(settlementMessage),
            })),
            o,
          ),
          (res) => ({
            jobs: res.jobs.map(jobFromMessage),
            throttled: res.throttled,
            settled: res.settleResults.map(answerFromMessage),
          }),
        ),
      settle: (reqs, o) =>
        mapAsync(
          rpc.settle(
            mapAsync(reqs, (batch) => ({ settlements: batch.map(settlementMessage) })),
            o,
          ),
          (res) => res.results.map(answerFromMessage),
        ),
      heartbeat,
    };
  }
  const views = createClient(WorkerServiceViews, transport) as unknown as ViewCalls;
  const lean = leanClaimParts(transport);
  return {
    claim: lean
      ? claimCall(lean)
      : (reqs, o) =>
          mapAsync(
            views.claim(
              mapAsync(reqs, (ask) => ({ ...ask, settlements: encodeSettlements(ask.settlements ?? []) })),
              o,
            ),
            (res) => {
              const answer = answerFromView(res);
              cutLoose(res.jobs, res.settleResults);
              return answer;
            },
          ),
    settle: (reqs, o) =>
      mapAsync(
        views.settle(
          mapAsync(reqs, (batch) => ({ settlements: encodeSettlements(batch) })),
          o,
        ),
        (res) => {
          const answer = res.results.map(decodeSettleResult);
          cutLoose(res.results);
          return answer;
        },
      ),
    heartbeat,
  };
}

/**
 * Empties a decoded response's lists once their entries are read. V8 soon allocates connect's response
 * messages straight into the old generation (allocation-site pretenuring), and each entry such a message
 * still points to outlives every young collection until a full one: emptied, the entries die young,
 * and young collections stay short.
 */
function cutLoose(...lists: unknown[][]): void {
  for (const list of lists) list.length = 0;
}
