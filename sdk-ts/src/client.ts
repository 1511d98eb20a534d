import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ConnectError, createClient, type Client as RpcClient, type Transport } from "@connectrpc/connect";
import { EnqueueStream } from "./enqueue-stream.js";
import {
  EnqueueBatchRequestSchema,
  type JobInfo,
  type JobSpec,
  JobSpecSchema,
  ProducerService,
} from "./gen/taskq/v1/producer_pb.js";
import type { Logger } from "./logger.js";
import { encodePayload, type PayloadInput } from "./payload.js";
import { withTraceContext } from "./tracing.js";
import { createTransport, requireBaseUrl, type TlsOptions } from "./transport.js";
import { speaksBinary } from "./wire/binary-transports.js";

/** Options of {@link Client}. */
export interface ClientOptions {
  /** The gateway's gRPC address, e.g. `http://localhost:7070`. Required unless `transport` is given. */
  baseUrl?: string | undefined;
  /** Bearer token with the `producer` role; unset sends no credentials. Ignored with `transport`. */
  token?: string | undefined;
  /** TLS of an `https://` baseUrl: a private CA to trust, a client certificate for mTLS. Ignored with `transport`. */
  tls?: TlsOptions | undefined;
  /** A ready transport (tests, a custom stack); by default one is built from `baseUrl`, `token` and `tls`. */
  transport?: Transport | undefined;
  /**
   * Where the client's transport warns of a gateway older than this SDK's contract. Default
   * `stderrLogger`. Ignored with `transport`.
   */
  logger?: Logger | undefined;
  /**
   * Enqueues go over one open stream (EnqueueStream), which is closed after this many ms with nothing
   * to answer; default 500. A unary call per enqueue costs both sides several times the CPU and time
   * of a message on an open stream. 0 sends each enqueue as its own unary call. While the stream is
   * open it keeps the process alive: `close()` ends it at once. With a `transport` that
   * `createTransport` did not build (it may be HTTP/1.1, which cannot carry a bidi stream), enqueues
   * are unary calls unless this is set.
   */
  enqueueStreamIdleMs?: number | undefined;
}

/** One job to enqueue. */
export interface EnqueueSpec {
  /** Queue name, `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`. */
  queue: string;
  /**
   * Bytes as they are; a string as UTF-8 (`text/plain; charset=utf-8`); any other value as JSON
   * (`application/json`). Unset sends an empty payload. At most 1 MiB by default.
   */
  payload?: PayloadInput | undefined;
  /** MIME type of the payload; overrides the one derived from `payload`. */
  contentType?: string | undefined;
  /** Higher runs first; -32768 to 32767. Default 0. */
  priority?: number | undefined;
  /** Key metered by flow limits across queues; at most 255 bytes. Default none. */
  flowKey?: string | undefined;
  /** Run no earlier than this many ms from now. Exclusive with `runAt`. Default: at once. */
  delayMs?: number | undefined;
  /** Run no earlier than this instant. Exclusive with `delayMs`. Default: at once. */
  runAt?: Date | undefined;
  /** Cancel (outcome `expired_ttl`) if not started within this many seconds. 0 or unset: queue default. */
  ttlSeconds?: number | undefined;
  /** Attempts before a failing job fails for good, 1 to 1000. 0 or unset: gateway default (25). */
  maxAttempts?: number | undefined;
  /** A second enqueue with the same key on the same queue returns the first job. Default none. */
  idempotencyKey?: string | undefined;
  /** Free-form string headers handed to the worker. */
  headers?: Record<string, string> | undefined;
}

/** The outcome of one enqueue. */
export interface EnqueueResult {
  /** The job's id (a decimal integer as a string). */
  jobId: string;
  /** True when `idempotencyKey` matched an existing job, which is returned unchanged. */
  duplicate: boolean;
}

/** Producer client: enqueue jobs, look at them, cancel them. */
export class Client {
  readonly #rpc: RpcClient<typeof ProducerService>;
  readonly #stream: EnqueueStream | undefined;

