/**
 * Where the SDK reports what it does. Arguments are `(fields, message)`, the order pino and console
 * both accept, so either can be passed as is. Without one, a Worker uses {@link stderrLogger}.
 */
export interface Logger {
  /** Details of the worker's machinery (polls, reconnects); off in {@link stderrLogger}. */
  debug(fields: Record<string, unknown>, message: string): void;
  /** Life-cycle events: started, draining, stopped. */
  info(fields: Record<string, unknown>, message: string): void;
  /** Something went wrong and was handled: a failed handler, a broken stream, a refused settle. */
  warn(fields: Record<string, unknown>, message: string): void;
  /** Something went wrong that the SDK could not handle. */
  error(fields: Record<string, unknown>, message: string): void;
}

const noop = () => {};

/** Says nothing: pass it as a Worker's `logger` to silence the SDK entirely. */
export const silentLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });

/**
 * A Worker's default: warnings and errors only (a handler that failed, a stream that broke, a settle
 * refused), one line each on stderr — `taskq: handler failed {"jobId":"7","attempt":1,...}`. Debug and
 * info say nothing, so a healthy worker is silent. Writes through `process.stderr` only when called;
 * installs nothing process-wide.
 */
export const stderrLogger: Logger = Object.freeze({
  debug: noop,
  info: noop,
  warn: (fields: Record<string, unknown>, message: string) => writeLine("warn", fields, message),
  error: (fields: Record<string, unknown>, message: string) => writeLine("error", fields, message),
});

function writeLine(level: "warn" | "error", fields: Record<string, unknown>, message: string): void {
  let detail = "";
  try {
    detail = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : "";
  } catch {
    detail = " (fields not serialisable)";
  }
  process.stderr.write(`${message}${level === "error" ? " [error]" : ""}${detail}\n`);
}

/** A loggable summary of any thrown value. */
export function errorFields(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { err: { name: err.name, message: err.message, ...(code === undefined ? {} : { code }) } };
  }
  return { err: String(err) };
}
