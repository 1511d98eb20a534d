import { Code, ConnectError } from "@connectrpc/connect";

/** A config problem, naming the setting (file key and env var). */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * Bad input: the message starts with the offending field (a path such as `jobs[2].queue`) and says
 * the rule, e.g. "jobs[2].priority must be from -32768 to 32767". Nothing was written.
 */
export class InvalidArgumentError extends Error {
  constructor(
    readonly field: string,
    readonly rule: string,
  ) {
    super(`${field} ${rule}`);
    this.name = "InvalidArgumentError";
  }

  /**
   * The same error for the field as part of `parent` (`settlements[3]` + `lease.job_id`): entries of a
   * batch are validated with names relative to the entry, and only a failing one pays for its full name.
   */
  under(parent: string): InvalidArgumentError {
    return new InvalidArgumentError(this.field ? `${parent}.${this.field}` : parent, this.rule);
  }
}

export class NotFoundError extends Error {
  override name = "NotFoundError";
}

/** The thing to create is there already (e.g. a schedule of that name). */
export class AlreadyExistsError extends Error {
  override name = "AlreadyExistsError";
}

/** The request is valid but the system's state refuses it (e.g. a config-sourced throttle). */
export class FailedPreconditionError extends Error {
  override name = "FailedPreconditionError";
}

/** No credentials, or credentials the gateway does not know. */
export class UnauthenticatedError extends Error {
  override name = "UnauthenticatedError";
}

/** Known credentials whose role or queue scope does not cover the call. */
export class PermissionDeniedError extends Error {
  override name = "PermissionDeniedError";
}

/** Wraps a unary handler so whatever it throws reaches the client through toConnectError. */
export function guarded<A extends unknown[], R>(fn: (...a: A) => Promise<R>): (...a: A) => Promise<R> {
  return async (...a) => {
    try {
      return await fn(...a);
    } catch (err) {
      throw toConnectError(err);
    }
  };
}

/** The one place domain errors become wire codes; anything unexpected is Internal with no detail. */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  if (err instanceof InvalidArgumentError) return new ConnectError(err.message, Code.InvalidArgument);
  if (err instanceof NotFoundError) return new ConnectError(err.message, Code.NotFound);
  if (err instanceof AlreadyExistsError) return new ConnectError(err.message, Code.AlreadyExists);
  if (err instanceof FailedPreconditionError) {
    return new ConnectError(err.message, Code.FailedPrecondition);
  }
  if (err instanceof UnauthenticatedError) return new ConnectError(err.message, Code.Unauthenticated);
  if (err instanceof PermissionDeniedError) return new ConnectError(err.message, Code.PermissionDenied);
  if (isTimeout(err))
    return new ConnectError("storage did not answer in time - retry with backoff", Code.Unavailable);
  if (isUnavailable(err))
    return new ConnectError("storage unavailable - retry with backoff", Code.Unavailable);
  return new ConnectError("internal error", Code.Internal);
}

/**
 * A database query past dbQueryTimeoutMs: the gateway gave up on a silent connection (TASKQ_DB_TIMEOUT)
 * or Postgres cancelled the statement (57014, statement_timeout).
 */
function isTimeout(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === "TASKQ_DB_TIMEOUT" || code === "57014";
}

/** Connection-level database failures: the client should back off and retry. */
function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (
    typeof e?.code === "string" &&
    /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|57P0[123]|08...)$/.test(e.code)
  )
    return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(
    e?.message ?? "",
  );
}
