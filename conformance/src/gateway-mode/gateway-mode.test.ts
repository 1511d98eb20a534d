import { fileURLToPath } from "node:url";
import { clone, create } from "@bufbuild/protobuf";
import { startTestGateway } from "@taskq/gateway/testing";
import { type GatewayCase, GatewayCaseSchema, GatewayStepSchema } from "@taskq/sdk/conformance";
import { SettleStatus } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtInCasesDir, loadGatewayCases } from "../cases/load-cases.js";
import { runGatewaySuite } from "../suite.js";

// Our gateway (dev mode: embedded PGlite, open) passes every gateway-mode case.
const cases = loadGatewayCases(fileURLToPath(new URL("gateway/", builtInCasesDir)));
let gateway: Awaited<ReturnType<typeof startTestGateway>>;

beforeAll(async () => {
  gateway = await startTestGateway({ config: { maintenanceIntervalMs: 200 } });
});
afterAll(() => gateway?.stop());

describe("gateway mode against the taskq gateway", () => {
  it("has at least 10 cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(10);
  });

  it("fails a case whose expectation the gateway does not meet", async () => {
    const idempotent = clone(
      GatewayCaseSchema,
      cases.find((c) => c.name === "settle/idempotent") as GatewayCase,
    );
    const second = idempotent.steps[3]?.action;
    if (second?.case !== "settle") throw new Error("settle/idempotent changed shape");
    second.value.status = SettleStatus.CONFLICT;
    const timely = clone(
      GatewayCaseSchema,
      cases.find((c) => c.name === "claim/empty-answer-at-once") as GatewayCase,
    );
    timely.steps.push(
      create(GatewayStepSchema, { action: { case: "sleep", value: {} }, error: "UNAVAILABLE" }),
    );
    const results = await runGatewaySuite([idempotent, timely], { url: gateway.grpcUrl }, 2);
    expect(results.map((r) => r.failures)).toEqual([
      [expect.stringMatching(/^step 4 \(settle\): settle of \d+\/1 answered ACCEPTED, want CONFLICT$/)],
      ["step 2 (sleep): succeeded, want UNAVAILABLE"],
    ]);
  });

  it("passes every case", async () => {
    const results = await runGatewaySuite(cases, { url: gateway.grpcUrl }, 4);
    expect(results.filter((r) => !r.passed).map((r) => ({ name: r.name, failures: r.failures }))).toEqual([]);
  });
});
