import { randomBytes } from "node:crypto";
import type http from "node:http";
import type http2 from "node:http2";
import type { AddressInfo, Server } from "node:net";
import { hostname } from "node:os";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { VERSION_HEADER } from "@taskq/sdk";
import { AdminService, ProducerService, WorkerService } from "@taskq/sdk/proto";
import { Redis } from "ioredis";
import { Auth } from "./auth/auth.js";
import { authInterceptor } from "./auth/interceptor.js";
import { readTokensFile, watchTokensFile } from "./auth/tokens-file.js";
import { Batcher } from "./batcher.js";
import { Claimer } from "./claim/claimer.js";
import { Waiters } from "./claim/waiters.js";
import { type Config, ConfigError } from "./config.js";
import { applyConfigThrottles } from "./config-throttles.js";
import { consoleRoute } from "./console/console-route.js";
import { FlowKeyGate } from "./flow/flow-keys.js";
import { GatedClaim } from "./flow/gated-claim.js";
import { Profiles } from "./flow/profiles.js";
import { SettingsNotices } from "./flow/settings-notices.js";
import { ThrottledTally } from "./flow/throttled-tally.js";
import { failClosed, REDIS_COMMAND_TIMEOUT_MS } from "./limiter/fail-closed.js";
import { MemoryLimiter } from "./limiter/memory-limiter.js";
import { RedisLimiter } from "./limiter/redis-limiter.js";
import type { Logger } from "./log.js";
import { Maintainer } from "./maintenance/maintainer.js";
import { Metrics } from "./metrics.js";
import { restRoutes } from "./rest.js";
import { adminService } from "./rpc/admin.js";
import { decodeErrorsAsInvalidArgument } from "./rpc/decode-errors.js";
import { countOpenStreams } from "./rpc/open-streams.js";
import { producerService } from "./rpc/producer.js";
import { type SettleByBytes, settleByBytes } from "./rpc/settle-by-bytes.js";
import { workerService } from "./rpc/worker.js";
import { Scheduler } from "./schedule/scheduler.js";
import { ConsoleReadStore } from "./store/console-read-store.js";
import { type Db, embeddedPglite, pgliteDb, postgresDb } from "./store/db.js";
import { DbClock } from "./store/db-clock.js";
import { migrate } from "./store/migrate.js";
import { type PgWireServer, servePgWire } from "./store/pg-wire.js";
import { FLOW_LIMITS_CHANNEL, QUEUES_CHANNEL, QueueStore } from "./store/queue-store.js";
import { ScheduleStore } from "./store/schedule-store.js";
import { READY_CHANNEL, Store } from "./store/store.js";
import { reloadCertsOnChange } from "./tls/cert-reload.js";
import { createPortServers } from "./tls/port-servers.js";
import { readTlsMaterial } from "./tls/tls-material.js";
import { requireSafeBind, transportMode } from "./tls/transport-mode.js";
import { GATEWAY_VERSION } from "./version.js";

/** A running gateway. */
export interface Gateway {
  /** Base URL of the HTTP/2 port (gRPC, and Connect over HTTP/2): https:// with TLS, else h2c http://. */
  readonly grpcUrl: string;
  /** Base URL of the HTTP/1.1 port (Connect JSON, REST, the console at /console/, health), https:// with TLS. */
  readonly httpUrl: string;
  /** Postgres URL of the dev store for psql (dev mode on its own PGlite with devPgPort set), else null. */
  readonly devPgUrl: string | null;
  readonly instanceId: string;
  readonly store: Store;
  readonly maintainer: Maintainer;
  /** Its Prometheus metrics (what `/metrics` serves), readable after `stop` too. */
  readonly metrics: Metrics;
  /** Stops accepting, ends open streams, stops maintenance, closes connections. Safe to call twice. */
  stop(): Promise<void>;
}

/** Opens the store the config names: PGlite in dev mode, a Postgres pool in gateway mode. */
export async function openDb(config: Config, log: Logger): Promise<Db> {
  if (config.mode === "dev" && !config.databaseUrl) {
    return pgliteDb(config.dataDir === "memory" ? undefined : config.dataDir);
  }
  // A stall times out every query in flight: warn once per 10 s at most, with the count meanwhile.
  let timeouts = 0;
  let lastWarning = 0;
  return postgresDb(
    {
      url: config.databaseUrl ?? "",
      poolSize: config.dbPoolSize,
      queryTimeoutMs: config.dbQueryTimeoutMs,
      onTimeout: (err) => {
        timeouts++;
        if (Date.now() - lastWarning < 10_000) return;
        lastWarning = Date.now();
        log.warn({ err: err.message, timeouts }, "Postgres query timed out; callers get UNAVAILABLE");
        timeouts = 0;
      },
    },
    (err) => log.warn({ err: err.message }, "idle Postgres connection failed; it will be replaced"),
  );
}

