import type http from "node:http";
import { create, toJson } from "@bufbuild/protobuf";
import {
  ExplainJobResponseSchema,
  ExplainQueueResponseSchema,
  ListWorkersResponseSchema,
} from "@taskq/sdk/proto";
import type { Auth } from "./auth/auth.js";
import type { Procedure } from "./auth/roles.js";
import type { Explainer } from "./explain/explain.js";
import type { Logger } from "./log.js";
import { answer, MethodNotAllowed, pathSegment } from "./rest.js";
import { explanation } from "./rpc/explain.js";
import * as v from "./rpc/validate.js";
import { listWorkers } from "./rpc/workers.js";
import type { WorkerStore } from "./store/worker-store.js";

export interface RestReadDeps {
  workers: WorkerStore;
  explainer: Explainer;
  /** Checks the bearer token against the same role matrix as the AdminService procedure of the route. */
  auth: Auth;
  denied: (reason: "unauthenticated" | "permission_denied") => void;
  log: Logger;
}

// /api/v1/workers, /api/v1/jobs/:id/explain, /api/v1/queues/:name/explain.
const WORKERS = /^\/api\/v1\/workers$/;
const EXPLAIN = /^\/api\/v1\/(jobs|queues)\/([^/]+)\/explain$/;

/**
 * The REST reads beside rest.ts's queue routes, each the JSON of its AdminService answer (protobuf
 * JSON, as Connect's): GET /api/v1/workers (`?queue=` to filter), GET /api/v1/jobs/:id/explain, GET
 * /api/v1/queues/:name/explain. Errors as rest.ts's. Returns false when the URL is not one of these.
 */
export function restReadRoutes(d: RestReadDeps) {
  return (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const explain = EXPLAIN.exec(url.pathname);
    if (!explain && !WORKERS.test(url.pathname)) return false;
    const procedure: Procedure = !explain
      ? "AdminService.ListWorkers"
      : explain[1] === "jobs"
        ? "AdminService.ExplainJob"
        : "AdminService.ExplainQueue";
    answer(d, res, async () => {
      if ((req.method ?? "GET") !== "GET")
        throw new MethodNotAllowed(`${req.method} is not allowed on ${url.pathname}`);
      d.auth.authorize(req.headers.authorization, procedure);
      if (!explain) {
        const queue = url.searchParams.get("queue") ?? "";
        return toJson(ListWorkersResponseSchema, await listWorkers(d.workers, queue));
      }
      const target = pathSegment(explain[2] ?? "", explain[1] === "jobs" ? "job id" : "queue name");
      if (explain[1] === "jobs") {
        const e = await d.explainer.job(v.jobId("job_id", target));
        return toJson(
          ExplainJobResponseSchema,
          create(ExplainJobResponseSchema, { explanation: explanation(e) }),
        );
      }
      const e = await d.explainer.queue(v.queueName("queue", target));
      return toJson(
        ExplainQueueResponseSchema,
        create(ExplainQueueResponseSchema, { explanation: explanation(e) }),
      );
    });
    return true;
  };
}
