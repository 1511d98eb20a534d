import type { Server as TlsServer } from "node:tls";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import { watchFiles } from "../watch-files.js";
import { readTlsMaterial, secureContextOptions } from "./tls-material.js";

/**
 * Re-reads the certificate, key and client CA when any of them changes (cert-manager and Vault rotate
 * them in place) and hands the new context to every TLS server: new handshakes use it, connections
 * and streams already open keep theirs. A new set that does not load is logged and counted, and the
 * old one kept. Returns the stop function.
 */
export function reloadCertsOnChange(
  config: Config,
  servers: readonly TlsServer[],
  log: Logger,
  metrics: Metrics,
  opts: { intervalMs?: number; debounceMs?: number } = {},
): () => void {
  const paths = [config.tlsCertFile, config.tlsKeyFile, config.tlsClientCaFile].filter(
    (p): p is string => !!p,
  );
  return watchFiles(
    paths,
    () => {
      try {
        const material = readTlsMaterial(config);
        if (!material) return;
        for (const s of servers) s.setSecureContext(secureContextOptions(material));
        metrics.tlsReloads.inc({ result: "ok" });
        log.info({ files: paths }, "TLS certificate reloaded");
      } catch (err) {
        metrics.tlsReloads.inc({ result: "error" });
        log.error(
          { err: (err as Error).message },
          "TLS certificate reload failed; still serving the previous one",
        );
      }
    },
    // A debounce longer than the stat interval: a certificate and key replaced together load together.
    { intervalMs: opts.intervalMs ?? 500, debounceMs: opts.debounceMs ?? 1000 },
  );
}
