import { readFileSync } from "node:fs";
import { type Client, createClient } from "@connectrpc/connect";
import { createTransport, type TlsOptions } from "@taskq/sdk";
import { AdminService, ProducerService } from "@taskq/sdk/proto";
import { UsageError } from "./args.js";

/** Where the CLI talks to when neither `--url` nor TASKQ_URL says otherwise. */
export const DEFAULT_URL = "http://127.0.0.1:7070";

/** RPC clients of one gateway; building them opens nothing until the first call. */
export interface Clients {
  readonly url: string;
  readonly admin: Client<typeof AdminService>;
  readonly producer: Client<typeof ProducerService>;
}

/** The connection flags every operator command takes. */
export interface ConnectFlags {
  url?: string | undefined;
  token?: string | undefined;
  caFile?: string | undefined;
  certFile?: string | undefined;
  keyFile?: string | undefined;
}

/**
 * Clients for `--url` / TASKQ_URL (default http://127.0.0.1:7070; host:port works too), sending `--token` / TASKQ_TOKEN as a
 * bearer token when set, and trusting `--ca-file` (with `--cert-file` and `--key-file` for mutual TLS).
 */
export function connect(flags: ConnectFlags, env: Record<string, string | undefined>): Clients {
  const url = gatewayUrl(flags.url ?? (env.TASKQ_URL || DEFAULT_URL));
  const transport = createTransport({
    baseUrl: url,
    token: flags.token ?? (env.TASKQ_TOKEN || undefined),
    tls: tlsOptions(flags, env),
  });
  return {
    url,
    admin: createClient(AdminService, transport),
    producer: createClient(ProducerService, transport),
  };
}

/** `--url` / TASKQ_URL as a base URL: `host:port` (no scheme) means `http://host:port`. */
export function gatewayUrl(raw: string): string {
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  if (!URL.canParse(url)) {
    throw new UsageError(
      `--url must be host:port, http://host:port or https://host:port (the gRPC port), got "${raw}"`,
    );
  }
  return url;
}

/** The PEM files of --ca-file, --cert-file and --key-file (or their env), read now; undefined without any. */
function tlsOptions(flags: ConnectFlags, env: Record<string, string | undefined>): TlsOptions | undefined {
  const files = {
    "--ca-file": flags.caFile ?? (env.TASKQ_CA_FILE || undefined),
    "--cert-file": flags.certFile ?? (env.TASKQ_CERT_FILE || undefined),
    "--key-file": flags.keyFile ?? (env.TASKQ_KEY_FILE || undefined),
  };
  if (!files["--cert-file"] !== !files["--key-file"]) {
    throw new UsageError("--cert-file and --key-file go together (env TASKQ_CERT_FILE, TASKQ_KEY_FILE)");
  }
  const read = (flag: keyof typeof files) => {
    const path = files[flag];
    if (!path) return undefined;
    try {
      return readFileSync(path);
    } catch (err) {
      throw new UsageError(`${flag} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code})`);
    }
  };
  const tls = { ca: read("--ca-file"), cert: read("--cert-file"), key: read("--key-file") };
  return tls.ca || tls.cert ? tls : undefined;
}
