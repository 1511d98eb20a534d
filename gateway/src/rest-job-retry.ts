import type http from "node:http";
import { toJson } from "@bufbuild/protobuf";
import { RetryJobResponseSchema } from "@taskq/sdk/proto";
import type { Auth } from "./auth/auth.js";
import type { Logger } from "./log.js";
import { answer, MethodNotAllowed, pathSegment } from "./rest.js";
import { type RetryJobDeps, retryJob } from "./rpc/retry-job.js";

export interface RestJobRetryDeps extends RetryJobDeps {
  /** Checks the bearer token against the same role matrix as AdminService.RetryJob. */
  auth: Auth;
  denied: (reason: "unauthenticated" | "permission_denied") => void;
  log: Logger;
}

const RETRY = /^\/api\/v1\/jobs\/([^/]+)\/retry$/;

/**
 * POST /api/v1/jobs/:id/retry: AdminService.RetryJob over REST, answering its JSON (protobuf JSON, as
 * Connect's). Errors as rest.ts's: 400 naming the field, 404 for a job unknown or no longer kept, 409
 * saying the state of a job that is not failed. Returns false when the URL is not this route.
 */
export function restJobRetryRoute(d: RestJobRetryDeps) {
  return (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const m = RETRY.exec(url.pathname);
    if (!m) return false;
    answer(d, res, async () => {
      if (req.method !== "POST")
        throw new MethodNotAllowed(`${req.method} is not allowed on ${url.pathname}`);
      const { actor } = d.auth.authorize(req.headers.authorization, "AdminService.RetryJob");
      return toJson(RetryJobResponseSchema, await retryJob(d, pathSegment(m[1] ?? "", "job id"), actor));
    });
    return true;
  };
}
