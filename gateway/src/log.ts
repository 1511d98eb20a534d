import { type Logger, pino } from "pino";

export type { Logger };

/** The root logger: JSON lines on stdout. Created once in the CLI and passed down. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "taskq" } });
}

/** A logger that drops everything, for tests and embedding. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