/** Longest /readyz waits for Postgres's answer, ms (less when dbQueryTimeoutMs is less). */
const READY_DB_TIMEOUT_MS = 2000;

/** Retry delay for a failed attempt: exponential from retryBaseMs, capped, with jitter in [50%, 100%]. */
export function backoffMs(config: Config, attempt: number): number {
  const full = Math.min(config.retryMaxMs, config.retryBaseMs * 2 ** Math.min(attempt - 1, 40));
  return Math.round(full * (0.5 + Math.random() * 0.5));
}

/**
 * Starts a gateway: migrates the database, listens for ready jobs, serves gRPC on the HTTP/2 port (h2c,
 * or TLS with ALPN h2) and Connect JSON plus health on the HTTP/1.1 port (HTTPS with TLS), and joins the
 * maintenance leader election.
 */
export async function startGateway(config: Config, log: Logger, opts: { db?: Db } = {}): Promise<Gateway> {
  const tokens = config.tokensFile ? readTokensFile(config.tokensFile) : config.tokens;
  const auth = new Auth(tokens, { live: config.tokensFile !== null });
  if (tokens.length === 0 && config.mode === "gateway") {
    throw new ConfigError(
      "production mode refuses to start without tokens: configure `tokens` (or TASKQ_TOKENS) or a `tokensFile` (TASKQ_TOKENS_FILE); `taskq token new` makes one",
    );
  }
  // Transport problems are the operator's to fix before anything opens.
  requireSafeBind(config);
  const tls = readTlsMaterial(config);
  const transport = transportMode(config);
  if (auth.open) log.warn("no tokens configured: every caller may do everything (dev mode only)");
  const instanceId = `${hostname()}/${process.pid}/${randomBytes(3).toString("hex")}`;
  const db = opts.db ?? (await openDb(config, log));
  const applied = await migrate(db);
  if (applied.length > 0) log.info({ versions: applied }, "applied migrations");
  // psql into the embedded store: only on a PGlite this gateway opened itself (tests pass their own).
  const embedded = opts.db ? null : embeddedPglite(db);
  let pgWire: PgWireServer | null = null;
  if (embedded && config.devPgPort !== null) {
    pgWire = await servePgWire({
      pglite: embedded.pglite,
      host: "127.0.0.1",
      port: config.devPgPort,
      onNotify: embedded.deliver,
      log,
    }).catch(async (err: NodeJS.ErrnoException) => {
      await db.close();
      throw err.code === "EADDRINUSE"
        ? new ConfigError(
            `devPgPort (TASKQ_DEV_PG_PORT) ${config.devPgPort} is in use: pick another port, or "off"`,
          )
        : err;
    });
  }
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, {
        lazyConnect: true,
        maxRetriesPerRequest: 1,
        commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
        connectionName: "taskq",
      })
    : null;
  redis?.on("error", (err) => log.warn({ err: err.message }, "redis connection error"));
  // Not awaited: a gateway starts (not ready) while Redis is down, and ioredis keeps reconnecting.
  redis?.connect().catch(() => {});

  const store = new Store(db);
  const queueStore = new QueueStore(db);
  const scheduleStore = new ScheduleStore(db);
  const configProblem = await applyConfigThrottles(config, queueStore, log);
  const profiles = new Profiles(queueStore);
  const notices = new SettingsNotices();
  // A settings verb answers once its change is in force here (the cached profile dropped at once) and,
  // as far as one gateway can tell, everywhere: its NOTIFY came back (at most 1 s).
  queueStore.watchSettings((queue) => {
    const seen = notices.seen(queue);
    return async () => {
      profiles.queueChanged(queue);
      await notices.waitPast(queue, seen, 1000);
    };
  });
  const waiters = new Waiters();
  const stopListening = await listenForChanges(db, waiters, profiles, notices, log);
  const metrics = new Metrics(store, queueStore);
  const stopTokensWatch = config.tokensFile
    ? watchTokensFile(config.tokensFile, auth, log.child({ component: "auth" }), metrics)
    : () => {};
  metrics.configDisagreement.set(configProblem ? 1 : 0);
  let lastLimiterWarning = 0;
  const limiter = failClosed(
    config.redisUrl
      ? new RedisLimiter(
          new Redis(config.redisUrl, {
            maxRetriesPerRequest: 1,
            commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
            connectionName: "taskq-limiter",
          }).on("error", () => {}),
          { prefix: config.redisPrefix },
        )
      : new MemoryLimiter(),
    (err) => {
      metrics.limiterErrors.inc();
      // Once per 10 s at most: an outage fails every gated poll.
      if (Date.now() - lastLimiterWarning < 10_000) return;
      lastLimiterWarning = Date.now();
      log.warn({ err: (err as Error).message }, "limiter unreachable: its gates decline (fail closed)");
    },
  );
  const flowKeys = new FlowKeyGate(store, profiles, limiter);
  // The ramp's progress compares with a start Postgres stamped: read on Postgres's clock, not ours.
  const dbClock = new DbClock(db);
  await dbClock.start();
  const gatedClaim = new GatedClaim(
    store,
    limiter,
    flowKeys,
    { pausedRetryMs: config.pausedRetryMs, maxRunningRetryMs: config.maxRunningRetryMs },
    dbClock.now,
  );
  const tally = new ThrottledTally(queueStore, config.throttledFlushMs, log.child({ component: "tally" }));
  tally.start();
  const claimer = new Claimer(store, waiters, profiles, gatedClaim, flowKeys, metrics, tally);
  const settles = new Batcher((items: Parameters<Store["jobsSettle"]>[0][number][]) =>
    store.jobsSettle(items),
  );
  const heartbeats = new Batcher((items: Parameters<Store["leasesExtend"]>[0][number][]) =>
    store.leasesExtend(items),
  );

  const maxMessage = Math.max(8 * 1024 * 1024, 2 * config.maxPayloadBytes);
  const handler = connectNodeAdapter({
    readMaxBytes: maxMessage,
    writeMaxBytes: maxMessage,
    // Protobuf JSON's default: an unknown field is an error, not silently dropped input.
    jsonOptions: { ignoreUnknownFields: false },
    interceptors: [authInterceptor(auth, (reason) => metrics.authDenied.inc({ reason }))],
    routes: (router) => {
      const worker = countOpenStreams(
        workerService({
          config,
          store,
          claimer,
          settles,
          heartbeats,
          log: log.child({ component: "worker-rpc" }),
          backoffMs: (attempt) => backoffMs(config, attempt),
          metrics,
        }),
        metrics.openStreams,
      );
      router.service(WorkerService, worker);
      // Its settle reads settlements given as messages or as bytes (settleStream in rpc/worker.ts).
      settleByBytes(router, worker.settle as unknown as SettleByBytes);
      router.service(ProducerService, producerService({ config, store }));
      router.service(
        AdminService,
        adminService({
          queues: queueStore,
          schedules: scheduleStore,
          consoleReads: new ConsoleReadStore(db),
          maxPayloadBytes: config.maxPayloadBytes,
        }),
      );
      // An undecodable binary request is INVALID_ARGUMENT, not connect-es's INTERNAL (see decode-errors.ts).
      decodeErrorsAsInvalidArgument(router);
    },
  });

  const readyDbMs = Math.min(READY_DB_TIMEOUT_MS, config.dbQueryTimeoutMs);
  const ready = async (): Promise<string | null> => {
    // Bounded twice: the probe's connection is dropped if it stays silent, and the wait for a pooled
    // connection (all of them stuck in a stall) is cut short too, so readyz answers, 503, at once.
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      db.query({ name: "taskq_ready", text: "select 1" }, [], { timeoutMs: readyDbMs }).then(
        () => true,
        () => false,
      ),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), readyDbMs);
      }),
    ]);
    clearTimeout(timer);
    if (!answered) return "database unreachable";
    if (redis && redis.status !== "ready") return "redis unreachable";
    // A connection can stay open while Redis no longer answers: ask it.
    if (
      redis &&
      !(await redis.ping().then(
        () => true,
        () => false,
      ))
    )
      return "redis unreachable";
    return null;
  };

  const sessions = new Set<http2.ServerHttp2Session>();
  const rest = restRoutes({
    queues: queueStore,
    auth,
    denied: (reason) => metrics.authDenied.inc({ reason }),
    log: log.child({ component: "rest" }),
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
      const detail = `${configProblem ? `config: ${configProblem}\n` : ""}transport: ${transport}\n`;
      void ready().then((problem) =>
        res
          .writeHead(problem ? 503 : 200, { "content-type": "text/plain" })
          .end(`${problem ?? "ready"}\n${detail}`),
      );
      return;
    }
    handler(req, res);
  };
  // Every response says which gateway answered: SDKs warn when it is older than their contract.
  const onGrpc = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    res.setHeader(VERSION_HEADER, GATEWAY_VERSION);
    handler(req, res);
  };
  const servers = createPortServers(config, tls, onGrpc, onHttp);
  const h2 = servers.grpc;
  const h1 = servers.http;
  h2.on("session", (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await listen(h2, config.grpcPort, config.host);
  await listen(h1, config.httpPort, config.host);
  const stopCertReload = tls
    ? reloadCertsOnChange(config, servers.tls, log.child({ component: "tls" }), metrics)
    : () => {};

  const maintainer = new Maintainer(
    store,
    instanceId,
    { intervalMs: config.maintenanceIntervalMs, retentionSeconds: config.retentionSeconds },
    log.child({ component: "maintenance" }),
    new Scheduler(
      scheduleStore,
      { defaultMaxAttempts: config.defaultMaxAttempts },
      log.child({ component: "scheduler" }),
    ),
  );
  maintainer.start();

  const urlOf = (s: Server) => {
    const a = s.address() as AddressInfo;
    const host = a.family === "IPv6" ? `[${a.address}]` : a.address === "0.0.0.0" ? "127.0.0.1" : a.address;
    return `${servers.scheme}://${host}:${a.port}`;
  };
  const grpcUrl = urlOf(h2);
  const httpUrl = urlOf(h1);
  const devPgUrl = pgWire?.url ?? null;
  log.info(
    { grpcUrl, httpUrl, ...(devPgUrl ? { devPgUrl } : {}), mode: config.mode, transport, instanceId },
    "taskq gateway listening",
  );

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      stopCertReload();
      stopTokensWatch();
      const closed = Promise.all([close(h2), close(h1)]);
      for (const s of sessions) s.close();
      // Streams still open after a moment (long polls, idle worker streams) are ended for good.
      const force = setTimeout(() => {
        for (const s of sessions) s.destroy();
        h1.closeAllConnections();
      }, 200);
      await closed;
      clearTimeout(force);
      await pgWire?.stop();
      await maintainer.stop();
      await tally.stop();
      dbClock.stop();
      await stopListening();
      await db.close();
      await limiter.close().catch(() => {});
      await redis?.quit().catch(() => {});
      log.info({ instanceId }, "taskq gateway stopped");
    })();
    return stopping;
  };
  return { grpcUrl, httpUrl, devPgUrl, instanceId, store, maintainer, metrics, stop };
}

