/**
 * The TypeScript SDK for taskq: {@link Worker} claims, runs, heartbeats and settles jobs; {@link Client}
 * enqueues them, looks them up and cancels them. Both talk gRPC to a taskq gateway.
 *
 * The wire types live in `@taskq/sdk/proto`: the generated contract (`taskq.v1`), with its services
 * (`WorkerService`, `ProducerService`, `AdminService`), messages, schemas and enums. Pass a service to
 * `createClient` from `@connectrpc/connect`, with a transport from {@link createTransport}, to call
 * any RPC of the contract directly — a stubs-level client, for the admin verbs or anything the
 * `Client` does not wrap:
 *
 * ```ts
 * import { createClient } from "@connectrpc/connect";
 * import { createTransport } from "@taskq/sdk";
 * import { AdminService } from "@taskq/sdk/proto";
 *
 * const admin = createClient(AdminService, createTransport({ baseUrl: "http://127.0.0.1:7070" }));
 * await admin.pauseQueue({ queue: "emails" });
 * ```
 *
 * @packageDocumentation
 */

/** Reconnect backoff settings of a {@link Worker} (`reconnect` option). */
export type { BackoffOptions } from "./backoff.js";
/** Producer client and its inputs and results. */
export { Client, type ClientOptions, type EnqueueResult, type EnqueueSpec } from "./client.js";
/** Enqueue in the application's own Postgres transaction (node-postgres or any `query(text, values)`). */
export {
  enqueueBatchInTransaction,
  enqueueInTransaction,
  type SqlQueryable,
} from "./enqueue-in-transaction.js";
/** Errors a handler throws to shape its failure. */
export { NonRetryableError, RetryAfterError } from "./errors.js";
/** What a handler receives, and why its signal may abort. */
export { JobAbortError, type JobAbortKind, type JobContext } from "./job-context.js";
/** Logger shape the SDK accepts (pino and console fit), the default (stderr, warn and up) and silence. */
export { type Logger, silentLogger, stderrLogger } from "./logger.js";
/** The `prefetch` option of a worker: a fixed look-ahead, or one sized from measurements. */
export type { PrefetchOption } from "./look-ahead.js";
/** Payload and result encoding rules. */
export { JSON_CONTENT_TYPE, type PayloadInput, TEXT_CONTENT_TYPE } from "./payload.js";
/** Build a gRPC transport to the gateway, to share between a Client and a Worker. */
export { createTransport, type TlsOptions, type TransportOptions } from "./transport.js";
/** The contract version this SDK was built for, and the header a gateway reports its own in. */
export { CONTRACT_VERSION, VERSION_HEADER } from "./version.js";
/** The worker and its options, states and counters. */
export {
  type Handler,
  type StopOptions,
  Worker,
  type WorkerOptions,
  type WorkerSnapshot,
  type WorkerState,
} from "./worker.js";
