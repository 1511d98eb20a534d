import { describe, expect, it } from "vitest";
import { LazyAbort } from "./lazy-abort.js";

describe("LazyAbort", () => {
  it("aborts a signal read before the abort, with the reason", () => {
    const a = new LazyAbort();
    const signal = a.signal;
    let heard: unknown;
    signal.addEventListener("abort", () => {
      heard = signal.reason;
    });
    expect(signal.aborted).toBe(false);
    a.abort("gone");
    expect(signal.aborted).toBe(true);
    expect(heard).toBe("gone");
    expect(a.signal).toBe(signal);
  });

  it("hands out an already aborted signal after an abort nobody listened to", () => {
    const a = new LazyAbort();
    a.abort("late");
    a.abort("ignored");
    expect(a.signal.aborted).toBe(true);
    expect(a.signal.reason).toBe("late");
    expect(a.signal).toBe(a.signal);
  });
});
