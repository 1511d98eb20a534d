import { create } from "@bufbuild/protobuf";
import { WorkerCaseSchema } from "@taskq/sdk/conformance";
import { ClaimRequestSchema, ClaimResponseSchema, SettleRequestSchema } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { Trace, type TraceEvent } from "../trace.js";
import { TraceViews } from "../views.js";
import { concurrency } from "./claims.js";
import { settled } from "./settles.js";

// The concurrency and settled checks judged on hand-made traces.
function ctx(events: TraceEvent[], prefetch = 0) {
  const t = new Trace();
  t.events.push(...events);
  return { views: new TraceViews(t), case: create(WorkerCaseSchema, { worker: { prefetch } }) };
}
const poll = (t: number, maxJobs: number): TraceEvent => ({
  type: "poll",
  t,
  id: 1,
  req: create(ClaimRequestSchema, { queues: ["q"], maxJobs }),
});
const handed = (t: number, ids: string[]): TraceEvent => ({
  type: "claim_answer",
  t,
  id: 1,
  deadlines: ids.map(() => t + 5_000),
  res: create(ClaimResponseSchema, { jobs: ids.map((id) => ({ id, attempt: 1, queue: "q" })) }),
});
const settle = (t: number, jobId: string, outcome: "success" | "failure", retryable = false): TraceEvent => ({
  type: "settle",
  t,
  id: 1,
  req: create(SettleRequestSchema, {
    settlements: [
      {
        lease: { jobId, attempt: 1 },
        outcome:
          outcome === "success"
            ? { case: "success", value: {} }
            : { case: "failure", value: { type: "WorkerShutdown", message: "stopped", retryable } },
      },
    ],
  }),
});

describe("concurrency", () => {
  const check = (events: TraceEvent[], prefetch = 0) =>
    concurrency(ctx(events, prefetch), { atMost: 3, peakAtLeast: 0 } as never);

  it("accepts polls that ask for the slots free when they are sent", () => {
    expect(
      check([poll(0, 3), handed(1, ["1", "2", "3"]), settle(200, "1", "success"), poll(201, 1)]),
    ).toEqual([]);
  });

  it("flags a poll that asks for the whole concurrency while some slots are busy", () => {
    expect(
      check([poll(0, 3), handed(1, ["1", "2", "3"]), settle(200, "1", "success"), poll(201, 3)]),
    ).toEqual(["a poll at 201 ms asked for 3 jobs while the worker held 2, more than 3 in all"]);
  });

  it("lets a worker with prefetch ask for its buffer's room too", () => {
    expect(check([poll(0, 5), handed(1, ["1", "2", "3"]), poll(2, 2)], 2)).toEqual([]);
    expect(check([poll(0, 5), handed(1, ["1", "2", "3"]), poll(2, 3)], 2)).toHaveLength(1);
  });
});

describe("settled with failureRetryable", () => {
  const check = (events: TraceEvent[]) =>
    settled(ctx(events), { jobId: "1", outcome: 4, failureRetryable: true } as never);

  it("accepts a retryable failure and refuses one a retry cannot fix", () => {
    expect(check([handed(0, ["1"]), settle(10, "1", "failure", true)])).toEqual([]);
    expect(check([handed(0, ["1"]), settle(10, "1", "failure", false)])).toEqual([
      "job 1 failed with retryable false, want a retryable failure (a retry can finish it)",
    ]);
  });
});
