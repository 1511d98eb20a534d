import { copyFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capturedLogger } from "../testing/captured-logger.js";
import { duplex, grpcStubs, seconds } from "../testing/grpc-stubs.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { makeTestPki, type TestPki } from "../testing/test-pki.js";

// cert-manager and Vault rewrite certificate files in place: the gateway serves the new pair to new
// connections within a second or two, keeps open streams on theirs, and keeps the old pair when the
// new one does not load.

let pki: TestPki;
let gw: TestGateway;
let certFile: string;
let keyFile: string;
const captured = capturedLogger();
beforeAll(async () => {
  pki = makeTestPki();
  certFile = join(pki.dir, "live.crt");
  keyFile = join(pki.dir, "live.key");
  copyFileSync(pki.server.certFile, certFile);
  copyFileSync(pki.server.keyFile, keyFile);
  gw = await startTestGateway({ config: { tlsCertFile: certFile, tlsKeyFile: keyFile }, log: captured.log });
});
afterAll(async () => {
  await gw?.stop();
  pki?.remove();
});

/** The common name of the certificate a new connection to the gRPC port is served. */
function servedName(): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({
      host: "127.0.0.1",
      port: Number(new URL(gw.grpcUrl).port),
      ca: pki.ca,
      servername: "localhost",
    });
    s.on("secureConnect", () => {
      resolve(String(s.getPeerCertificate().subject.CN));
      s.end();
    });
    s.on("error", reject);
  });
}

async function waitFor(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

const reloads = async (result: string) =>
  (await gw.metrics.tlsReloads.get()).values.find((v) => v.labels.result === result)?.value ?? 0;

/** Replaces a file the way secret mounts do: write beside it, then rename over it. */
function replace(path: string, content: string): void {
  writeFileSync(`${path}.new`, content);
  renameSync(`${path}.new`, path);
}

describe("certificate reload", () => {
  it("serves a rotated pair to new connections without ending open streams, and keeps it over a bad one", async () => {
    const stubs = grpcStubs(gw.grpcUrl, undefined, { ca: pki.ca });
    try {
      const claim = duplex(stubs.worker, "Claim");
      const poll = { queues: ["rotation"], max_jobs: 1, max_wait: seconds(0.05) };
      expect(await claim.send(poll)).toBeDefined();
      expect(await servedName()).toBe("localhost");

      const rotated = pki.issue("rotated");
      const started = Date.now();
      replace(certFile, rotated.cert);
      replace(keyFile, rotated.key);
      expect(await waitFor(async () => (await servedName()) === "rotated", 10_000)).toBe(true);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(await reloads("ok")).toBeGreaterThanOrEqual(1);
      const errorsBefore = await reloads("error");
      // The stream opened under the old certificate still answers polls.
      expect(await claim.send(poll)).toBeDefined();

      replace(keyFile, "-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n");
      expect(await waitFor(async () => (await reloads("error")) > errorsBefore, 10_000)).toBe(true);
      expect(await servedName()).toBe("rotated");
      expect(await claim.send(poll)).toBeDefined();
      claim.end();
      const logs = captured.lines.map((l) => JSON.parse(l) as { level: number; msg: string; err?: string });
      expect(logs).toContainEqual(expect.objectContaining({ msg: "TLS certificate reloaded" }));
      expect(logs).toContainEqual(
        expect.objectContaining({
          level: 50,
          msg: "TLS certificate reload failed; still serving the previous one",
          err: expect.stringMatching(/^tlsKeyFile \(TASKQ_TLS_KEY_FILE\) |do not form a usable pair/),
        }),
      );
    } finally {
      stubs.close();
    }
  });
});
