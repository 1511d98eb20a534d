import { describe, expect, it } from "vitest";
import { adaptiveSteps } from "./adaptive-model.js";

describe("adaptiveSteps", () => {
  const t0 = Date.parse("2026-01-01T10:00:00Z");
  const at = (s: number) => new Date(t0 + s * 1000).toISOString();

  it("a step at each change in the window, from the value in force at its start to the limit now", () => {
    const changes = [
      { at: at(50), limitBefore: 5, limitAfter: 3, reason: "latency 900 ms over target 500" },
      { at: at(20), limitBefore: 4, limitAfter: 5 },
      { at: at(-30), limitBefore: 3, limitAfter: 4 },
    ];
    expect(adaptiveSteps(changes, 3, t0, t0 + 60_000)).toEqual([
      [t0, 4],
      [t0 + 20_000, 4],
      [t0 + 20_000, 5],
      [t0 + 50_000, 5],
      [t0 + 50_000, 3],
      [t0 + 60_000, 3],
    ]);
  });

  it("with every change in the window, starts from the first one's before; with none, flat at the limit now", () => {
    expect(adaptiveSteps([{ at: at(10), limitBefore: 8, limitAfter: 2 }], 2, t0, t0 + 60_000)[0]).toEqual([
      t0,
      8,
    ]);
    expect(adaptiveSteps([], 7, t0, t0 + 60_000)).toEqual([
      [t0, 7],
      [t0 + 60_000, 7],
    ]);
  });

  it("turned off to no cap: the line ends in a gap", () => {
    const off = adaptiveSteps([{ at: at(30), limitBefore: 6 }], null, t0, t0 + 60_000);
    expect(off.at(-1)).toEqual([t0 + 60_000, null]);
    expect(off[2]).toEqual([t0 + 30_000, null]);
  });
});