  constructor(opts: ClientOptions) {
    const transport = opts.transport ?? createTransport(requireBaseUrl(opts));
    const idleMs = opts.enqueueStreamIdleMs ?? (speaksBinary(transport) ? DEFAULT_ENQUEUE_STREAM_IDLE_MS : 0);
    if (!Number.isFinite(idleMs) || idleMs < 0) {
      throw new TypeError(`Client: enqueueStreamIdleMs must be a number of ms ≥ 0, got ${idleMs}`);
    }
    const rpc = createClient(ProducerService, transport);
    this.#rpc = rpc;
    this.#stream =
      idleMs > 0
        ? new EnqueueStream({ open: (requests, o) => rpc.enqueueStream(requests, o), idleMs })
        : undefined;
  }

  /** Enqueue one job. */
  async enqueue(spec: EnqueueSpec): Promise<EnqueueResult> {
    const job = toJobSpec(spec);
    const [res] = (await this.#stream
      ?.send(create(EnqueueBatchRequestSchema, { jobs: [job] }))
      .catch(namedAsOneJob)) ?? [await this.#rpc.enqueue({ job })];
    if (!res) throw new Error("gateway returned no result for the job");
    return { jobId: res.jobId, duplicate: res.duplicate };
  }

  /** Enqueue up to 1000 jobs in one transaction: all are written or none. Results are in input order. */
  async enqueueBatch(specs: readonly EnqueueSpec[]): Promise<EnqueueResult[]> {
    const req = create(EnqueueBatchRequestSchema, { jobs: specs.map(toJobSpec) });
    const results = (await this.#stream?.send(req)) ?? (await this.#rpc.enqueueBatch(req)).results;
    return results.map((r) => ({ jobId: r.jobId, duplicate: r.duplicate }));
  }

  /** Ends the enqueue stream now (enqueues already sent are still answered); a later enqueue reopens it. */
  close(): void {
    this.#stream?.close();
  }

  /** Everything known about a job; rejects with a ConnectError (code NotFound) for an unknown id. */
  async getJob(id: string): Promise<JobInfo> {
    const res = await this.#rpc.getJob({ jobId: id });
    if (!res.job) throw new Error(`gateway returned no job for ${id}`);
    return res.job;
  }

  /**
   * Cancel a job: a waiting job is cancelled at once; a running one is asked to stop at its next
   * heartbeat. Returns the job as it is after the request.
   */
  async cancelJob(id: string, reason = ""): Promise<JobInfo> {
    const res = await this.#rpc.cancelJob({ jobId: id, reason });
    if (!res.job) throw new Error(`gateway returned no job for ${id}`);
    return res.job;
  }
}

/** How long the enqueue stream stays open with nothing to answer, ms. */
const DEFAULT_ENQUEUE_STREAM_IDLE_MS = 500;

/** The wire `JobSpec` for a friendly spec. Exported for tests. */
export function toJobSpec(spec: EnqueueSpec): JobSpec {
  if (spec.delayMs !== undefined && spec.runAt !== undefined) {
    throw new TypeError("enqueue: give delayMs or runAt, not both");
  }
  const { bytes, contentType } = encodePayload(spec.payload);
  const schedule =
    spec.runAt !== undefined
      ? { case: "runAt" as const, value: timestampFromDate(spec.runAt) }
      : spec.delayMs !== undefined
        ? { case: "delay" as const, value: durationFromMs(spec.delayMs) }
        : { case: undefined };
  return create(JobSpecSchema, {
    queue: spec.queue,
    payload: bytes,
    contentType: spec.contentType ?? contentType,
    priority: spec.priority ?? 0,
    flowKey: spec.flowKey ?? "",
    schedule,
    ttlSeconds: spec.ttlSeconds ?? 0,
    maxAttempts: spec.maxAttempts ?? 0,
    idempotencyKey: spec.idempotencyKey ?? "",
    // The producer's trace goes with the job (W3C traceparent), when an OpenTelemetry span is active.
    headers: withTraceContext(spec.headers) ?? {},
  });
}

/**
 * A one-job enqueue goes over the stream as a batch of one, so the gateway names a bad field
 * `jobs[0].queue`; said as the unary Enqueue says it, `job.queue`.
 */
function namedAsOneJob(err: unknown): never {
  if (err instanceof ConnectError && err.rawMessage.startsWith("jobs[0]"))
    throw new ConnectError(`job${err.rawMessage.slice("jobs[0]".length)}`, err.code, err.metadata);
  throw err;
}
