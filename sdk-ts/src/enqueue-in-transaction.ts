import type { EnqueueResult, EnqueueSpec } from "./client.js";
import { encodePayload } from "./payload.js";
import { withTraceContext } from "./tracing.js";

/**
 * What {@link enqueueInTransaction} needs of a database client: node-postgres' `Client` and `PoolClient`
 * fit, and so does anything else with `query(text, values)` that resolves to `{ rows }`.
 */
export interface SqlQueryable {
  /** Runs `text` with `$1`… bound to `values`, in the client's current transaction. */
  query(
    text: string,
    values: unknown[],
  ): Promise<{
    /** The result's rows, one object a row. */
    rows: unknown[];
  }>;
}

// taskq.enqueue_batch, the one SQL function both helpers call (the single job as a batch of one, so it
// says whether it was a duplicate as Client.enqueue does). Ids come back as text: a bigint may pass
// 2^53, and node-postgres gives bigints as strings anyway.
const ENQUEUE_BATCH = "select id::text as id, duplicate from taskq.enqueue_batch($1::jsonb) order by ord";

/**
 * Enqueues one job in the transaction `client` is in, with the SQL function `taskq.enqueue_batch`: the
 * job exists if and only if that transaction commits, and workers parked on any gateway get it at the
 * commit. Takes what {@link Client.enqueue} takes, encoded the same way (bytes as they are, a string as
 * UTF-8 text, any other value as JSON), the active OpenTelemetry span's context included; the database
 * checks it as the gateway does and rejects with the database error that names the field (SQLSTATE
 * 22023, e.g. `jobs[0].priority must be from -32768 to 32767 (got 40000)`), writing nothing. The
 * database user needs the `taskq_producer` role. Outside a transaction it is one of its own.
 *
 * ```ts
 * const db = await pool.connect();
 * await db.query("begin");
 * await db.query("insert into orders (id, item) values ($1, $2)", [orderId, "book"]);
 * await enqueueInTransaction(db, { queue: "receipts", payload: { orderId } });
 * await db.query("commit");
 * ```
 */
export async function enqueueInTransaction(client: SqlQueryable, spec: EnqueueSpec): Promise<EnqueueResult> {
  const [result] = await enqueueBatchInTransaction(client, [spec]);
  if (!result) throw new Error("taskq.enqueue_batch returned no row for the job");
  return result;
}

/**
 * Enqueues up to 1000 jobs in the transaction `client` is in, all or none, as
 * {@link enqueueInTransaction} does one. Results are in input order; a job is named `jobs[i]` in an error.
 */
export async function enqueueBatchInTransaction(
  client: SqlQueryable,
  specs: readonly EnqueueSpec[],
): Promise<EnqueueResult[]> {
  const { rows } = await client.query(ENQUEUE_BATCH, [JSON.stringify(specs.map(toSqlJob))]);
  return (rows as { id: string | number; duplicate: boolean }[]).map((r) => ({
    jobId: String(r.id),
    duplicate: r.duplicate,
  }));
}

/** A job of taskq.enqueue_batch's input for a friendly spec; unset fields left out. */
function toSqlJob(spec: EnqueueSpec): Record<string, unknown> {
  if (spec.delayMs !== undefined && spec.runAt !== undefined) {
    throw new TypeError("enqueue: give delayMs or runAt, not both");
  }
  // The bytes Client.enqueue would send, as base64: a worker gets the same payload either way.
  const { bytes, contentType } = encodePayload(spec.payload);
  const job: Record<string, unknown> = {
    queue: spec.queue,
    payload_base64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64"),
    content_type: spec.contentType ?? contentType,
    priority: spec.priority,
    flow_key: spec.flowKey,
    delay_ms: spec.delayMs,
    // An invalid Date is sent as null by JSON.stringify: refuse it here rather than enqueue at once.
    run_at: spec.runAt === undefined ? undefined : isoTime(spec.runAt),
    ttl_seconds: spec.ttlSeconds,
    max_attempts: spec.maxAttempts,
    idempotency_key: spec.idempotencyKey,
    headers: withTraceContext(spec.headers),
  };
  for (const k of Object.keys(job)) if (job[k] === undefined) delete job[k];
  return job;
}

function isoTime(d: Date): string {
  if (Number.isNaN(d.getTime())) throw new TypeError("enqueue: runAt is an invalid Date");
  return d.toISOString();
}
