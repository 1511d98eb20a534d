import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { type AdminService, type RetryJobResponse, RetryJobResponseSchema } from "@taskq/sdk/proto";
import { guarded, NotFoundError } from "../errors.js";
import type { ScheduleStore } from "../store/schedule-store.js";
import type { Store } from "../store/store.js";
import { jobInfo } from "./convert.js";
import * as v from "./validate.js";

export interface RetryJobDeps {
  schedules: Pick<ScheduleStore, "jobRetry">;
  jobs: Pick<Store, "jobGet">;
}

/** AdminService.RetryJob: one failed job ready again now (taskq.retry_job), answered as it is after. */
export function retryJobMethods(
  d: RetryJobDeps & { actor: (ctx: HandlerContext) => string },
): Pick<ServiceImpl<typeof AdminService>, "retryJob"> {
  return {
    retryJob: guarded(async (req, ctx) => retryJob(d, req.jobId, d.actor(ctx))),
  };
}

/** RetryJob's work, shared by the RPC and its REST route (POST /api/v1/jobs/:id/retry). */
export async function retryJob(d: RetryJobDeps, jobId: string, actor: string): Promise<RetryJobResponse> {
  const id = v.jobId("job_id", jobId);
  await d.schedules.jobRetry(id, actor);
  // A worker may have claimed it already: the job as it is now, whatever that is.
  const job = await d.jobs.jobGet(id);
  if (!job) throw new NotFoundError(`job ${id} not found`);
  return create(RetryJobResponseSchema, { job: jobInfo(job) });
}
