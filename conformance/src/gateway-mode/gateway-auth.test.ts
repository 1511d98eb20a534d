import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { startTestGateway } from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtInCasesDir, loadGatewayCases } from "../cases/load-cases.js";
import { runGatewaySuite } from "../suite.js";

// Gateway mode against a gateway that requires a bearer token: the runner's --token reaches every call.
const cases = loadGatewayCases(fileURLToPath(new URL("gateway/", builtInCasesDir)));
const token = "tq_conformance-token-for-tests";
let gateway: Awaited<ReturnType<typeof startTestGateway>>;

beforeAll(async () => {
  const sha256 = createHash("sha256").update(token, "utf8").digest("hex");
  gateway = await startTestGateway({
    config: {
      maintenanceIntervalMs: 200,
      tokens: [{ name: "conformance", roles: ["worker", "producer", "operator"], queues: null, sha256 }],
    },
  });
});
afterAll(() => gateway?.stop());

describe("gateway mode with a token", () => {
  it("passes every case when given the token", async () => {
    const results = await runGatewaySuite(cases, { url: gateway.grpcUrl, token }, 4);
    expect(results.filter((r) => !r.passed).map((r) => ({ name: r.name, failures: r.failures }))).toEqual([]);
  });

  it("is refused without it", async () => {
    const [result] = await runGatewaySuite(cases.slice(0, 1), { url: gateway.grpcUrl }, 1);
    expect(result?.failures[0]).toMatch(/failed with UNAUTHENTICATED/);
  });
});
