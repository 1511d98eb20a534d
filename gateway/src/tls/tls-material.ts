import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createSecureContext, type SecureContextOptions } from "node:tls";
import type { Config } from "../config.js";
import { ConfigError } from "../errors.js";

/** The PEM files TLS is served from, read and checked to form a usable pair. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Client CA bundle for mutual TLS, else undefined. */
  readonly ca: Buffer | undefined;
}

type TlsFiles = Pick<Config, "tlsCertFile" | "tlsKeyFile" | "tlsClientCaFile">;

const PEM_CERTIFICATES = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

const settings = {
  tlsCertFile: "tlsCertFile (TASKQ_TLS_CERT_FILE)",
  tlsKeyFile: "tlsKeyFile (TASKQ_TLS_KEY_FILE)",
  tlsClientCaFile: "tlsClientCaFile (TASKQ_TLS_CLIENT_CA_FILE)",
} as const;

/**
 * Reads the TLS files the config names (null without TLS). Every problem is a ConfigError naming the
 * setting and file: unreadable, not PEM, or a key that does not belong to the certificate.
 */
export function readTlsMaterial(config: TlsFiles): TlsMaterial | null {
  if (!config.tlsCertFile || !config.tlsKeyFile) return null;
  const material: TlsMaterial = {
    cert: readSetting("tlsCertFile", config.tlsCertFile),
    key: readSetting("tlsKeyFile", config.tlsKeyFile),
    ca: config.tlsClientCaFile ? readSetting("tlsClientCaFile", config.tlsClientCaFile) : undefined,
  };
  const pems = [
    ["tlsCertFile", material.cert, /-----BEGIN CERTIFICATE-----/, "certificate"],
    ["tlsKeyFile", material.key, /-----BEGIN [A-Z ]*PRIVATE KEY-----/, "private key"],
    ["tlsClientCaFile", material.ca, /-----BEGIN CERTIFICATE-----/, "certificate"],
  ] as const;
  for (const [name, pem, begins, what] of pems) {
    if (pem && !begins.test(pem.toString("latin1")))
      throw new ConfigError(`${settings[name]} ${config[name]}: not a PEM ${what}`);
  }
  // Builds the contexts now, to find a mismatched pair or a bad PEM at start rather than at the first
  // handshake: the pair alone first, so a failure is blamed on the right setting.
  try {
    createSecureContext({ cert: material.cert, key: material.key });
  } catch (err) {
    throw new ConfigError(
      `${settings.tlsCertFile} ${config.tlsCertFile} and ${settings.tlsKeyFile} ${config.tlsKeyFile} do not form a usable pair: ${(err as Error).message}`,
    );
  }
  if (material.ca) {
    // OpenSSL skips a CA certificate it cannot parse, which would refuse every client: parse each here.
    try {
      for (const block of material.ca.toString("latin1").match(PEM_CERTIFICATES) ?? [])
        new X509Certificate(block);
      createSecureContext(secureContextOptions(material));
    } catch (err) {
      throw new ConfigError(
        `${settings.tlsClientCaFile} ${config.tlsClientCaFile}: ${(err as Error).message}`,
      );
    }
  }
  return material;
}

/** What `createSecureServer` and `setSecureContext` take. */
export function secureContextOptions(m: TlsMaterial): SecureContextOptions {
  return { cert: m.cert, key: m.key, ...(m.ca ? { ca: m.ca } : {}) };
}

function readSetting(name: keyof typeof settings, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new ConfigError(
      `${settings[name]} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code})`,
    );
  }
}
