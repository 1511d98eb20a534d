import type http from "node:http";
import type http2 from "node:http2";
import { VERSION_HEADER } from "@taskq/sdk";
import type { Auth } from "../auth/auth.js";
import { consoleRoute } from "../console/console-route.js";
import type { Explainer } from "../explain/explain.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import { restRoutes } from "../rest.js";
import { restJobRetryRoute } from "../rest-job-retry.js";
import { restReadRoutes } from "../rest-reads.js";
import type { DryRunner } from "../rpc/dry-run.js";
import type { QueueStore } from "../store/queue-store.js";
import type { ScheduleStore } from "../store/schedule-store.js";
import type { Store } from "../store/store.js";
import type { WorkerStore } from "../store/worker-store.js";
import type { TransportMode } from "../tls/transport-mode.js";
import { GATEWAY_VERSION } from "../version.js";
import type { Readiness } from "./readiness.js";
import type { RpcHandler } from "./rpc-routes.js";

export interface HttpParts {
  rpc: RpcHandler;
  queueStore: QueueStore;
  /** The REST routes' `?dry_run=true`. */
  dryRun: DryRunner;
  /** The retry verb (POST /api/v1/jobs/:id/retry) and the job it answers with. */
  scheduleStore: ScheduleStore;
  store: Store;
  workerStore: WorkerStore;
  explainer: Explainer;
  auth: Auth;
  metrics: Metrics;
  readiness: Readiness;
  /** Why this gateway's config disagrees with the fleet's, or null. */
  configProblem: string | null;
  /** The transport, as /readyz reports it. */
  transport: TransportMode;
  log: Logger;
}

/** What each port answers: RPCs on the HTTP/2 port; REST, the console, health, metrics and RPCs on the HTTP/1.1 port. */
export function httpRoutes(p: HttpParts): {
  onHttp: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  onGrpc: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void;
} {
  const { metrics, rpc } = p;
  const rest = restRoutes({
    queues: p.queueStore,
    dryRun: p.dryRun,
    auth: p.auth,
    denied: (reason) => metrics.authDenied.inc({ reason }),
    log: p.log.child({ component: "rest" }),
  });
  const reads = restReadRoutes({
    workers: p.workerStore,
    explainer: p.explainer,
    auth: p.auth,
    denied: (reason) => metrics.authDenied.inc({ reason }),
    log: p.log.child({ component: "rest" }),
  });
  const retry = restJobRetryRoute({
    schedules: p.scheduleStore,
    jobs: p.store,
    auth: p.auth,
    denied: (reason) => metrics.authDenied.inc({ reason }),
    log: p.log.child({ component: "rest" }),
  });
  const consoleAssets = consoleRoute();
  const onHttp = (req: http.IncomingMessage, res: http.ServerResponse) => {
    res.setHeader(VERSION_HEADER, GATEWAY_VERSION);
    // A request target that is no URL ("//a%3E" reads as a bad host) is refused once, here: the routes
    // below parse it too, and a throw there used to take the whole gateway down.
    if (!URL.canParse(req.url ?? "/", "http://localhost")) {
      return void res.writeHead(400, { "content-type": "text/plain" }).end("bad request target\n");
    }
    if (rest(req, res)) return;
    if (reads(req, res)) return;
    if (retry(req, res)) return;
    if (consoleAssets(req, res)) return;
    if (req.url === "/healthz") {
      const body = JSON.stringify({ status: "ok", version: GATEWAY_VERSION });
      return void res.writeHead(200, { "content-type": "application/json" }).end(`${body}\n`);
    }
    if (req.url === "/metrics") {
      void metrics.registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
        () => res.writeHead(503, { "content-type": "text/plain" }).end("metrics unavailable\n"),
      );
      return;
    }
    if (req.url === "/readyz") {
      // A config that disagrees with the fleet's is reported, not fatal: this instance serves the fleet's.
      const detail = `${p.configProblem ? `config: ${p.configProblem}\n` : ""}transport: ${p.transport}\n`;
      void p.readiness
        .problem()
        .then((problem) =>
          res
            .writeHead(problem ? 503 : 200, { "content-type": "text/plain" })
            .end(`${problem ?? "ready"}\n${detail}`),
        );
      return;
    }
    rpc(req, res);
  };
  // Every response says which gateway answered: SDKs warn when it is older than their contract.
  const onGrpc = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    res.setHeader(VERSION_HEADER, GATEWAY_VERSION);
    rpc(req, res);
  };
  return { onHttp, onGrpc };
}
