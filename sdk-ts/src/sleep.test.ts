import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { Wakeup } from "./sleep.js";

describe("Wakeup", () => {
  it("wakes its waiters on notify, each wait on its own timeout, and all of them on abort", async () => {
    const wakeup = new Wakeup();
    const woken: string[] = [];
    const stop = new AbortController();
    const a = wakeup.wait(Number.POSITIVE_INFINITY).then(() => woken.push("a"));
    const b = wakeup.wait(Number.POSITIVE_INFINITY, stop.signal).then(() => woken.push("b"));
    wakeup.notify();
    await Promise.all([a, b]);
    expect(woken.sort()).toEqual(["a", "b"]);

    const started = performance.now();
    await wakeup.wait(20);
    expect(performance.now() - started).toBeGreaterThanOrEqual(19);

    const c = wakeup.wait(Number.POSITIVE_INFINITY, stop.signal).then(() => woken.push("c"));
    stop.abort();
    await c;
    expect(woken).toContain("c");
    // Already aborted: resolves at once.
    await wakeup.wait(Number.POSITIVE_INFINITY, stop.signal);
  });

  it("listens to a signal once however often it waits on it", async () => {
    const wakeup = new Wakeup();
    const signal = new AbortController().signal;
    for (let i = 0; i < 1000; i++) {
      const waited = wakeup.wait(Number.POSITIVE_INFINITY, signal);
      wakeup.notify();
      await waited;
    }
    expect(getEventListeners(signal, "abort")).toHaveLength(1);
  });
});
