import type http from "node:http";
import { toJson } from "@bufbuild/protobuf";
import { DryRunLimitResponseSchema } from "@taskq/sdk/proto";
import type { Auth } from "./auth/auth.js";
import type { Procedure } from "./auth/roles.js";
import type { LimitChange } from "./dry-run/dry-run.js";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
} from "./errors.js";
import type { Logger } from "./log.js";
import { QUEUE_NAME } from "./queue-name.js";
import { BadJson, readJson, wholeNumber } from "./rest-body.js";
import { type DryRunner, type DryRunOptionsWire, reportMessage } from "./rpc/dry-run.js";
import type { QueueStore } from "./store/queue-store.js";

export interface RestDeps {
  queues: QueueStore;
  /** `?dry_run=true` on PUT concurrency and throttle: AdminService.DryRunLimit's replays. */
  dryRun: DryRunner;
  /** Checks the bearer token against the same role matrix as the AdminService procedure of the route. */
  auth: Auth;
  /** Counts a refused call. */
  denied: (reason: "unauthenticated" | "permission_denied") => void;
  log: Logger;
}

// /api/v1/queues, /api/v1/queues/:name, /api/v1/queues/:name/:action.
const ROUTE = /^\/api\/v1\/queues(?:\/([^/]+)(?:\/(pause|resume|clear|concurrency|adaptive|throttle))?)?$/;

/**
 * The REST routes of the console API, over the same store calls as the AdminService: GET the list of
 * queues or one queue, POST .../pause|resume|clear, PUT .../concurrency, PUT .../adaptive,
 * PUT|DELETE .../throttle.
 * `?dry_run=true` on PUT concurrency, adaptive or throttle (with `window_seconds`, `min_delay_ms`) changes nothing
 * and answers what the change would have done over the queue's last window, as AdminService.DryRunLimit
 * (its JSON, snake_case), with the verb's validation and the dry run's role check (observers too).
 * Errors are JSON `{error: {code, message}}`, `error` being Connect's error JSON (the same code names and
 * messages): 400 naming the field, 401, 403, 404, 405, 409 for a config-sourced throttle.
 * Returns false when the URL is not one of these routes.
 */
export function restRoutes(d: RestDeps) {
  return (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const m = ROUTE.exec(url.pathname);
    if (!m) return false;
    const [, rawName, verb] = m as unknown as [string, string | undefined, string | undefined];
    // The list, one queue, or a verb on one queue.
    const action = rawName === undefined ? "list" : (verb ?? "queue");
    answer(d, res, () =>
      handle(d, req, rawName === undefined ? "" : pathSegment(rawName, "queue name"), action),
    );
    return true;
  };
}

/**
 * Answers one REST call: what `work` resolves to, as JSON, or its error in the one REST error shape
 * (`{error: {code, message}}`, the status from statusOf), a 500 logged and a refusal counted.
 */
export function answer(
  d: Pick<RestDeps, "denied" | "log">,
  res: http.ServerResponse,
  work: () => Promise<unknown>,
): void {
  // Through a promise, so a `work` that throws before its first await is answered like any other.
  void Promise.resolve()
    .then(work)
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
}

/** A path segment, percent-decoded; one that is not valid percent-encoding is refused naming it. */
export function pathSegment(raw: string, name: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new InvalidArgumentError(`${name}:`, "bad percent-encoding");
  }
}

