// The gateway's OpenTelemetry spans, through @opentelemetry/api only: an operator who registers an SDK in
// the gateway's process (node --import ...) gets them. Callers ask activeTracer() first (a field read)
// and call the trace* wrappers only when it names one, so a gateway without tracing makes no span, no
// closure and no array for it.
//
// | span            | around                     | parent / links                                         |
// | taskq enqueue   | one Enqueue / batch        | child of the first job's traceparent; links the others |
// | taskq claim     | one poll (Claim, ClaimOnce)| root; links each claimed job's producer; verdict events, |
// |                 |                            | and settled events for the settlements the poll carried  |
// | taskq settle    | one Settle request         | root; a settled event per settlement with its status     |
import {
  type Attributes,
  type Context,
  createTraceState,
  type Link,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { Poll, PollResult } from "./claim/poll-loop.js";
import type { EnqueuedJob, NewJob, Settlement, SettleOutcome } from "./store/types.js";

const TRACER_NAME = "@taskq/gateway";
/** Links a span keeps at most (the SDK's default limit is 128 too). */
const MAX_LINKS = 128;

/** The registered OpenTelemetry SDK's tracer, or undefined when the process registered none. */
export function activeTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider() as ReturnType<typeof trace.getTracerProvider> & {
    getDelegateTracer?: (name: string) => Tracer | undefined;
  };
  // The API's global provider is a proxy whose delegate is the registered one, if any.
  if (typeof provider.getDelegateTracer === "function") return provider.getDelegateTracer(TRACER_NAME);
  return provider.getTracer(TRACER_NAME);
}

// W3C Trace Context as the SDK writes it into job headers (sdk-ts/src/tracing.ts; the SDK keeps it
// internal, so the few lines that read it are repeated here).
const TRACEPARENT_RE = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-|$)/;

/** The producer's context a job's headers carry, or the root context. */
export function producerContext(headers: Readonly<Record<string, string>>): Context {
  const m = TRACEPARENT_RE.exec(headers.traceparent ?? "");
  if (!m || m[1] === "ff") return ROOT_CONTEXT;
  const sc = {
    traceId: m[2] as string,
    spanId: m[3] as string,
    traceFlags: Number.parseInt(m[4] as string, 16) & 1,
    isRemote: true,
    traceState: headers.tracestate ? createTraceState(headers.tracestate) : undefined,
  };
  return trace.isSpanContextValid(sc) ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

/** Links to the producers of `jobs` (those that carry a traceparent), at most MAX_LINKS. */
function producerLinks(jobs: readonly { headers: Readonly<Record<string, string>> }[]): Link[] {
  const links: Link[] = [];
  for (const j of jobs) {
    if (links.length >= MAX_LINKS) break;
    const sc = trace.getSpanContext(producerContext(j.headers));
    if (sc) links.push({ context: sc });
  }
  return links;
}

async function inSpan<T>(
  tracer: Tracer,
  name: string,
  opts: { attributes: Attributes; links?: Link[] },
  parent: Context,
  run: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, ...opts }, parent);
  try {
    return await run(span);
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}

/** Runs an enqueue of `jobs` in a "taskq enqueue" span, a child of the first job's producer. */
export function traceEnqueue(
  tracer: Tracer,
  jobs: readonly NewJob[],
  run: () => Promise<EnqueuedJob[]>,
): Promise<EnqueuedJob[]> {
  const first = jobs[0];
  if (!first) return run();
  const queues = [...new Set(jobs.map((j) => j.queue))];
  const attributes: Attributes = {
    "messaging.system": "taskq",
    "messaging.operation.type": "send",
    "messaging.batch.message_count": jobs.length,
    "taskq.queues": queues,
  };
  if (queues.length === 1) attributes["messaging.destination.name"] = queues[0];
  const links = producerLinks(jobs.slice(1));
  return inSpan(
    tracer,
    "taskq enqueue",
    { attributes, links },
    producerContext(first.headers),
    async (span) => {
      const out = await run();
      if (out.length === 1 && out[0]) span.setAttribute("messaging.message.id", out[0].id);
      span.setAttribute("taskq.duplicates", out.filter((o) => o.duplicate).length);
      return out;
    },
  );
}

/**
 * Runs a poll in a "taskq claim" span: linked to each claimed job's producer, with an event for each
 * verdict (a queue a gate declined) and the number of jobs claimed.
 */
export function traceClaim(tracer: Tracer, poll: Poll, run: () => Promise<PollResult>): Promise<PollResult> {
  const attributes: Attributes = {
    "messaging.system": "taskq",
    "messaging.operation.type": "receive",
    "taskq.queues": poll.queues,
    "taskq.max_jobs": poll.maxJobs,
    "taskq.worker_id": poll.workerId,
    "taskq.settlements": poll.settlements?.length ?? 0,
  };
  return inSpan(tracer, "taskq claim", { attributes }, ROOT_CONTEXT, async (span) => {
    const res = await run();
    span.setAttribute("messaging.batch.message_count", res.jobs.length);
    span.addLinks(producerLinks(res.jobs));
    // Settlements the poll carried (settle-on-poll) are told as a Settle request's are.
    if (poll.settlements && res.settled) settledEvents(span, poll.settlements, res.settled);
    for (const v of res.verdicts) {
      span.addEvent("verdict", {
        "taskq.queue": v.queue,
        "taskq.verdict": v.reason,
        "taskq.retry_after_ms": v.retryAfterMs,
      });
    }
    return res;
  });
}

/** Runs a Settle request's batch in a "taskq settle" span, an event per settlement with its status. */
export function traceSettle(
  tracer: Tracer,
  batch: readonly Settlement[],
  run: () => Promise<SettleOutcome[]>,
): Promise<SettleOutcome[]> {
  const attributes: Attributes = { "messaging.system": "taskq", "taskq.settlements": batch.length };
  return inSpan(tracer, "taskq settle", { attributes }, ROOT_CONTEXT, async (span) => {
    const out = await run();
    settledEvents(span, batch, out);
    return out;
  });
}

function settledEvents(span: Span, batch: readonly Settlement[], out: readonly SettleOutcome[]): void {
  out.forEach((o, i) => {
    span.addEvent("settled", {
      "messaging.message.id": o.jobId,
      "taskq.job.attempt": o.attempt,
      "taskq.job.outcome": batch[i]?.kind ?? "",
      "taskq.settle.status": o.status,
    });
  });
}
