import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { loadConfig } from "../config.js";
import { silentLogger } from "../log.js";
import { startGateway } from "../server.js";
import { httpsGet } from "../testing/https-get.js";
import { haveService } from "../testing/services.js";
import { startTestGateway } from "../testing/test-gateway.js";
import { makeTestPki, type TestPki } from "../testing/test-pki.js";
import { readTlsMaterial } from "./tls-material.js";

// Bad TLS settings are one clear error naming the setting; `taskq gateway` will not put tokens on a
// network in plaintext unless told so; the container healthcheck reads either transport.

const gatewayDir = fileURLToPath(new URL("../../", import.meta.url));
let pki: TestPki;
beforeAll(() => {
  pki = makeTestPki();
});
afterAll(() => pki?.remove());

/** Runs a gateway-package script with tsx, as `npx taskq` does from a checkout. */
function node(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd: gatewayDir, env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}
const taskq = (env: Record<string, string>, ...args: string[]) => node(["bin/taskq.mjs", ...args], env);

describe("TLS settings", () => {
  const files = (over: Record<string, string | null>) => ({
    tlsCertFile: pki.server.certFile,
    tlsKeyFile: pki.server.keyFile,
    tlsClientCaFile: null,
    ...over,
  });

  it("refuses a missing file, a file that is not PEM and a key of another certificate, naming the setting", () => {
    const junk = join(pki.dir, "junk.pem");
    writeFileSync(junk, "not a certificate\n");
    expect(() => readTlsMaterial(files({ tlsCertFile: "/nonexistent/tls.crt" }))).toThrow(
      "tlsCertFile (TASKQ_TLS_CERT_FILE) /nonexistent/tls.crt: cannot read it (ENOENT)",
    );
    expect(() => readTlsMaterial(files({ tlsKeyFile: junk }))).toThrow(
      `tlsKeyFile (TASKQ_TLS_KEY_FILE) ${junk}: not a PEM private key`,
    );
    expect(() => readTlsMaterial(files({ tlsClientCaFile: junk }))).toThrow(
      `tlsClientCaFile (TASKQ_TLS_CLIENT_CA_FILE) ${junk}: not a PEM certificate`,
    );
    expect(() => readTlsMaterial(files({ tlsKeyFile: pki.client.keyFile }))).toThrow(
      /^tlsCertFile \(TASKQ_TLS_CERT_FILE\) .* and tlsKeyFile \(TASKQ_TLS_KEY_FILE\) .* do not form a usable pair: .*key values mismatch/,
    );
    const garbled = join(pki.dir, "garbled-ca.pem");
    writeFileSync(garbled, `${pki.ca}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`);
    expect(() => readTlsMaterial(files({ tlsClientCaFile: garbled }))).toThrow(
      new RegExp(`^tlsClientCaFile \\(TASKQ_TLS_CLIENT_CA_FILE\\) ${garbled}: `),
    );
    expect(readTlsMaterial(files({}))?.cert.toString()).toBe(pki.server.cert);
  });

  it("wants the certificate and key together, and mutual TLS on top of TLS", () => {
    expect(() => loadConfig("dev", { TASKQ_TLS_CERT_FILE: pki.server.certFile })).toThrow(
      "tlsCertFile (TASKQ_TLS_CERT_FILE) and tlsKeyFile (TASKQ_TLS_KEY_FILE) go together",
    );
    expect(() => loadConfig("dev", { TASKQ_TLS_CLIENT_CA_FILE: pki.caFile })).toThrow(
      /^tlsClientCaFile \(TASKQ_TLS_CLIENT_CA_FILE\) needs tlsCertFile and tlsKeyFile/,
    );
    expect(() => loadConfig("dev", { TASKQ_INSECURE_PLAINTEXT: "yes" })).toThrow(
      'insecurePlaintext (TASKQ_INSECURE_PLAINTEXT) must be true or false (1 or 0), got "yes"',
    );
    expect(loadConfig("dev", { TASKQ_INSECURE_PLAINTEXT: "1" }).insecurePlaintext).toBe(true);
  });

  it("says so in one line, without a stack, when `taskq dev` cannot read its certificate", async () => {
    const out = await taskq(
      {
        TASKQ_DATA_DIR: "memory",
        TASKQ_DEV_PG_PORT: "off",
        TASKQ_TLS_CERT_FILE: "/nonexistent/tls.crt",
        TASKQ_TLS_KEY_FILE: pki.server.keyFile,
      },
      "dev",
    );
    expect(out.code).toBe(2);
    expect(out.stderr).toBe(
      "taskq: tlsCertFile (TASKQ_TLS_CERT_FILE) /nonexistent/tls.crt: cannot read it (ENOENT)\n",
    );
  });
});