async function handle(
  d: RestDeps,
  req: http.IncomingMessage,
  name: string,
  action: string,
): Promise<unknown> {
  const method = req.method ?? "GET";
  const query = new URL(req.url ?? "/", "http://localhost").searchParams;
  const asksDryRun = query.has("dry_run") && query.get("dry_run") !== "false";
  const procedure = asksDryRun ? "AdminService.DryRunLimit" : procedures[`${method} ${action}`];
  if (!procedure) throw new MethodNotAllowed(`${method} is not allowed on ${req.url?.split("?")[0]}`);
  const actor = d.auth.authorize(req.headers.authorization, procedure).actor;
  // Checked once the caller is known: a refusal of the token comes first.
  const dry = asksDryRun ? dryRunOptions(query, `${method} ${action}`) : null;
  if (action === "list") {
    const queues = await d.queues.queuesList();
    return { queues: queues.map((q) => ({ queue: q.name, settings: q.settings })) };
  }
  if (!QUEUE_NAME.test(name)) {
    throw new InvalidArgumentError(
      "name",
      "must be 1 to 128 letters or digits or . _ - and start with a letter or digit",
    );
  }
  switch (`${method} ${action}`) {
    case "GET queue":
      return { queue: name, settings: await d.queues.queueGet(name) };
    case "POST pause":
      return { queue: name, settings: await d.queues.queuePause(name, actor) };
    case "POST resume":
      return { queue: name, settings: await d.queues.queueResume(name, actor) };
    case "POST clear":
      return { queue: name, cleared: await d.queues.queueClear(name, actor) };
    case "PUT concurrency": {
      const body = await readJson(req);
      // Either key; `null` removes the cap, so presence (not `??`) picks the one given.
      const field = "concurrency" in body || !("max_running" in body) ? "concurrency" : "max_running";
      const value = body[field];
      const cap =
        value === null
          ? null
          : wholeNumber(value, field, "a whole number from 1 to 1000000, or null to remove the cap");
      if (dry) return dryRunAnswer(d, { kind: "max_running", queue: name, maxRunning: cap }, actor, dry);
      return { queue: name, settings: await d.queues.queueSetConcurrency(name, cap, actor) };
    }
    case "PUT adaptive": {
      // {min, max, target_latency_ms}; {"min": null} (or {}) turns the adaptive limit off.
      const body = await readJson(req);
      const int = (key: string, what: string) =>
        body[key] === undefined || body[key] === null ? null : wholeNumber(body[key], key, what);
      const min = int("min", "a whole number from 1 to 1000000, or null to turn the adaptive limit off");
      const max = int("max", "a whole number from min to 1000000");
      const target = int("target_latency_ms", "a whole number of ms from 1 to 3600000");
      if (dry) {
        const change = { kind: "adaptive", queue: name, min, max, targetLatencyMs: target } as const;
        return dryRunAnswer(d, change, actor, dry);
      }
      return { queue: name, settings: await d.queues.queueSetAdaptive(name, min, max, target, actor) };
    }
    case "PUT throttle": {
      const body = await readJson(req);
      const limit = wholeNumber(body.limit, "limit", "a whole number");
      const periodMs = wholeNumber(body.period_ms, "period_ms", "a whole number");
      if (dry) return dryRunAnswer(d, { kind: "throttle", queue: name, limit, periodMs }, actor, dry);
      return { queue: name, settings: await d.queues.queueSetThrottle(name, limit, periodMs, actor) };
    }
    default:
      // DELETE throttle: works for a queue no worker serves any more (it only needs its row).
      return { queue: name, settings: await d.queues.queueDeleteThrottle(name, actor) };
  }
}

/** Each route as the AdminService procedure it performs: the role matrix is the same for both. */
const procedures: Record<string, Procedure> = {
  "GET list": "AdminService.ListQueues",
  "GET queue": "AdminService.GetQueue",
  "POST pause": "AdminService.PauseQueue",
  "POST resume": "AdminService.ResumeQueue",
  "POST clear": "AdminService.ClearQueue",
  "PUT concurrency": "AdminService.SetQueueConcurrency",
  "PUT adaptive": "AdminService.SetAdaptiveConcurrency",
  "PUT throttle": "AdminService.SetQueueThrottle",
  "DELETE throttle": "AdminService.DeleteQueueThrottle",
};

const DRY_RUN_ROUTES = ["PUT concurrency", "PUT adaptive", "PUT throttle"];

/** A dry run's options from the query (`dry_run` is there and not "false"). */
function dryRunOptions(query: URLSearchParams, route: string): DryRunOptionsWire {
  const flag = query.get("dry_run");
  if (flag !== "true" && flag !== "") throw new InvalidArgumentError("dry_run", "must be true or false");
  if (!DRY_RUN_ROUTES.includes(route))
    throw new InvalidArgumentError(
      "dry_run",
      "applies to PUT concurrency, PUT adaptive and PUT throttle only",
    );
  const n = (field: string) => {
    const raw = query.get(field);
    if (raw === null) return undefined;
    if (!/^\d{1,15}$/.test(raw))
      throw new InvalidArgumentError(field, `must be a whole number (got "${raw}")`);
    return Number(raw);
  };
  return { windowSeconds: n("window_seconds"), minDelayMs: n("min_delay_ms") };
}

async function dryRunAnswer(
  d: RestDeps,
  change: LimitChange,
  actor: string,
  opts: DryRunOptionsWire,
): Promise<unknown> {
  const report = reportMessage(await d.dryRun(change, actor, opts), null);
  return {
    queue: change.queue,
    dry_run: toJson(DryRunLimitResponseSchema, report, { useProtoFieldName: true }),
  };
}

export class MethodNotAllowed extends Error {}

/** An error as its HTTP status and Connect code name. */
export function statusOf(err: unknown): [number, string] {
  if (err instanceof InvalidArgumentError || err instanceof BadJson) return [400, "invalid_argument"];
  if (err instanceof UnauthenticatedError) return [401, "unauthenticated"];
  if (err instanceof PermissionDeniedError) return [403, "permission_denied"];
  if (err instanceof NotFoundError) return [404, "not_found"];
  if (err instanceof MethodNotAllowed) return [405, "method_not_allowed"];
  if (err instanceof FailedPreconditionError) return [409, "failed_precondition"];
  return [500, "internal"];
}

export function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}
