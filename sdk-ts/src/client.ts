import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient, type Client as RpcClient, type Transport } from "@connectrpc/connect";
import { type JobInfo, type JobSpec, JobSpecSchema, ProducerService } from "./gen/taskq/v1/producer_pb.js";
import type { Logger } from "./logger.js";
import { encodePayload, type PayloadInput } from "./payload.js";
import { createTransport, requireBaseUrl, type TlsOptions } from "./transport.js";

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

  constructor(opts: ClientOptions) {
    this.#rpc = createClient(ProducerService, opts.transport ?? createTransport(requireBaseUrl(opts)));
  }

  /** Enqueue one job. */
  async enqueue(spec: EnqueueSpec): Promise<EnqueueResult> {
    const res = await this.#rpc.enqueue({ job: toJobSpec(spec) });
    return { jobId: res.jobId, duplicate: res.duplicate };
  }

  /** Enqueue up to 1000 jobs in one transaction: all are written or none. Results are in input order. */
  async enqueueBatch(specs: readonly EnqueueSpec[]): Promise<EnqueueResult[]> {
    const res = await this.#rpc.enqueueBatch({ jobs: specs.map(toJobSpec) });
    return res.results.map((r) => ({ jobId: r.jobId, duplicate: r.duplicate }));
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
    headers: spec.headers ?? {},
  });
}
