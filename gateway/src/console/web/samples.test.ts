import { describe, expect, it } from "vitest";
import { mergeQueues } from "./queues-model.js";
import { Samples } from "./samples.js";

describe("Samples", () => {
  it("keeps the readings of the window only, oldest first, waiting = queued + scheduled", () => {
    const samples = new Samples(10_000);
    const [row] = mergeQueues(
      [{ name: "q", maxRunning: 3 }],
      [],
      [
        {
          queue: "q",
          queued: "4",
          scheduled: "1",
          running: "2",
          throttledLastHour: { PAUSED: "2", THROTTLE: "5" },
        },
      ],
    );
    if (!row) throw new Error("no row");
    for (const at of [0, 4_000, 8_000, 12_000, 16_000]) samples.add(row, at);
    expect(samples.all.map((s) => s.at)).toEqual([8_000, 12_000, 16_000]);
    expect(samples.all[0]).toEqual({
      at: 8_000,
      queued: 5,
      running: 2,
      maxRunning: 3,
      succeededPerMinute: 0,
      failedPerMinute: 0,
      throttledLastHour: 7,
    });
  });
});
