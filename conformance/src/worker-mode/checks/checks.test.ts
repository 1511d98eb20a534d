import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Stream, WorkerCaseSchema } from "@taskq/sdk/conformance";
import { ClaimRequestSchema, ClaimResponseSchema, HeartbeatRequestSchema } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { Trace, type TraceEvent } from "../trace.js";
import { TraceViews } from "../views.js";
import { claimStreamHalfClosed } from "./drain.js";
import { heartbeatsInTime } from "./heartbeats.js";
import { reconnectBackoff } from "./streams.js";
import { verdictsHonoured } from "./verdicts.js";

// Checks judged on hand-made traces, at the edges of their bounds.
function traceOf(events: TraceEvent[]): Trace {
  const t = new Trace();
  t.events.push(...events);
  return t;
}
const ctx = (events: TraceEvent[]) => ({
  views: new TraceViews(traceOf(events)),
  case: create(WorkerCaseSchema),
});
const poll = (t: number): TraceEvent => ({
  type: "poll",
  t,
  id: 1,
  req: create(ClaimRequestSchema, { queues: ["q"] }),
});
const verdict = (t: number, ms: number): TraceEvent => ({
  type: "claim_answer",
  t,
  id: 1,
  deadlines: [],
  res: create(ClaimResponseSchema, {
    throttled: [{ queue: "q", reason: 5, retryAfter: durationFromMs(ms) }],
  }),
});

describe("verdictsHonoured", () => {
  const check = (events: TraceEvent[]) =>
    verdictsHonoured(ctx(events), { lateAtMost: durationFromMs(200) } as never);

  it("accepts a re-poll from retry_after on, within the late bound", () => {
    expect(check([poll(0), verdict(1, 300), poll(301), { type: "stop_sent", t: 1000 }])).toEqual([]);
    expect(check([poll(0), verdict(1, 300), poll(500), { type: "stop_sent", t: 1000 }])).toEqual([]);
  });

  it("refuses a re-poll before retry_after, one too late, and none at all", () => {
    expect(check([poll(0), verdict(1, 300), poll(290), { type: "stop_sent", t: 1000 }])[0]).toMatch(
      /after only 289 ms/,
    );
    expect(check([poll(0), verdict(1, 300), poll(600)])[0]).toMatch(/want at most 500 ms/);
    expect(check([poll(0), verdict(1, 300), { type: "stop_sent", t: 1000 }])[0]).toMatch(
      /never polled q again/,
    );
  });

  it("cannot pass a trace without verdicts", () => {
    expect(check([poll(0)])).toHaveLength(1);
  });
});

describe("heartbeatsInTime", () => {
  const claimed = (t: number, leaseMs: number): TraceEvent => ({
    type: "claim_answer",
    t,
    id: 1,
    deadlines: [t + leaseMs],
    res: create(ClaimResponseSchema, { jobs: [{ id: "7", attempt: 1 }] }),
  });
  const beat = (t: number): TraceEvent => ({
    type: "beat",
    t,
    id: 1,
    req: create(HeartbeatRequestSchema, { leases: [{ jobId: "7", attempt: 1 }] }),
  });
  const exit: TraceEvent = { type: "exit", t: 2000, code: 0, signal: null };

  it("flags a lease held past its deadline without a beat", () => {
    expect(heartbeatsInTime(ctx([claimed(0, 1000), exit]), {} as never)[0]).toMatch(
      /lease 7\/1 reached its deadline/,
    );
  });

  it("flags a beat that comes after the deadline", () => {
    expect(heartbeatsInTime(ctx([claimed(0, 1000), beat(1001), exit]), {} as never)).toHaveLength(1);
  });
});

describe("claimStreamHalfClosed", () => {
  const check = (events: TraceEvent[]) => claimStreamHalfClosed(ctx(events), {} as never);
  const open = (t: number, id = 1): TraceEvent => ({
    type: "open",
    t,
    stream: "claim",
    id,
    authorization: "",
  });
  const end = (t: number, how: "half-closed" | "cancelled" | "gateway", id = 1): TraceEvent => ({
    type: "end",
    t,
    stream: "claim",
    id,
    how,
  });
  const stop: TraceEvent = { type: "stop_sent", t: 500 };

  it("accepts a stream half-closed soon after the stop", () => {
    expect(check([open(0), stop, end(510, "half-closed")])).toEqual([]);
  });

  it("ignores streams that ended before the stop", () => {
    expect(check([open(0), end(100, "cancelled"), open(200, 2), stop, end(510, "half-closed", 2)])).toEqual(
      [],
    );
  });

  it("flags a cancelled stream, one left for the gateway to cut, and a late half-close", () => {
    expect(check([open(0), stop, end(510, "cancelled")])[0]).toMatch(/cancelled \(reset\)/);
    expect(check([open(0), stop, end(9000, "gateway")])[0]).toMatch(/still open when the case ended/);
    expect(check([open(0), stop])[0]).toMatch(/still open when the case ended/);
    expect(check([open(0), stop, end(1600, "half-closed")])[0]).toMatch(/want within 1000 ms/);
  });

  it("cannot pass a trace without a claim stream open at the stop, or without a stop", () => {
    expect(check([stop])).toHaveLength(1);
    expect(check([open(0), end(100, "half-closed"), stop])).toHaveLength(1);
    expect(check([open(0)])[0]).toMatch(/never sent a stop/);
  });
});

describe("reconnectBackoff growth", () => {
  // Claim stream failures at the given times, each reopened `gap` ms later.
  const run = (gaps: number[]): TraceEvent[] => {
    const events: TraceEvent[] = [];
    let t = 0;
    gaps.forEach((gap, i) => {
      events.push({ type: "fail", t, stream: "claim", id: i + 1, code: "UNAVAILABLE" });
      t += gap;
      events.push({ type: "open", t, stream: "claim", id: i + 2, authorization: "" });
    });
    return events;
  };
  const check = (gaps: number[]) =>
    reconnectBackoff(ctx(run(gaps)), { stream: Stream.CLAIM, growth: 2 } as never);

  it("accepts waits that grow, one of the first stretched by a loaded machine", () => {
    expect(check([100, 200, 400, 500, 500])).toEqual([]);
    expect(check([300, 200, 400, 500, 500])).toEqual([]);
  });

  it("flags waits that never grow", () => {
    expect(check([100, 100, 100, 100, 100])[0]).toMatch(/did not grow/);
  });
});
