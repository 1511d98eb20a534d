import { ConfigError } from "../errors.js";

/** One of the ports a gateway opens, and the setting that moves it. */
export interface PortSetting {
  /** As the message names it: "gRPC port". */
  readonly what: string;
  /** The environment variable. */
  readonly env: string;
  /** The config file's key. */
  readonly key: string;
  /** What else the setting takes, after "0 picks a free port". */
  readonly alsoTakes?: string;
}

export const GRPC_PORT: PortSetting = { what: "gRPC port", env: "TASKQ_GRPC_PORT", key: "grpcPort" };
export const HTTP_PORT: PortSetting = { what: "HTTP port", env: "TASKQ_HTTP_PORT", key: "httpPort" };
export const DEV_PG_PORT: PortSetting = {
  what: "psql port",
  env: "TASKQ_DEV_PG_PORT",
  key: "devPgPort",
  alsoTakes: '"off" closes it',
};

/**
 * A failed listen as one line naming the port and the setting that moves it (a ConfigError, so the
 * CLI prints it without a stack); other errors as they are.
 */
export function listenError(err: unknown, port: PortSetting, host: string, portNumber: number): unknown {
  const at = `${port.what} ${host.includes(":") ? `[${host}]` : host}:${portNumber}`;
  const move = `set ${port.env} or the config file's ${port.key} to move it`;
  switch ((err as NodeJS.ErrnoException).code) {
    case "EADDRINUSE":
      return new ConfigError(
        `${at} is in use (${move}; 0 picks a free port${port.alsoTakes ? `, ${port.alsoTakes}` : ""})`,
      );
    case "EACCES":
      return new ConfigError(`${at} is not open to this user (${move})`);
    case "EADDRNOTAVAIL":
      return new ConfigError(`${at}: no such address here (set TASKQ_HOST or the config file's host to one)`);
    default:
      return err;
  }
}
