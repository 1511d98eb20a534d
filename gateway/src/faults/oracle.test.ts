import { describe, expect, it } from "vitest";
import { checkTotalQueue, describeReport, type StoredJob, type WorkerEvent } from "./oracle.js";

/** The events of one clean attempt: claimed at `at` with a 2 s lease, completed 100 ms later. */
function run(job: string, attempt: number, at: number, worker = "w1"): WorkerEvent[] {
  return [
    { kind: "claimed", job, attempt, worker, atMs: at, leaseDeadlineMs: at + 2000 },
    { kind: "completed", job, attempt, worker, atMs: at + 100, leaseDeadlineMs: at + 2000 },
  ];
}

const succeeded = (job: string, attempt: number): StoredJob => ({
  job,
  state: "succeeded",
  attempt,
  resultAttempt: attempt,
});

describe("checkTotalQueue", () => {
  it("passes jobs that came out once", () => {
    const report = checkTotalQueue({
      enqueued: ["1", "2"],
      events: [...run("1", 1, 0), ...run("2", 1, 10)],
      stored: [succeeded("1", 1), succeeded("2", 1)],
    });
    expect(report).toMatchObject({ ok: true, enqueued: 2, settledOnce: 2, lost: 0, redelivered: 0 });
  });

  it("allows a second run once the first lease, heartbeats included, had expired", () => {
    const events: WorkerEvent[] = [
      { kind: "claimed", job: "1", attempt: 1, worker: "dead", atMs: 0, leaseDeadlineMs: 2000 },
      { kind: "extended", job: "1", attempt: 1, worker: "dead", atMs: 700, leaseDeadlineMs: 2700 },
      ...run("1", 2, 2700, "w2"),
    ];
    const report = checkTotalQueue({ enqueued: ["1"], events, stored: [succeeded("1", 2)] });
    expect(report).toMatchObject({ ok: true, settledOnce: 1, redelivered: 1 });
  });

  it("calls a job lost when it is missing, left running or failed", () => {
    const report = checkTotalQueue({
      enqueued: ["1", "2", "3", "4"],
      events: [...run("1", 1, 0), ...run("2", 1, 0)],
      stored: [
        succeeded("1", 1),
        { job: "2", state: "running", attempt: 1, resultAttempt: null },
        { job: "3", state: "queued", attempt: 0, resultAttempt: null },
      ],
    });
    expect(report).toMatchObject({ ok: false, settledOnce: 1, lost: 3 });
    expect(report.verdicts.find((v) => v.job === "2")).toMatchObject({
      kind: "lost",
      reason: "left running at attempt 1",
    });
    expect(report.verdicts.find((v) => v.job === "4")).toMatchObject({
      kind: "lost",
      reason: "not in the store",
    });
  });

  it("calls a job duplicated when a later attempt was claimed inside the earlier lease", () => {
    const events: WorkerEvent[] = [
      { kind: "claimed", job: "1", attempt: 1, worker: "w1", atMs: 0, leaseDeadlineMs: 2000 },
      { kind: "extended", job: "1", attempt: 1, worker: "w1", atMs: 700, leaseDeadlineMs: 2700 },
      ...run("1", 2, 2500, "w2"),
    ];
    const report = checkTotalQueue({ enqueued: ["1"], events, stored: [succeeded("1", 2)] });
    expect(report).toMatchObject({ ok: false, duplicated: 1 });
    expect(report.verdicts[0]).toMatchObject({
      kind: "duplicated",
      reason: expect.stringMatching(/200 ms before/),
    });
  });

  it("calls a job duplicated when one attempt was handed out twice", () => {
    const events = [...run("1", 1, 0, "w1"), ...run("1", 1, 50, "w2")];
    const report = checkTotalQueue({ enqueued: ["1"], events, stored: [succeeded("1", 1)] });
    expect(report.verdicts[0]).toMatchObject({
      kind: "duplicated",
      reason: "attempt 1 was handed out twice",
    });
  });

  it("calls a stale write a duplicate: the stored result came from a superseded attempt", () => {
    const events = [...run("1", 1, 0, "w1"), ...run("1", 2, 3000, "w2")];
    const stored: StoredJob[] = [{ job: "1", state: "succeeded", attempt: 2, resultAttempt: 1 }];
    const report = checkTotalQueue({ enqueued: ["1"], events, stored });
    expect(report.verdicts[0]).toMatchObject({
      kind: "duplicated",
      reason: expect.stringMatching(/^stale write/),
    });
  });

  it("calls unexpected a job never enqueued, and a result no worker completed", () => {
    const report = checkTotalQueue({
      enqueued: ["1", "2"],
      events: [...run("1", 1, 0), ...run("9", 1, 0), run("2", 1, 0)[0] as WorkerEvent],
      stored: [succeeded("1", 1), succeeded("2", 1), succeeded("8", 1)],
    });
    expect(report).toMatchObject({ ok: false, settledOnce: 1, unexpected: 3 });
    expect(
      report.verdicts
        .filter((v) => v.kind === "unexpected")
        .map((v) => v.job)
        .sort(),
    ).toEqual(["2", "8", "9"]);
  });

  it("prints the figures and an example of each failure", () => {
    const report = checkTotalQueue({ enqueued: ["1"], events: [], stored: [] });
    expect(describeReport(report)).toBe(
      "enqueued 1: settled once 0, lost 1, duplicated 0, unexpected 0; redelivered after an expired lease 0\n  lost 1: not in the store",
    );
  });
});
