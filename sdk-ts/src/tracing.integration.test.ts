// OpenTelemetry across a real gateway and worker, with the OpenTelemetry SDK's in-memory exporter: the
// producer's trace goes through the job to the handler's span, and the gateway's spans join it.
import { context, type Span, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "./client.js";
import { NonRetryableError } from "./errors.js";
import type { JobContext } from "./job-context.js";
import { Worker } from "./worker.js";

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(async () => {
  await gateway.stop();
  // The API's globals outlive this file in its worker process: leave none behind.
  trace.disable();
  context.disable();
});

async function until(cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting for condition");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs one job of `queue` through a worker whose handler is `handle`; returns its headers. */
async function runOne(
  queue: string,
  enqueue: (client: Client) => Promise<string>,
  handle: (job: JobContext) => void,
) {
  const client = new Client({ baseUrl: gateway.grpcUrl });
  let headers: Readonly<Record<string, string>> | undefined;
  let done = false;
  const worker = new Worker({
    baseUrl: gateway.grpcUrl,
    queues: [queue],
    maxWaitMs: 500,
    handler: async (job) => {
      headers = job.headers;
      try {
        handle(job);
      } finally {
        done = true;
      }
    },
  });
  worker.start();
  try {
    const jobId = await enqueue(client);
    await until(() => done);
    return { jobId, headers: headers ?? {} };
  } finally {
    await worker.stop({ graceMs: 5000 });
  }
}

describe("OpenTelemetry", () => {
  it("adds no trace headers and no spans when the application registers no tracer", async () => {
    let active: Span | undefined;
    const { headers } = await runOne(
      "otel-off",
      async (client) => (await client.enqueue({ queue: "otel-off", headers: { a: "1" } })).jobId,
      () => {
        active = trace.getActiveSpan();
      },
    );
    expect(headers).toEqual({ a: "1" });
    expect(active).toBeUndefined();
  });

  it("carries the producer's trace through the gateway to the handler's span", async () => {
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const app = trace.getTracer("app");

    const ok = await runOne(
      "otel-mail",
      (client) =>
        app.startActiveSpan("produce", async (span) => {
          try {
            return (await client.enqueue({ queue: "otel-mail", payload: { to: "a@example.com" } })).jobId;
          } finally {
            span.end();
          }
        }),
      // The handler runs inside its span: its own spans are children of it.
      () => app.startActiveSpan("send mail", (span) => span.end()),
    );
    const failed = await runOne(
      "otel-fail",
      (client) =>
        app.startActiveSpan("produce failing", async (span) => {
          try {
            return (await client.enqueue({ queue: "otel-fail", maxAttempts: 1 })).jobId;
          } finally {
            span.end();
          }
        }),
      () => {
        throw new NonRetryableError("no such mailbox");
      },
    );
    await until(() =>
      exporter
        .getFinishedSpans()
        .some((s) => s.name === "taskq settle" || s.events.some((e) => e.name === "settled")),
    );

    const spans = exporter.getFinishedSpans();
    const named = (name: string) => spans.filter((s) => s.name === name);
    const one = (name: string): ReadableSpan => {
      const found = named(name);
      expect(found, name).toHaveLength(1);
      return found[0] as ReadableSpan;
    };
    const produce = one("produce");
    const traceId = produce.spanContext().traceId;
    expect(ok.headers.traceparent).toBe(`00-${traceId}-${produce.spanContext().spanId}-01`);

    // The handler's span: a child of the producer's, named by queue, with the job's id, attempt, outcome.
    const process = one("process otel-mail");
    expect(process.spanContext().traceId).toBe(traceId);
    expect(process.parentSpanContext?.spanId).toBe(produce.spanContext().spanId);
    expect(process.attributes).toMatchObject({
      "messaging.system": "taskq",
      "messaging.destination.name": "otel-mail",
      "messaging.message.id": ok.jobId,
      "taskq.job.attempt": 1,
      "taskq.job.outcome": "success",
    });
    expect(one("send mail").parentSpanContext?.spanId).toBe(process.spanContext().spanId);

    const failedProcess = one("process otel-fail");
    expect(failedProcess.spanContext().traceId).toBe(one("produce failing").spanContext().traceId);
    expect(failedProcess.attributes).toMatchObject({
      "messaging.message.id": failed.jobId,
      "taskq.job.outcome": "failure",
    });
    expect(failedProcess.status).toMatchObject({ code: 2, message: "no such mailbox" });

    // The gateway's spans: the enqueue in the producer's trace, the claim linked to it, the settle told.
    const enqueue = named("taskq enqueue").find((s) => s.attributes["messaging.message.id"] === ok.jobId);
    expect(enqueue?.spanContext().traceId).toBe(traceId);
    expect(enqueue?.parentSpanContext?.spanId).toBe(produce.spanContext().spanId);
    const claim = named("taskq claim").find((s) => s.links.some((l) => l.context.traceId === traceId));
    expect(claim?.attributes["messaging.batch.message_count"]).toBe(1);
    const settled = spans
      .flatMap((s) => s.events)
      .filter((e) => e.name === "settled" && e.attributes?.["messaging.message.id"] === ok.jobId);
    expect(settled.map((e) => e.attributes?.["taskq.settle.status"])).toEqual(["accepted"]);
  });
});
