import { pino } from "pino";
import type { Logger } from "../log.js";

/** A logger at `trace` that keeps every line it writes, for tests that read what the gateway logged. */
export function capturedLogger(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = pino(
    { level: "trace", base: { service: "taskq" } },
    { write: (line: string) => void lines.push(line) },
  );
  return { log, lines };
}
