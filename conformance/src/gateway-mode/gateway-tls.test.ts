import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  type MtlsTestGateway,
  startMtlsTestGateway,
  type TestGateway,
  type TestPki,
} from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { builtInCasesDir, loadGatewayCases } from "../cases/load-cases.js";
import { runGatewaySuite } from "../suite.js";

// Gateway mode against a gateway with TLS and mutual TLS on a private CA: the runner trusts --ca-file
// and presents --cert-file / --key-file; without a client certificate it is refused.
const cases = loadGatewayCases(fileURLToPath(new URL("gateway/", builtInCasesDir)));
let token: string;
let mtls: MtlsTestGateway;
let pki: TestPki;
let gateway: TestGateway;

beforeAll(async () => {
  mtls = await startMtlsTestGateway("conformance", ["worker", "producer", "operator"], {
    maintenanceIntervalMs: 200,
  });
  ({ gateway: gateway, pki, token } = mtls);
});
afterAll(async () => {
  await mtls?.stop();
});

describe("gateway mode over mutual TLS", () => {
  it("passes every case with the CA, a client certificate and the token", async () => {
    const tls = {
      ca: Buffer.from(pki.ca),
      cert: Buffer.from(pki.client.cert),
      key: Buffer.from(pki.client.key),
    };
    expect(gateway.grpcUrl).toMatch(/^https:/);
    const results = await runGatewaySuite(cases, { url: gateway.grpcUrl, token, tls }, 4);
    expect(results.filter((r) => !r.passed).map((r) => ({ name: r.name, failures: r.failures }))).toEqual([]);
  });

  it("is refused without a client certificate", async () => {
    const [result] = await runGatewaySuite(
      cases.slice(0, 1),
      { url: gateway.grpcUrl, token, tls: { ca: Buffer.from(pki.ca) } },
      1,
    );
    expect(result?.passed).toBe(false);
    expect(result?.failures[0]).toMatch(/failed with UNAVAILABLE/);
  });

  it("reads the files from its command line", async () => {
    const cli = fileURLToPath(new URL("../cli.ts", import.meta.url));
    const [first] = cases;
    const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [
          "--conditions=taskq-source",
          "--import",
          "tsx",
          cli,
          "gateway",
          "--url",
          gateway.grpcUrl,
          "--run",
          first?.name ?? "",
          "--token",
          token,
          "--ca-file",
          pki.caFile,
          "--cert-file",
          pki.client.certFile,
          "--key-file",
          pki.client.keyFile,
        ],
        { timeout: 60_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
      );
    });
    expect(out, out.stderr).toMatchObject({ code: 0 });
    expect(out.stdout).toMatch(/1 passed/);
  });
});
