import type http from "node:http";
import type http2 from "node:http2";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  ClaimRequestView,
  Health,
  ServerReflection,
  ServerReflectionV1Alpha,
  SettleRequestView,
} from "@taskq/sdk/internal";
import { AdminService, ProducerService, WorkerService } from "@taskq/sdk/proto";
import type { Auth } from "../auth/auth.js";
import { authInterceptor } from "../auth/interceptor.js";
import { Batcher } from "../batcher.js";
import type { Claimer } from "../claim/claimer.js";
import type { Config } from "../config.js";
import type { Explainer } from "../explain/explain.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import { adminService } from "../rpc/admin.js";
import { routeByBytes } from "../rpc/by-bytes.js";
import { decodeErrorsAsInvalidArgument } from "../rpc/decode-errors.js";
import type { DryRunner } from "../rpc/dry-run.js";
import { healthService } from "../rpc/health.js";
import { countOpenStreams } from "../rpc/open-streams.js";
import { producerService } from "../rpc/producer.js";
import { reflectionServices } from "../rpc/reflection.js";
import { workerService } from "../rpc/worker.js";
import { ConsoleReadStore } from "../store/console-read-store.js";
import type { Db } from "../store/db.js";
import type { QueueStore } from "../store/queue-store.js";
import type { ScheduleStore } from "../store/schedule-store.js";
import type { Store } from "../store/store.js";
import type { WorkerStore } from "../store/worker-store.js";
import type { WorkerRecords } from "../workers/worker-records.js";
import { backoffMs } from "./backoff.js";
import { claimStreamHandler, isPlainGrpcClaim } from "./claim-stream.js";
import type { ServingState } from "./serving-state.js";

/** Serves the three services over gRPC, gRPC-Web and Connect, on either port. */
export type RpcHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

export interface RpcParts {
  config: Config;
  auth: Auth;
  metrics: Metrics;
  db: Db;
  store: Store;
  queueStore: QueueStore;
  scheduleStore: ScheduleStore;
  claimer: Claimer;
  /** The workers list's reads (taskq.list_workers). */
  workerStore: WorkerStore;
  /** ExplainJob and ExplainQueue. */
  explainer: Explainer;
  /** DryRunLimit. */
  dryRun: DryRunner;
  /** The workers polling this gateway (the workers list). */
  records: WorkerRecords;
  /** What the gRPC health service reports. */
  serving: ServingState;
  log: Logger;
}

/** taskq's own services, as health and reflection name them. */
const TASKQ_SERVICES = [WorkerService, ProducerService, AdminService];

/**
 * The worker, producer and admin services behind the bearer-token check; beside them gRPC's standard
 * health service (unauthenticated) and, when configured, server reflection (any valid token).
 */
export function rpcHandler(p: RpcParts): RpcHandler {
  const maxMessage = Math.max(8 * 1024 * 1024, 2 * p.config.maxPayloadBytes);
  const interceptors = [authInterceptor(p.auth, (reason) => p.metrics.authDenied.inc({ reason }))];
  const worker = workerImpl(p);
  const connect = connectNodeAdapter({
    readMaxBytes: maxMessage,
    writeMaxBytes: maxMessage,
    // Protobuf JSON's default: an unknown field is an error, not silently dropped input.
    jsonOptions: { ignoreUnknownFields: false },
    interceptors,
    routes: (router) => {
      router.service(WorkerService, worker);
      // Its settle and claim read settlements given as messages or as bytes (toSettlements in rpc/worker.ts).
      routeByBytes(router, WorkerService.method.settle, SettleRequestView, worker.settle);
      routeByBytes(router, WorkerService.method.claim, ClaimRequestView, worker.claim);
      router.service(
        ProducerService,
        producerService({ config: p.config, store: p.store, enqueue: (batch) => p.claimer.enqueue(batch) }),
      );
      router.service(
        AdminService,
        adminService({
          queues: p.queueStore,
          schedules: p.scheduleStore,
          consoleReads: new ConsoleReadStore(p.db),
          workers: p.workerStore,
          explainer: p.explainer,
          jobs: p.store,
          maxPayloadBytes: p.config.maxPayloadBytes,
          dryRun: p.dryRun,
        }),
      );
      router.service(
        Health,
        healthService(
          p.serving,
          TASKQ_SERVICES.map((s) => s.typeName),
        ),
      );
      if (p.config.reflection) {
        const reflection = reflectionServices([...TASKQ_SERVICES, Health, ServerReflection]);
        router.service(ServerReflection, reflection.v1);
        router.service(ServerReflectionV1Alpha, reflection.v1alpha);
      }
      // An undecodable binary request is INVALID_ARGUMENT, not connect-es's INTERNAL (see decode-errors.ts).
      decodeErrorsAsInvalidArgument(router);
    },
  });
  // The TS SDK's Claim streams skip connect's per-message pipeline (claim-stream.ts).
  const claimStream = claimStreamHandler({
    impl: worker.claim as never,
    interceptors,
    readMaxBytes: maxMessage,
    writeMaxBytes: maxMessage,
    log: p.log.child({ component: "worker-rpc" }),
  });
  return (req, res) =>
    isPlainGrpcClaim(req) ? claimStream(req, res as http2.Http2ServerResponse) : connect(req, res);
}

/** WorkerService with its settle and heartbeat batchers, its open streams counted. */
function workerImpl(p: RpcParts) {
  const { config, metrics, store } = p;
  const settles = new Batcher((items: Parameters<Store["jobsSettle"]>[0][number][]) =>
    store.jobsSettle(items),
  );
  const heartbeats = new Batcher((items: Parameters<Store["leasesExtend"]>[0][number][]) =>
    store.leasesExtend(items),
  );
  return countOpenStreams(
    workerService({
      config,
      store,
      claimer: p.claimer,
      settles,
      heartbeats,
      log: p.log.child({ component: "worker-rpc" }),
      backoffMs: (attempt) => backoffMs(config, attempt),
      metrics,
      records: p.records,
    }),
    metrics.openStreams,
  );
}
