// OpenTelemetry through @opentelemetry/api only: the application registers an SDK, or nothing happens.
// Without a registered tracer provider nothing here allocates per job: activeTracer() reads a field, and
// the active context's span lookup finds none (the API's no-op context manager).
import {
  type Context,
  context,
  createTraceState,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";

/** The W3C Trace Context headers a job carries from its producer to its handler. */
export const TRACEPARENT = "traceparent";
export const TRACESTATE = "tracestate";

/** A job holds at most this many headers (the gateway refuses more). */
const MAX_HEADERS = 64;

const TRACER_NAME = "@taskq/sdk";

/**
 * The tracer of the application's registered OpenTelemetry SDK, or undefined when it registered none:
 * then callers skip tracing entirely, rather than make the API's non-recording spans job by job.
 */
export function activeTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider() as ReturnType<typeof trace.getTracerProvider> & {
    getDelegateTracer?: (name: string, version?: string) => Tracer | undefined;
  };
  // The API's global provider is a proxy whose delegate is the registered one, if any.
  if (typeof provider.getDelegateTracer === "function") return provider.getDelegateTracer(TRACER_NAME);
  return provider.getTracer(TRACER_NAME);
}

/**
 * `headers` with the active span's context added as `traceparent` (and `tracestate`), so the job's
 * handler continues the producer's trace. Unchanged when no span is active or sampled context exists,
 * when the producer set `traceparent` itself, or when the job has no room for another header.
 */
export function withTraceContext(
  headers: Record<string, string> | undefined,
): Record<string, string> | undefined {
  const span = trace.getSpanContext(context.active());
  if (!span || !trace.isSpanContextValid(span)) return headers;
  if (headers && (TRACEPARENT in headers || Object.keys(headers).length >= MAX_HEADERS - 1)) return headers;
  const flags = span.traceFlags.toString(16).padStart(2, "0");
  const out: Record<string, string> = {
    ...headers,
    [TRACEPARENT]: `00-${span.traceId}-${span.spanId}-${flags}`,
  };
  const state = span.traceState?.serialize();
  if (state) out[TRACESTATE] = state;
  return out;
}

const TRACEPARENT_RE = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-|$)/;

/** The producer's context a job's headers carry, or the root context when they carry none (or a bad one). */
export function producerContext(headers: Readonly<Record<string, string>>): Context {
  const m = TRACEPARENT_RE.exec(headers[TRACEPARENT] ?? "");
  if (!m || m[1] === "ff") return ROOT_CONTEXT;
  const sc = {
    traceId: m[2] as string,
    spanId: m[3] as string,
    traceFlags: Number.parseInt(m[4] as string, 16) & 1,
    isRemote: true,
    traceState: headers[TRACESTATE] ? createTraceState(headers[TRACESTATE]) : undefined,
  };
  return trace.isSpanContextValid(sc) ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

/** What the handler span of a job says about it. */
export interface HandledJob {
  readonly id: string;
  readonly queue: string;
  readonly attempt: number;
  readonly headers: Readonly<Record<string, string>>;
}

/** Starts the span a job's handler runs in: "process <queue>", a child of the producer's span. */
export function startHandlerSpan(tracer: Tracer, job: HandledJob): Span {
  return tracer.startSpan(
    `process ${job.queue}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "messaging.system": "taskq",
        "messaging.operation.type": "process",
        "messaging.destination.name": job.queue,
        "messaging.message.id": job.id,
        "taskq.job.attempt": job.attempt,
      },
    },
    producerContext(job.headers),
  );
}

/** Runs `fn` with `span` active, so the handler's own spans are its children. */
export function runInSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** Ends a handler span with the job's outcome (success, failure, cancelled, released, lease_lost). */
export function endHandlerSpan(span: Span, outcome: string, error?: string): void {
  span.setAttribute("taskq.job.outcome", outcome);
  if (outcome === "failure") span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}
