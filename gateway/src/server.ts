import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { watchTokensFile } from "./auth/tokens-file.js";
import type { Config } from "./config.js";
import { applyConfigThrottles } from "./config-throttles.js";
import { dryRun } from "./dry-run/dry-run.js";
import { Explainer } from "./explain/explain.js";
import type { Limiter } from "./limiter/limiter.js";
import type { Logger } from "./log.js";
import { Maintainer } from "./maintenance/maintainer.js";
import { Metrics } from "./metrics.js";
import type { DryRunner } from "./rpc/dry-run.js";
import { Scheduler } from "./schedule/scheduler.js";
import { startClaimPath } from "./server/claim-path.js";
import { serveDevPsql } from "./server/dev-psql.js";
import { httpRoutes } from "./server/http-routes.js";
import { configuredLimiter, failingClosed } from "./server/limiter.js";
import { listenOnPorts } from "./server/listeners.js";
import { embeddedDataDir, openDb } from "./server/open-db.js";
import { Opened } from "./server/opened.js";
import { preflight } from "./server/preflight.js";
import { readiness } from "./server/readiness.js";
import { rpcHandler } from "./server/rpc-routes.js";
import { ServingState } from "./server/serving-state.js";
import { shutdown } from "./server/shutdown.js";
import type { Db } from "./store/db.js";
import { ExplainStore } from "./store/explain-store.js";
import { migrate, startupError } from "./store/migrate.js";
import { QueueStore } from "./store/queue-store.js";
import { ScheduleStore } from "./store/schedule-store.js";
import { Store } from "./store/store.js";
import { WorkerStore } from "./store/worker-store.js";
import { reloadCertsOnChange } from "./tls/cert-reload.js";

