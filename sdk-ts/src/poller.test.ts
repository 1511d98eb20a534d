import { describe, expect, it } from "vitest";
import { ThrottleReason } from "./gen/taskq/v1/job_pb.js";
import { reasonName } from "./poller.js";

describe("reasonName", () => {
  it("names verdicts by their reason, as counted in snapshot().throttled", () => {
    expect(reasonName(ThrottleReason.PAUSED)).toBe("PAUSED");
    expect(reasonName(ThrottleReason.MAX_RUNNING)).toBe("MAX_RUNNING");
    expect(reasonName(ThrottleReason.BREAKER_PROBING)).toBe("BREAKER_PROBING");
  });

  it("counts an unknown reason number as UNSPECIFIED", () => {
    expect(reasonName(99)).toBe("UNSPECIFIED");
    expect(reasonName(0)).toBe("UNSPECIFIED");
  });
});
