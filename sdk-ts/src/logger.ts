/**
 * Where the SDK reports what it does. Arguments are `(fields, message)`, the order pino and console
 * both accept, so either can be passed as is. The SDK never logs anywhere unless given one.
 */
export interface Logger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

const noop = () => {};

/** The default: says nothing. */
export const silentLogger: Logger = Object.freeze({ debug: noop, info: noop, warn: noop, error: noop });

/** A loggable summary of any thrown value. */
export function errorFields(err: unknown): Record<string, unknown> {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { err: { name: err.name, message: err.message, ...(code === undefined ? {} : { code }) } };
  }
  return { err: String(err) };
}