/**
 * LISTENs for ready jobs (wakes long polls) and settings changes (drops cached profiles). A lost
 * connection wakes every poll, forgets every cached profile, and is re-established.
 */
async function listenForChanges(
  db: Db,
  waiters: Waiters,
  profiles: Profiles,
  notices: SettingsNotices,
  log: Logger,
): Promise<() => Promise<void>> {
  let stopped = false;
  let unlisten: (() => Promise<void>) | undefined;
  let retry: NodeJS.Timeout | undefined;
  const again = (err: Error) => {
    if (stopped) return;
    log.warn({ err: err.message }, "LISTEN connection lost or failed; retrying in 1 s");
    // Notifications may be missed meanwhile: let every parked poll look again, re-read settings.
    waiters.wakeAll();
    profiles.clear();
    retry = setTimeout(() => void connect(), 1000);
  };
  const connect = async (): Promise<void> => {
    try {
      unlisten = await db.listen(
        [READY_CHANNEL, QUEUES_CHANNEL, FLOW_LIMITS_CHANNEL],
        (channel, payload) => {
          if (channel === READY_CHANNEL) waiters.wake(payload);
          else if (channel === QUEUES_CHANNEL) {
            profiles.queueChanged(payload);
            notices.notified(payload);
          } else profiles.flowLimitChanged();
        },
        again,
      );
      waiters.wakeAll();
      profiles.clear();
    } catch (err) {
      again(err as Error);
    }
  };
  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await unlisten?.();
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
