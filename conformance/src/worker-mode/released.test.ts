import { create } from "@bufbuild/protobuf";
import { JobState, SettlementSchema, SettleStatus } from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { JobPool } from "./job-pool.js";
import { LeaseBook } from "./lease-book.js";

// The reference gateway's Released, as a real gateway does it: ready again at once in its place with the
// next attempt, the released attempt fenced, a pending cancel honoured.
const released = (jobId: string, attempt = 1) =>
  create(SettlementSchema, {
    lease: { jobId, attempt },
    outcome: { case: "released", value: { reason: "r" } },
  });
const success = (jobId: string, attempt = 1) =>
  create(SettlementSchema, { lease: { jobId, attempt }, outcome: { case: "success", value: {} } });

describe("a released lease in the lease book", () => {
  it("leaves the job queued; a repeat is accepted and changes nothing; another outcome finds it lost", () => {
    const book = new LeaseBook();
    book.handOut("a", 1, 5_000);
    expect(book.settle(released("a"), undefined)).toEqual({
      status: SettleStatus.ACCEPTED,
      state: JobState.QUEUED,
      applied: true,
    });
    expect(book.settle(released("a"), undefined)).toMatchObject({
      status: SettleStatus.ACCEPTED,
      applied: false,
    });
    expect(book.settle(success("a"), undefined).status).toBe(SettleStatus.LEASE_LOST);
    expect(book.beat("a", 1)?.gone).toBe(true);
  });

  it("cancels a job whose cancel was requested", () => {
    const book = new LeaseBook();
    book.handOut("a", 1, 5_000);
    book.markCancelRequested("a", 1);
    expect(book.settle(released("a"), undefined).state).toBe(JobState.CANCELLED);
  });
});

describe("a released job in the pool", () => {
  it("goes out again at once, in its place, with the next attempt, and wakes a parked poll", () => {
    const pool = new JobPool([{ id: "a" }, { id: "b" }, { id: "c" }] as never, "q");
    expect(pool.take(["q"], 1, 0).map((j) => [j.job.id, j.attempt])).toEqual([["a", 1]]);
    let woken = 0;
    pool.onRequeue(() => woken++);
    pool.requeue("a");
    expect(woken).toBe(1);
    expect(pool.take(["q"], 3, 0).map((j) => [j.job.id, j.attempt])).toEqual([
      ["a", 2],
      ["b", 1],
      ["c", 1],
    ]);
  });
});
