import { describe, expect, it } from "vitest";
import { mergeQueues, selectPage } from "./queues-model.js";

describe("mergeQueues", () => {
  it("joins settings, health and counters by name, and lists a queue any of them knows", () => {
    const rows = mergeQueues(
      [
        {
          name: "mail",
          paused: true,
          maxRunning: 4,
          throttle: { limit: 5, periodMs: 60000, source: "THROTTLE_SOURCE_CONFIG" },
          breaker: { state: "BREAKER_STATE_OPEN", failureStreak: 3, failureThreshold: 3 },
        },
      ],
      [
        { queue: "mail", verdict: "paused" },
        { queue: "sms", verdict: "healthy" },
      ],
      [
        {
          queue: "sms",
          queued: "7",
          scheduled: "2",
          running: "1",
          throttledLastHour: { PAUSED: "3", THROTTLE: "9" },
        },
        { queue: "done-only", succeededLastHour: "12" },
      ],
    );
    expect(rows.map((r) => r.name)).toEqual(["done-only", "mail", "sms"]);
    const [doneOnly, mail, sms] = rows;
    expect(doneOnly).toMatchObject({ verdict: "idle", succeededLastHour: 12, throttle: null, breaker: null });
    expect(mail).toMatchObject({
      verdict: "paused",
      paused: true,
      maxRunning: 4,
      queued: 0,
      throttle: { limit: 5, periodMs: 60000, source: "config" },
      breaker: { state: "open", failureStreak: 3, failureThreshold: 3 },
    });
    expect(sms).toMatchObject({ queued: 7, scheduled: 2, running: 1, maxRunning: null, paused: false });
    expect(sms?.throttled).toEqual([
      ["THROTTLE", 9],
      ["PAUSED", 3],
    ]);
  });

  it("reads a throttle set through the API as console-sourced", () => {
    const [row] = mergeQueues(
      [{ name: "q", throttle: { limit: 1, periodMs: 1000, source: "THROTTLE_SOURCE_CONSOLE" } }],
      [],
      [],
    );
    expect(row?.throttle?.source).toBe("console");
  });
});

describe("selectPage", () => {
  const rows = mergeQueues(
    Array.from({ length: 1000 }, (_, i) => ({
      name: `q${String(i).padStart(4, "0")}`,
      paused: i % 100 === 0,
    })),
    Array.from({ length: 1000 }, (_, i) => ({
      queue: `q${String(i).padStart(4, "0")}`,
      verdict: i % 100 === 0 ? "paused" : "idle",
    })),
    [],
  );

  it("cuts 1,000 queues into pages", () => {
    const p = selectPage(rows, "", 19, 50);
    expect({ page: p.page, pages: p.pages, matching: p.matching, first: p.rows[0]?.name }).toEqual({
      page: 19,
      pages: 20,
      matching: 1000,
      first: "q0950",
    });
    expect(p.rows).toHaveLength(50);
  });

  it("matches a name or a verdict, in any case, and clamps a page past the end", () => {
    expect(selectPage(rows, "Q09", 0, 50).matching).toBe(100);
    const paused = selectPage(rows, "paused", 7, 50);
    expect({ matching: paused.matching, page: paused.page, pages: paused.pages }).toEqual({
      matching: 10,
      page: 0,
      pages: 1,
    });
    expect(selectPage(rows, "nothing-like-this", 3, 50)).toEqual({
      rows: [],
      matching: 0,
      page: 0,
      pages: 1,
    });
  });
});
