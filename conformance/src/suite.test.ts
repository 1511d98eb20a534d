import { Level } from "@taskq/sdk/conformance";
import { describe, expect, it } from "vitest";
import { pool, selectCases } from "./suite.js";

const cases = [
  { name: "verdict/a", level: Level.REQUIRED, features: ["verdict"] },
  { name: "verdict/b", level: Level.RECOMMENDED, features: ["verdict"] },
  { name: "reconnect/c", level: Level.REQUIRED, features: ["reconnect", "verdict"] },
  { name: "claim/d", level: Level.REQUIRED, features: [] },
];
const names = (s: Parameters<typeof selectCases>[1]) => selectCases(cases, s).map((c) => c.name);

describe("selectCases", () => {
  it("selects by name glob, level and features", () => {
    expect(names({ run: [], requiredOnly: false })).toEqual(cases.map((c) => c.name));
    expect(names({ run: ["verdict/*"], requiredOnly: false })).toEqual(["verdict/a", "verdict/b"]);
    expect(names({ run: ["verdict/*", "claim/d"], requiredOnly: true })).toEqual(["verdict/a", "claim/d"]);
    expect(names({ run: [], requiredOnly: false, skipFeatures: ["reconnect"] })).toEqual([
      "verdict/a",
      "verdict/b",
      "claim/d",
    ]);
  });
});

describe("pool", () => {
  it("runs at most `parallel` at once and keeps input order", async () => {
    let running = 0;
    let peak = 0;
    const out = await pool([30, 10, 20, 5, 15], 2, async (ms) => {
      peak = Math.max(peak, ++running);
      await new Promise((r) => setTimeout(r, ms));
      running--;
      return ms * 2;
    });
    expect(out).toEqual([60, 20, 40, 10, 30]);
    expect(peak).toBe(2);
  });
});