describe("plaintext on a non-loopback address", () => {
  const env = {
    TASKQ_HOST: "0.0.0.0",
    TASKQ_DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
    TASKQ_REDIS_URL: "redis://127.0.0.1:1",
    TASKQ_TOKENS: JSON.stringify([{ name: "ops", role: "operator", sha256: hashToken(newToken()) }]),
    TASKQ_INSECURE_PLAINTEXT: "",
  };

  it("is refused by `taskq gateway` in one line naming --insecure-plaintext, before connecting anywhere", async () => {
    await expect(startGateway(loadConfig("gateway", env), silentLogger())).rejects.toThrow(
      /^refusing plaintext on non-loopback host 0\.0\.0\.0: set tlsCertFile .* or pass --insecure-plaintext \(TASKQ_INSECURE_PLAINTEXT=1\)/,
    );
    const out = await taskq(env, "gateway");
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(
      /^taskq: refusing plaintext on non-loopback host 0\.0\.0\.0: .*--insecure-plaintext.*\n$/,
    );
    expect(out.stderr.split("\n")).toHaveLength(2);
    // Told so, by flag or env, it goes on to connect (and here finds no Postgres).
    for (const told of [
      await taskq(env, "gateway", "--insecure-plaintext"),
      await taskq({ ...env, TASKQ_INSECURE_PLAINTEXT: "1" }, "gateway"),
    ]) {
      expect(told.code).toBe(2);
      expect(told.stderr).toMatch(/^taskq: nothing accepts connections at the host and port of databaseUrl/);
    }
  });

  it.skipIf(!haveService("postgres") || !haveService("redis"))(
    "starts when told --insecure-plaintext, or with TLS, and /readyz names the mode",
    async () => {
      const secret = newToken();
      const tokens = [{ name: "ops", roles: ["operator" as const], queues: null, sha256: hashToken(secret) }];
      const plain = await startTestGateway({
        engine: "postgres",
        config: { host: "0.0.0.0", tokens, insecurePlaintext: true },
      });
      try {
        const ready = await fetch(`${plain.httpUrl}/readyz`);
        expect(await ready.text()).toBe("ready\ntransport: insecure-plaintext\n");
        // The container's healthcheck reads a plaintext gateway...
        const port = new URL(plain.httpUrl).port;
        expect((await node(["--import", "tsx", "src/healthcheck.ts"], { TASKQ_HTTP_PORT: port })).code).toBe(
          0,
        );
      } finally {
        await plain.stop();
      }
      const tls = await startTestGateway({
        engine: "postgres",
        config: { host: "0.0.0.0", tokens, tlsCertFile: pki.server.certFile, tlsKeyFile: pki.server.keyFile },
      });
      try {
        // It listens on 0.0.0.0 (its httpUrl says so); a client comes by an address its certificate names.
        const httpsUrl = tls.httpUrl.replace("//0.0.0.0:", "//127.0.0.1:");
        expect(await httpsGet(`${httpsUrl}/readyz`, pki.ca)).toEqual({
          status: 200,
          body: "ready\ntransport: tls\n",
        });
        // ...and a TLS one; a port with nothing behind it fails.
        const port = new URL(tls.httpUrl).port;
        expect((await node(["--import", "tsx", "src/healthcheck.ts"], { TASKQ_HTTP_PORT: port })).code).toBe(
          0,
        );
      } finally {
        await tls.stop();
      }
      expect((await node(["--import", "tsx", "src/healthcheck.ts"], { TASKQ_HTTP_PORT: "1" })).code).toBe(1);
    },
  );
});

describe("the docs", () => {
  const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), "utf8");

  it("document every transport and token setting with its environment variable, and link security.md", () => {
    const configuration = read("docs/configuration.md");
    for (const [key, env] of [
      ["tlsCertFile", "TASKQ_TLS_CERT_FILE"],
      ["tlsKeyFile", "TASKQ_TLS_KEY_FILE"],
      ["tlsClientCaFile", "TASKQ_TLS_CLIENT_CA_FILE"],
      ["insecurePlaintext", "TASKQ_INSECURE_PLAINTEXT"],
      ["tokensFile", "TASKQ_TOKENS_FILE"],
    ]) {
      // A row of the generated settings table: file key, then environment variable.
      expect(configuration).toMatch(new RegExp(`\\| \`${key}\` +\\| \`${env}\` +\\|`));
    }
    expect(configuration).toContain("(security.md)");
    expect(read("README.md")).toContain("[docs/security.md](docs/security.md)");
    for (const heading of [
      "## Threat model",
      "## TLS",
      "## Mutual TLS",
      "## Rotation",
      "## Behind a TLS-terminating load balancer",
    ])
      expect(read("docs/security.md")).toContain(heading);
  });
});
