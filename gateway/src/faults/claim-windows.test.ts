import { describe, expect, it } from "vitest";
import { busiestWindow, claimTimes } from "./claim-windows.js";
import type { WorkerEvent } from "./oracle.js";

describe("busiestWindow", () => {
  it("counts the most times inside any window, the end excluded", () => {
    expect(busiestWindow([], 1000)).toBe(0);
    expect(busiestWindow([0, 200, 400, 600, 800, 1000], 1000)).toBe(5);
    expect(busiestWindow([0, 10, 20, 2000], 1000)).toBe(3);
  });
});

describe("claimTimes", () => {
  it("keeps the claims inside [from, to), sorted", () => {
    const at = (kind: WorkerEvent["kind"], atMs: number): WorkerEvent => ({
      kind,
      job: "1",
      attempt: 1,
      worker: "w",
      atMs,
      leaseDeadlineMs: 0,
    });
    expect(
      claimTimes([at("claimed", 30), at("completed", 20), at("claimed", 10), at("claimed", 40)], 10, 40),
    ).toEqual([10, 30]);
  });
});
