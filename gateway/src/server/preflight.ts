import { Auth } from "../auth/auth.js";
import { readTokensFile } from "../auth/tokens-file.js";
import type { Config } from "../config.js";
import { ConfigError } from "../errors.js";
import { readTlsMaterial, type TlsMaterial } from "../tls/tls-material.js";
import { requireSafeBind, type TransportMode, transportMode } from "../tls/transport-mode.js";

/**
 * What the operator must fix before anything opens: tokens in production, a safe bind, readable TLS
 * material. Throws ConfigError (or the TLS reader's error) saying what to change.
 */
export function preflight(config: Config): { auth: Auth; tls: TlsMaterial | null; transport: TransportMode } {
  const tokens = config.tokensFile ? readTokensFile(config.tokensFile) : config.tokens;
  const auth = new Auth(tokens, { live: config.tokensFile !== null });
  if (tokens.length === 0 && config.mode === "gateway") {
    throw new ConfigError(
      "production mode refuses to start without tokens: configure `tokens` (or TASKQ_TOKENS) or a `tokensFile` (TASKQ_TOKENS_FILE); `taskq token new` makes one",
    );
  }
  requireSafeBind(config);
  return { auth, tls: readTlsMaterial(config), transport: transportMode(config) };
}
