import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { type AdminService, type ListWorkersResponse, ListWorkersResponseSchema } from "@taskq/sdk/proto";
import { guarded } from "../errors.js";
import type { WorkerStore } from "../store/worker-store.js";
import * as v from "./validate.js";

type WorkerMethods = Pick<ServiceImpl<typeof AdminService>, "listWorkers">;

/** AdminService.ListWorkers: wire <-> taskq.list_workers. */
export function workerMethods(workers: WorkerStore): WorkerMethods {
  return {
    listWorkers: guarded((req) => listWorkers(workers, req.queue)),
  };
}

/** The workers connected to the fleet, those polling `queue` when it is not empty. */
export async function listWorkers(workers: WorkerStore, queue: string): Promise<ListWorkersResponse> {
  const only = queue === "" ? null : v.queueName("queue", queue);
  const rows = await workers.workersList();
  return create(ListWorkersResponseSchema, {
    workers: rows
      .filter((w) => only === null || w.queues.includes(only))
      .map((w) => ({
        workerId: w.worker_id,
        gatewayId: w.gateway_id,
        queues: w.queues,
        streams: w.streams,
        held: w.held,
        maxJobs: w.max_jobs,
        lastPollAt: timestampFromMs(w.last_poll_ms),
        verdictsLastMinute: Object.fromEntries(
          Object.entries(w.verdicts).map(([reason, n]) => [reason, BigInt(n)]),
        ),
        refreshedAt: timestampFromMs(w.refreshed_ms),
        concurrency: w.concurrency ?? undefined,
        prefetch: w.prefetch ?? undefined,
      })),
  });
}