/** A running gateway. */
export interface Gateway {
  /** Base URL of the HTTP/2 port (gRPC, and Connect over HTTP/2): https:// with TLS, else h2c http://. */
  readonly grpcUrl: string;
  /** Base URL of the HTTP/1.1 port (Connect JSON, REST, the console at /console/, health), https:// with TLS. */
  readonly httpUrl: string;
  /** Postgres URL of the dev store for psql (dev mode on its own PGlite with devPgPort set), else null. */
  readonly devPgUrl: string | null;
  /** True when no tokens are configured: every caller may do everything (taskq dev only). */
  readonly open: boolean;
  readonly instanceId: string;
  readonly store: Store;
  readonly maintainer: Maintainer;
  /** Its Prometheus metrics (what `/metrics` serves), readable after `stop` too. */
  readonly metrics: Metrics;
  /** Stops accepting, ends open streams, stops maintenance, closes connections. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Parts of a gateway given instead of built from the config (tests use them). The gateway owns what it
 * is given: `stop`, or a start that fails, closes the database and the limiter.
 */
export interface GatewaySeams {
  /** The database; default the one the config names. A gateway given one serves no psql port (devPgPort). */
  db?: Db;
  /**
   * The limiter behind the throttle, claim-rate, ramp and flow-key gates; default Redis's (redisUrl) or
   * an in-process one. Its errors still fail the gates closed.
   */
  limiter?: Limiter;
  /**
   * The clock the gates read, ms since the epoch; default Postgres's time as this gateway sees it (the
   * ramp) and this process's (flow-key waits). The in-process default limiter runs on it too.
   */
  clock?: () => number;
}

/** The message of the log line a gateway writes once it serves (on a terminal the CLI's banner says it). */
export const LISTENING = "taskq gateway listening";

/** The pool's first statement at start, named like every statement of the store. */
const POOL_CHECK = { name: "taskq_pool_check", text: "select 1" };

/**
 * Starts a gateway: migrates the database, listens for ready jobs, serves gRPC on the HTTP/2 port (h2c,
 * or TLS with ALPN h2) and Connect JSON plus health on the HTTP/1.1 port (HTTPS with TLS), and joins the
 * maintenance leader election. A start that fails (a port in use, say) closes whatever it had opened,
 * the store included, before it throws.
 */
export async function startGateway(config: Config, log: Logger, seams: GatewaySeams = {}): Promise<Gateway> {
  const opened = new Opened();
  try {
    return await openGateway(config, log, seams, opened);
  } catch (err) {
    await opened.closeAll();
    throw err;
  }
}

async function openGateway(
  config: Config,
  log: Logger,
  seams: GatewaySeams,
  opened: Opened,
): Promise<Gateway> {
  const { auth, tls, transport } = preflight(config);
  if (auth.open) log.warn("no tokens configured: every caller may do everything (dev mode only)");
  const instanceId = `${hostname()}/${process.pid}/${randomBytes(3).toString("hex")}`;
  const db = opened.add(seams.db ?? (await openDb(config, log)), (d) => d.close());
  const applied = await migrate(db);
  if (applied.length > 0) log.info({ versions: applied }, "applied migrations");
  // Migrations ran on the direct connection; this is the pool's first statement, so a pooler that
  // needs dbPooler or dbPreparedStatements shows here, in one line saying which.
  await db.query(POOL_CHECK).catch((err: unknown) => {
    throw startupError(err) ?? err;
  });
  const pgWire = opened.add(await serveDevPsql(db, !seams.db, config, log), (p) => p?.stop());
  const ready = opened.add(readiness(db, config, log), (r) => r.close());

  const store = new Store(db, { deleteFinished: config.retentionSeconds === 0, gateway: instanceId });
  const queueStore = new QueueStore(db);
  const scheduleStore = new ScheduleStore(db);
  const configProblem = await applyConfigThrottles(config, queueStore, log);
  const metrics = new Metrics(store, queueStore);
  metrics.configDisagreement.set(configProblem ? 1 : 0);
  const stopTokensWatch = opened.add(
    config.tokensFile
      ? watchTokensFile(config.tokensFile, auth, log.child({ component: "auth" }), metrics)
      : () => {},
    (stop) => stop(),
  );
  const limiter = opened.add(
    failingClosed(seams.limiter ?? configuredLimiter(config, seams.clock), metrics, log),
    (l) => l.close(),
  );
  const claimPath = opened.add(
    await startClaimPath({
      db,
      store,
      queueStore,
      metrics,
      limiter,
      clock: seams.clock,
      config,
      log,
      gatewayId: instanceId,
    }),
    (c) => c.stop(),
  );

  const serving = new ServingState(ready);
  const workerStore = new WorkerStore(db);
  // Explain reads the gates through the same limiter the claims take from (peeks: it takes nothing).
  const explainer = new Explainer(new ExplainStore(db), queueStore, limiter);
  // Dry runs read and rehearse in Postgres only: no limiter, so no Redis key is touched.
  const dryRunner: DryRunner = (change, actor, opts) =>
    dryRun({ db, queues: queueStore }, change, actor, opts);
  const rpc = rpcHandler({
    config,
    auth,
    metrics,
    db,
    store,
    queueStore,
    scheduleStore,
    claimer: claimPath.claimer,
    records: claimPath.records,
    workerStore,
    explainer,
    dryRun: dryRunner,
    serving,
    log,
  });
  const { onGrpc, onHttp } = httpRoutes({
    rpc,
    queueStore,
    dryRun: dryRunner,
    scheduleStore,
    store,
    workerStore,
    explainer,
    auth,
    metrics,
    readiness: ready,
    configProblem,
    transport,
    log,
  });
  const listeners = opened.add(await listenOnPorts(config, tls, onGrpc, onHttp), (l) => l.close());
  const stopCertReload = tls
    ? reloadCertsOnChange(config, listeners.tls, log.child({ component: "tls" }), metrics)
    : () => {};
  opened.add(stopCertReload, (stop) => stop());

  const maintainer = new Maintainer(
    store,
    instanceId,
    {
      intervalMs: config.maintenanceIntervalMs,
      retentionSeconds: config.retentionSeconds,
      liveJobsVacuumRows: config.liveJobsVacuumRows,
    },
    log.child({ component: "maintenance" }),
    new Scheduler(
      scheduleStore,
      { defaultMaxAttempts: config.defaultMaxAttempts },
      log.child({ component: "scheduler" }),
    ),
  );
  maintainer.start();

  const { grpcUrl, httpUrl } = listeners;
  const devPgUrl = pgWire?.url ?? null;
  const dataDir = seams.db ? null : embeddedDataDir(config);
  log.info(
    {
      grpcUrl,
      httpUrl,
      ...(devPgUrl ? { devPgUrl } : {}),
      ...(dataDir ? { dataDir } : {}),
      mode: config.mode,
      auth: auth.open ? "open" : "tokens",
      transport,
      instanceId,
    },
    LISTENING,
  );

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= shutdown({
      serving,
      watches: [stopCertReload, stopTokensWatch],
      listeners,
      pgWire,
      maintainer,
      claimPath,
      db,
      limiter,
      readiness: ready,
    }).then(() => log.info({ instanceId }, "taskq gateway stopped"));
    return stopping;
  };
  return { grpcUrl, httpUrl, devPgUrl, open: auth.open, instanceId, store, maintainer, metrics, stop };
}
