import { Code, type ConnectError } from "@connectrpc/connect";

/**
 * One line for a failed call, e.g. "invalid_argument: limit must be from 1 to 100000": the gateway's
 * code and message, plus what to do where the raw error would leave an operator guessing. `canCreate`:
 * the command takes `--create`, worth naming when the queue was never seen.
 */
export function describeRpcError(err: ConnectError, url: string, canCreate = false): string {
  if (speaksHttp1(err)) {
    return `${url} answered in HTTP/1.1, not gRPC: is it the gateway's HTTP port? --url takes its gRPC port (TASKQ_GRPC_PORT, default 7070)`;
  }
  const code = (Code[err.code] ?? "unknown").replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase());
  let hint = err.code === Code.Unavailable ? ` (gateway ${url})` : "";
  if (/self[- ]signed|unable to (get|verify)|certificate/i.test(err.rawMessage)) {
    hint = ` (gateway ${url}: pass --ca-file with the CA that signed its certificate, or env TASKQ_CA_FILE)`;
  }
  if (canCreate && err.code === Code.NotFound && /^queue \S+ not found/.test(err.rawMessage)) {
    hint = ` (taskq queue ensure ${err.rawMessage.split(" ")[1]}), or add --create`;
  }
  return `${code}: ${err.rawMessage}${hint}`;
}

/** An HTTP/1.1 server (the gateway's HTTP port) answers the client's HTTP/2 preface with a protocol error. */
function speaksHttp1(err: ConnectError): boolean {
  return (
    err.code === Code.Internal && (err.cause as { code?: unknown } | undefined)?.code === "ERR_HTTP2_ERROR"
  );
}
