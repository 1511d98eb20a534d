import type http from "node:http";
import { toJson } from "@bufbuild/protobuf";
import { RetryJobResponseSchema } from "@taskq/sdk/proto";
import type { Auth } from "./auth/auth.js";
import type { Logger } from "./log.js";
import { MethodNotAllowed, send, statusOf } from "./rest.js";
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
    void (async () => {
      if (req.method !== "POST")
        throw new MethodNotAllowed(`${req.method} is not allowed on ${url.pathname}`);
      const { actor } = d.auth.authorize(req.headers.authorization, "AdminService.RetryJob");
      return toJson(RetryJobResponseSchema, await retryJob(d, decodeURIComponent(m[1] ?? ""), actor));
    })()
      .then((body) => send(res, 200, body))
      .catch((err) => {
        const [status, code] = err instanceof URIError ? [400, "invalid_argument"] : statusOf(err);
        if (status === 500) d.log.error({ err }, "REST route failed");
        if (status === 401 || status === 403) d.denied(code as "unauthenticated" | "permission_denied");
        if (status === 401) res.setHeader("www-authenticate", 'Bearer realm="taskq"');
        send(res, status, {
          error: { code, message: status === 500 ? "internal error" : (err as Error).message },
        });
      });
    return true;
  };
}
