import { readFileSync } from "node:fs";
import { ConfigError } from "../errors.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import { watchFiles } from "../watch-files.js";
import type { Auth } from "./auth.js";
import { parseTokens, type TokenEntry } from "./tokens.js";

const SETTING = "tokensFile (TASKQ_TOKENS_FILE)";

/** The tokens of a tokens file (a JSON array, as `tokens`); a ConfigError naming the setting otherwise. */
export function readTokensFile(path: string): TokenEntry[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(`${SETTING} ${path}: ${e.code ? `cannot read it (${e.code})` : e.message}`);
  }
  try {
    return parseTokens(raw);
  } catch (err) {
    const why = (err as Error).message;
    throw new ConfigError(`${SETTING} ${path}${why.startsWith("[") ? "" : ": "}${why}`);
  }
}

/**
 * Re-reads the tokens file when it changes and swaps the tokens in within a second, ending the calls in
 * progress that the new tokens refuse (Auth.replace); a file that does not parse is logged and counted
 * and the tokens in force are kept (write `[]` to revoke every token).
 * Logs name tokens, never their hashes. Returns the stop function.
 */
export function watchTokensFile(
  path: string,
  auth: Auth,
  log: Logger,
  metrics: Metrics,
  opts: { intervalMs?: number; debounceMs?: number } = {},
): () => void {
  return watchFiles(
    [path],
    () => {
      let tokens: TokenEntry[];
      try {
        tokens = readTokensFile(path);
      } catch (err) {
        metrics.tokenReloads.inc({ result: "error" });
        log.error({ err: (err as Error).message }, "tokens file reload failed; the tokens in force stay");
        return;
      }
      // Calls of removed tokens still open (streams, parked polls) have ended by the time this returns.
      const { added, removed, ended } = auth.replace(tokens);
      metrics.tokenReloads.inc({ result: "ok" });
      metrics.tokensRevoked.inc(removed.length);
      for (const name of removed)
        log.warn({ token: name }, "token revoked: its open calls are ended and new ones refused");
      log.info({ tokens: tokens.length, added, removed, endedCalls: ended }, "tokens file reloaded");
    },
    { intervalMs: opts.intervalMs ?? 250, debounceMs: opts.debounceMs ?? 100 },
  );
}
