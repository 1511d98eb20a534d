import { context, ROOT_CONTEXT, TraceFlags, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { producerContext, withTraceContext } from "./tracing.js";

// A context manager makes context.with() set the active context; no tracer provider is needed.
beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
afterAll(() => context.disable());

const traceId = "0af7651916cd43dd8448eb211c80319c";
const spanId = "b7ad6b7169203331";
const active = (fn: () => void, flags = TraceFlags.SAMPLED) =>
  context.with(trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: flags }), fn);

describe("withTraceContext", () => {
  it("writes the active span as a W3C traceparent beside the producer's headers", () => {
    active(() => {
      expect(withTraceContext({ a: "1" })).toEqual({ a: "1", traceparent: `00-${traceId}-${spanId}-01` });
      expect(withTraceContext(undefined)).toEqual({ traceparent: `00-${traceId}-${spanId}-01` });
    });
    active(() => expect(withTraceContext({})).toEqual({ traceparent: `00-${traceId}-${spanId}-00` }), 0);
  });

  it("leaves the headers alone with no active span, a traceparent of the producer's, or no room", () => {
    const mine = { traceparent: "00-11111111111111111111111111111111-2222222222222222-01" };
    expect(withTraceContext({ a: "1" })).toEqual({ a: "1" });
    const full = Object.fromEntries(Array.from({ length: 63 }, (_, i) => [`h${i}`, "x"]));
    active(() => {
      expect(withTraceContext(mine)).toBe(mine);
      expect(withTraceContext(full)).toBe(full);
    });
  });
});

describe("producerContext", () => {
  it("reads a traceparent and tracestate back", () => {
    const sc = trace.getSpanContext(
      producerContext({ traceparent: `00-${traceId}-${spanId}-01`, tracestate: "vendor=x" }),
    );
    expect(sc).toMatchObject({ traceId, spanId, traceFlags: 1, isRemote: true });
    expect(sc?.traceState?.get("vendor")).toBe("x");
  });

  it("gives the root context for a missing or malformed traceparent", () => {
    for (const traceparent of [
      undefined,
      "",
      "garbage",
      `ff-${traceId}-${spanId}-01`,
      `00-${"0".repeat(32)}-${spanId}-01`,
      `00-${traceId.toUpperCase()}-${spanId}-01`,
    ]) {
      const headers: Record<string, string> = traceparent === undefined ? {} : { traceparent };
      expect(producerContext(headers), String(traceparent)).toBe(ROOT_CONTEXT);
    }
  });
});
