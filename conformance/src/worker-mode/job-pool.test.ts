import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { GatewayScriptSchema } from "@taskq/sdk/conformance";
import { describe, expect, it } from "vitest";
import { JobPool } from "./job-pool.js";

describe("the reference gateway's job pool", () => {
  it("wakes a poll parked before Ready, which could not know when a ready_after job comes", () => {
    const { jobs } = create(GatewayScriptSchema, { jobs: [{ id: "1", readyAfter: durationFromMs(150) }] });
    const pool = new JobPool(jobs, "q");
    expect(pool.nextReadyIn(["q"], 0)).toBe(Number.POSITIVE_INFINITY);
    let woken = 0;
    pool.onRequeue(() => woken++);
    pool.markReady(10);
    expect(woken).toBe(1);
    expect(pool.nextReadyIn(["q"], 20)).toBe(140);
    pool.markReady(50);
    expect(woken).toBe(1);
  });
});
