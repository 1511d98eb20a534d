import type http from "node:http";
import type { Auth } from "./auth/auth.js";
import type { Procedure } from "./auth/roles.js";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
} from "./errors.js";
import type { Logger } from "./log.js";
import { QUEUE_NAME } from "./rpc/validate.js";
import type { QueueStore } from "./store/queue-store.js";

export interface RestDeps {
  queues: QueueStore;
  /** Checks the bearer token against the same role matrix as the AdminService procedure of the route. */
  auth: Auth;
  /** Counts a refused call. */
  denied: (reason: "unauthenticated" | "permission_denied") => void;
  log: Logger;
}

const ROUTE = /^\/api\/v1\/queues\/([^/]+)\/(pause|resume|clear|concurrency|throttle)$/;
const MAX_BODY = 64 * 1024;

/**
 * The REST routes of the console API (seeds/queue-throttling.md), over the same SQL verbs as the
 * AdminService: POST .../pause|resume|clear, PUT .../concurrency, PUT|DELETE .../throttle. Errors are
 * JSON `{error: {code, message}}`: 400 naming the field, 404, 405, 409 for a config-sourced throttle.
 * Returns false when the URL is not one of these routes.
 */
export function restRoutes(d: RestDeps) {
  return (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const m = ROUTE.exec(url.pathname);
    if (!m) return false;
    const [, rawName, action] = m as unknown as [string, string, string];
    let name: string;
    try {
      name = decodeURIComponent(rawName);
    } catch {
      send(res, 400, { error: { code: "invalid_argument", message: "queue name: bad percent-encoding" } });
      return true;
    }
    void handle(d, req, name, action)
      .then((body) => send(res, 200, body))
      .catch((err) => {
        const [status, code] = statusOf(err);
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

async function handle(
  d: RestDeps,
  req: http.IncomingMessage,
  name: string,
  action: string,
): Promise<unknown> {
  const method = req.method ?? "GET";
  const procedure = procedures[`${method} ${action}`];
  if (!procedure) throw new MethodNotAllowed(`${method} is not allowed on ${action}`);
  const actor = d.auth.authorize(req.headers.authorization, procedure).actor;
  if (!QUEUE_NAME.test(name)) {
    throw new InvalidArgumentError(
      "name",
      "must be 1 to 128 letters or digits or . _ - and start with a letter or digit",
    );
  }
  switch (`${method} ${action}`) {
    case "POST pause":
      return { queue: name, settings: await d.queues.queuePause(name, actor) };
    case "POST resume":
      return { queue: name, settings: await d.queues.queueResume(name, actor) };
    case "POST clear":
      return { queue: name, cleared: await d.queues.queueClear(name, actor) };
    case "PUT concurrency": {
      const body = await readJson(req);
      // Either key; `null` removes the cap, so presence (not `??`) picks the one given.
      const value = "concurrency" in body ? body.concurrency : body.max_running;
      if (value !== null && !Number.isInteger(value)) {
        throw new InvalidArgumentError(
          "concurrency",
          "must be a whole number from 1 to 1000000, or null to remove the cap",
        );
      }
      return {
        queue: name,
        settings: await d.queues.queueSetConcurrency(name, value as number | null, actor),
      };
    }
    case "PUT throttle": {
      const body = await readJson(req);
      for (const field of ["limit", "period_ms"] as const) {
        if (!Number.isInteger(body[field]))
          throw new InvalidArgumentError(field, "is required (a whole number)");
      }
      return {
        queue: name,
        settings: await d.queues.queueSetThrottle(
          name,
          body.limit as number,
          body.period_ms as number,
          actor,
        ),
      };
    }
    default:
      // DELETE throttle: works for a queue no worker serves any more (it only needs its row).
      return { queue: name, settings: await d.queues.queueDeleteThrottle(name, actor) };
  }
}

/** Each route as the AdminService procedure it performs: the role matrix is the same for both. */
const procedures: Record<string, Procedure> = {
  "POST pause": "AdminService.PauseQueue",
  "POST resume": "AdminService.ResumeQueue",
  "POST clear": "AdminService.ClearQueue",
  "PUT concurrency": "AdminService.SetQueueConcurrency",
  "PUT throttle": "AdminService.SetQueueThrottle",
  "DELETE throttle": "AdminService.DeleteQueueThrottle",
};

class MethodNotAllowed extends Error {}
class BadJson extends Error {}

function statusOf(err: unknown): [number, string] {
  if (err instanceof InvalidArgumentError || err instanceof BadJson) return [400, "invalid_argument"];
  if (err instanceof UnauthenticatedError) return [401, "unauthenticated"];
  if (err instanceof PermissionDeniedError) return [403, "permission_denied"];
  if (err instanceof NotFoundError) return [404, "not_found"];
  if (err instanceof MethodNotAllowed) return [405, "method_not_allowed"];
  if (err instanceof FailedPreconditionError) return [409, "failed_precondition"];
  return [500, "internal"];
}

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new BadJson(`body must be at most ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "null");
  } catch {
    throw new BadJson("body must be JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new BadJson("body must be a JSON object");
  return body as Record<string, unknown>;
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}
