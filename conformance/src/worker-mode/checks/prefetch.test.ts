import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { HandlerEventKind, WorkerCaseSchema } from "@taskq/sdk/conformance";
import {
  ClaimRequestSchema,
  ClaimResponseSchema,
  SettleRequestSchema,
  ThrottleReason,
} from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { Trace, type TraceEvent } from "../trace.js";
import { TraceViews } from "../views.js";
import { held, releasedOnVerdict } from "./prefetch.js";

// The prefetch checks judged on hand-made traces.
function ctx(events: TraceEvent[]) {
  const t = new Trace();
  t.events.push(...events);
  return { views: new TraceViews(t), case: create(WorkerCaseSchema) };
}
const poll = (t: number, maxJobs: number, settled: string[] = []): TraceEvent => ({
  type: "poll",
  t,
  id: 1,
  req: create(ClaimRequestSchema, {
    queues: ["q"],
    maxJobs,
    settlements: settled.map((jobId) => ({
      lease: { jobId, attempt: 1 },
      outcome: { case: "success" as const, value: {} },
    })),
  }),
});
const handed = (t: number, ids: string[]): TraceEvent => ({
  type: "claim_answer",
  t,
  id: 1,
  deadlines: ids.map(() => t + 5_000),
  res: create(ClaimResponseSchema, { jobs: ids.map((id) => ({ id, attempt: 1, queue: "q" })) }),
});
const verdict = (t: number, reason: ThrottleReason): TraceEvent => ({
  type: "claim_answer",
  t,
  id: 1,
  deadlines: [],
  res: create(ClaimResponseSchema, {
    throttled: [{ queue: "q", reason, retryAfter: durationFromMs(5_000) }],
  }),
});
const settle = (t: number, jobId: string, outcome: "released" | "success"): TraceEvent => ({
  type: "settle",
  t,
  id: 1,
  req: create(SettleRequestSchema, {
    settlements: [
      {
        lease: { jobId, attempt: 1 },
        outcome: outcome === "released" ? { case: "released", value: {} } : { case: "success", value: {} },
      },
    ],
  }),
});
const started = (t: number, jobId: string): TraceEvent => ({
  type: "handler",
  t,
  event: { jobId, attempt: 1, kind: HandlerEventKind.STARTED } as never,
});

describe("releasedOnVerdict", () => {
  const check = (events: TraceEvent[]) => releasedOnVerdict(ctx(events), {} as never);
  const before = [poll(0, 3), handed(1, ["1", "2", "3"]), started(5, "1"), poll(10, 1)];

  it("accepts a buffer given back at once on PAUSED, the running job left alone", () => {
    expect(
      check([
        ...before,
        verdict(20, ThrottleReason.PAUSED),
        settle(30, "2", "released"),
        settle(31, "3", "released"),
      ]),
    ).toEqual([]);
  });

  it("takes a start reported just after the verdict for one the worker made before it", () => {
    // The handler's STARTED travels on the program's stdout, which can lag the wire.
    expect(
      check([
        poll(0, 3),
        handed(1, ["1", "2", "3"]),
        poll(10, 1),
        verdict(20, ThrottleReason.BREAKER_OPEN),
        settle(30, "2", "released"),
        settle(31, "3", "released"),
        started(70, "1"),
      ]),
    ).toEqual([]);
  });

  it("flags a buffered job started after the verdict, one never given back, and a late release", () => {
    const out = check([
      ...before,
      verdict(20, ThrottleReason.BREAKER_OPEN),
      started(900, "2"),
      settle(1000, "2", "success"),
      settle(800, "3", "released"),
    ]);
    expect(out).toEqual([
      expect.stringMatching(
        /^job 2\/1, held unstarted at the BREAKER_OPEN verdict .*: its handler started at 900 ms$/,
      ),
      expect.stringMatching(/^job 2\/1, .*: settled success, want released$/),
      expect.stringMatching(/^job 3\/1, .*: released 780 ms after the verdict, want within 500 ms$/),
    ]);
  });

  it("cannot pass a trace whose verdicts found no unstarted job, or that gave none to the buffer", () => {
    expect(check([...before, verdict(20, ThrottleReason.THROTTLE)])).toHaveLength(1);
    expect(
      check([poll(0, 1), handed(1, ["1"]), started(5, "1"), verdict(20, ThrottleReason.PAUSED)]),
    ).toHaveLength(1);
  });
});

describe("held", () => {
  const check = (events: TraceEvent[], atMost: number, peakAtLeast = 0) =>
    held(ctx(events), { atMost, peakAtLeast } as never);

  it("counts a job held from its answer until its settle is sent, on a poll or its own stream", () => {
    const events = [
      poll(0, 3),
      handed(1, ["1", "2", "3"]),
      settle(100, "1", "success"),
      poll(101, 1),
      handed(102, ["4"]),
      poll(200, 1, ["2"]),
      handed(201, ["5"]),
    ];
    expect(check(events, 3, 3)).toEqual([]);
    expect(check(events, 3, 4)).toEqual([
      "the worker held at most 3 jobs at once, want 4 (buffer left empty)",
    ]);
  });

  it("flags a poll asking past the bound, and more jobs held than it", () => {
    expect(check([poll(0, 3), handed(1, ["1", "2", "3"]), poll(50, 1), handed(51, ["4"])], 3)).toEqual([
      "a poll at 50 ms asked for 1 jobs while the worker held 3, more than 3 in all",
      "the worker held 4 jobs at once at 51 ms, more than 3",
    ]);
  });
});
