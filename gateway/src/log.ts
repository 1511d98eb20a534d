import { type Logger, pino } from "pino";
import { textStream } from "./log-text.js";

export type { Logger };

/** How the root logger writes: one JSON line per record (pino), or short lines for a person (log-text.ts). */
export type LogFormat = "json" | "text";

/** The logFormat setting decided for this process: auto is text when stdout is a terminal. */
export function logFormatFor(setting: "auto" | LogFormat, stdoutIsTty: boolean): LogFormat {
  return setting === "auto" ? (stdoutIsTty ? "text" : "json") : setting;
}

/**
 * The root logger, on stdout. Created once in the CLI and passed down. In text, records with a message
 * in `hidden` are left out (what the start-up banner says instead).
 */
export function createLogger(
  level: string,
  format: LogFormat = "json",
  hidden: readonly string[] = [],
): Logger {
  const options = { level, base: { service: "taskq" } };
  return format === "json" ? pino(options) : pino(options, textStream(process.stdout, hidden));
}

/** A logger that drops everything, for tests and embedding. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
