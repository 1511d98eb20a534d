import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A certificate and its key, as PEM files (and their contents). */
export interface TestCert {
  readonly certFile: string;
  readonly keyFile: string;
  readonly cert: string;
  readonly key: string;
}

/** A throwaway certificate authority in a temporary directory, for TLS tests. */
export interface TestPki {
  readonly dir: string;
  /** The CA certificate: what clients trust, and what the gateway trusts for client certificates. */
  readonly caFile: string;
  readonly ca: string;
  /** A certificate for localhost, 127.0.0.1 and ::1, signed by this CA (usable as server or client). */
  readonly server: TestCert;
  /** A client certificate signed by this CA. */
  readonly client: TestCert;
  /** Another certificate signed by this CA, named `name`. */
  issue(name: string): TestCert;
  remove(): void;
}

const CNF = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = taskq test CA
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[leaf]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth,clientAuth
subjectAltName = DNS:localhost,IP:127.0.0.1,IP:::1
`;

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"];

/**
 * A new CA with a server and a client certificate, made by the machine's `openssl` (Node's crypto
 * verifies certificates but cannot issue them). P-256 keys: a few milliseconds each.
 */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), "taskq-pki-"));
  const cnf = join(dir, "openssl.cnf");
  writeFileSync(cnf, CNF);
  const caFile = join(dir, "ca.pem");
  const caKey = join(dir, "ca.key");
  openssl(["req", "-x509", ...EC, "-keyout", caKey, "-out", caFile, "-config", cnf, "-extensions", "ca"]);
  const issue = (name: string): TestCert => {
    const certFile = join(dir, `${name}.pem`);
    const keyFile = join(dir, `${name}.key`);
    openssl([
      "req",
      "-x509",
      ...EC,
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-config",
      cnf,
      "-extensions",
      "leaf",
      "-CA",
      caFile,
      "-CAkey",
      caKey,
      "-subj",
      `/CN=${name}`,
    ]);
    return { certFile, keyFile, cert: readFileSync(certFile, "utf8"), key: readFileSync(keyFile, "utf8") };
  };
  return {
    dir,
    caFile,
    ca: readFileSync(caFile, "utf8"),
    server: issue("localhost"),
    client: issue("worker"),
    issue,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function openssl(args: string[]): void {
  execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
}
