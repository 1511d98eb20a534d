import { describe, expect, it } from "vitest";
import { QueueSleep } from "./queue-sleep.js";

const queues = ["a", "b", "c"];

describe("QueueSleep", () => {
  it("skips a throttled queue for exactly retry_after while the others stay awake", () => {
    const s = new QueueSleep();
    s.sleep("b", 500, 1000);
    expect(s.awake(queues, 1000)).toEqual(["a", "c"]);
    expect(s.awake(queues, 1499)).toEqual(["a", "c"]);
    expect(s.awake(queues, 1500)).toEqual(["a", "b", "c"]);
  });

  it("reports the earliest wake when every queue sleeps", () => {
    const s = new QueueSleep();
    s.sleep("a", 300, 0);
    s.sleep("b", 100, 0);
    s.sleep("c", 200, 0);
    expect(s.awake(queues, 50)).toEqual([]);
    expect(s.nextWakeIn(queues, 50)).toBe(50);
    expect(s.awake(queues, 100)).toEqual(["b"]);
  });

  it("treats retry_after 0 as awake at once", () => {
    const s = new QueueSleep();
    s.sleep("a", 0, 1000);
    expect(s.awake(["a"], 1000)).toEqual(["a"]);
    expect(s.nextWakeIn(["a"], 1000)).toBe(0);
  });

  it("lets a later verdict replace an earlier one", () => {
    const s = new QueueSleep();
    s.sleep("a", 10_000, 0);
    s.sleep("a", 100, 50);
    expect(s.awake(["a"], 150)).toEqual(["a"]);
  });

  it("ignores verdicts for queues it is not asked about", () => {
    const s = new QueueSleep();
    s.sleep("other", 1000, 0);
    expect(s.awake(queues, 0)).toEqual(queues);
    expect(s.nextWakeIn(queues, 0)).toBe(0);
  });

  it("tells how long until the first sleeping queue wakes, ignoring awake ones", () => {
    const s = new QueueSleep();
    expect(s.untilFirstSleeperWakes(queues, 0)).toBe(Number.POSITIVE_INFINITY);
    s.sleep("a", 300, 0);
    s.sleep("b", 100, 0);
    expect(s.untilFirstSleeperWakes(queues, 40)).toBe(60);
    expect(s.untilFirstSleeperWakes(queues, 100)).toBe(200);
    expect(s.untilFirstSleeperWakes(queues, 300)).toBe(Number.POSITIVE_INFINITY);
  });
});
