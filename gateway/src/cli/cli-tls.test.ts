import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MtlsTestGateway, startMtlsTestGateway } from "../testing/mtls-gateway.js";
import { operatorRun } from "../testing/operator-run.js";
import type { TestGateway } from "../testing/test-gateway.js";
import type { TestPki } from "../testing/test-pki.js";

// The CLI reaches a gateway over https:// trusting a private CA (--ca-file / TASKQ_CA_FILE), with a
// client certificate when the gateway asks for one (--cert-file, --key-file).

let pki: TestPki;
let gw: TestGateway;
let token: string;
let mtls: MtlsTestGateway;
beforeAll(async () => {
  mtls = await startMtlsTestGateway("ops", ["operator"]);
  ({ gateway: gw, pki, token } = mtls);
});
afterAll(async () => {
  await mtls?.stop();
});

const taskq = (argv: string[], env: Record<string, string> = {}) =>
  operatorRun(argv, { TASKQ_URL: gw.grpcUrl, TASKQ_TOKEN: token, ...env });

describe("taskq over TLS", () => {
  it("connects with --ca-file and a client certificate, or the same from the environment", async () => {
    const flags = [
      "--ca-file",
      pki.caFile,
      "--cert-file",
      pki.client.certFile,
      "--key-file",
      pki.client.keyFile,
    ];
    expect(await taskq(["queue", "ensure", "tls-cli", ...flags])).toMatchObject({ code: 0, stderr: "" });
    const ls = await taskq(["queue", "ls", "--json"], {
      TASKQ_CA_FILE: pki.caFile,
      TASKQ_CERT_FILE: pki.client.certFile,
      TASKQ_KEY_FILE: pki.client.keyFile,
    });
    expect(ls).toMatchObject({ code: 0, stderr: "" });
    expect(ls.stdout).toContain("tls-cli");
  });

  it("says to pass --ca-file when it does not trust the gateway's certificate", async () => {
    const out = await taskq(["queue", "ls"], {
      TASKQ_CERT_FILE: pki.client.certFile,
      TASKQ_KEY_FILE: pki.client.keyFile,
    });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/^taskq queue ls: .*certificate.*pass --ca-file .*TASKQ_CA_FILE\)\n$/);
  });

  it("is refused without a client certificate by a gateway with mutual TLS", async () => {
    const out = await taskq(["queue", "ls", "--ca-file", pki.caFile]);
    expect(out.code).toBe(1);
    expect(out.stderr).not.toMatch(/unauthenticated/);
  });

  it("--url http:// at a TLS port says to use https://", async () => {
    const http = gw.grpcUrl.replace(/^https:/, "http:");
    expect(await taskq(["queue", "ls", "--url", http, "--ca-file", pki.caFile])).toEqual({
      code: 1,
      stdout: "",
      stderr: `taskq queue ls: the gateway at ${http} speaks TLS: use ${gw.grpcUrl} (with --ca-file when a private CA signed its certificate)\n`,
    });
  });

  it("names the flag of a file it cannot read, or a certificate without its key", async () => {
    expect(await taskq(["queue", "ls", "--ca-file", "/nonexistent/ca.pem"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(
        /^taskq queue ls: --ca-file \/nonexistent\/ca\.pem: cannot read it \(ENOENT\)\n/,
      ),
    });
    expect(await taskq(["queue", "ls", "--cert-file", pki.client.certFile])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--cert-file and --key-file go together/),
    });
  });
});
