import { type Client, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
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

/**
 * Clients for `--url` / TASKQ_URL (default http://127.0.0.1:7070; host:port works too), sending `--token` / TASKQ_TOKEN as a
 * bearer token when set.
 */
export function connect(
  flags: { url?: string | undefined; token?: string | undefined },
  env: Record<string, string | undefined>,
): Clients {
  const url = gatewayUrl(flags.url ?? (env.TASKQ_URL || DEFAULT_URL));
  const transport = createTransport({ baseUrl: url, token: flags.token ?? (env.TASKQ_TOKEN || undefined) });
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
    throw new UsageError(`--url must be host:port or http://host:port (the gRPC port), got "${raw}"`);
  }
  return url;
}
