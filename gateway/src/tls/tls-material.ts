import { readFileSync } from "node:fs";
import { createSecureContext, type SecureContextOptions } from "node:tls";
import { type Config, ConfigError } from "../config.js";

/** The PEM files TLS is served from, read and checked to form a usable pair. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Client CA bundle for mutual TLS, else undefined. */
  readonly ca: Buffer | undefined;
}

type TlsFiles = Pick<Config, "tlsCertFile" | "tlsKeyFile" | "tlsClientCaFile">;

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
  try {
    // Builds the context once to find a mismatched pair or a bad PEM now, not at the first handshake.
    createSecureContext(secureContextOptions(material));
  } catch (err) {
    const why = (err as Error).message;
    const which = /ca|certificate authority/i.test(why) && material.ca ? settings.tlsClientCaFile : null;
    throw new ConfigError(
      which
        ? `${which} ${config.tlsClientCaFile}: ${why}`
        : `${settings.tlsCertFile} ${config.tlsCertFile} and ${settings.tlsKeyFile} ${config.tlsKeyFile} do not form a usable pair: ${why}`,
    );
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
