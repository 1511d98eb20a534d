import { type Client, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, ProducerService } from "@taskq/sdk/proto";

/** Where the CLI talks to when neither `--url` nor TASKQ_URL says otherwise. */
export const DEFAULT_URL = "http://127.0.0.1:7070";

/** RPC clients of one gateway; building them opens nothing until the first call. */
export interface Clients {
  readonly url: string;
  readonly admin: Client<typeof AdminService>;
  readonly producer: Client<typeof ProducerService>;
}

/**
 * Clients for `--url` / TASKQ_URL (default http://127.0.0.1:7070), sending `--token` / TASKQ_TOKEN as a
 * bearer token when set.
 */
export function connect(
  flags: { url?: string | undefined; token?: string | undefined },
  env: Record<string, string | undefined>,
): Clients {
  const url = flags.url ?? (env.TASKQ_URL || DEFAULT_URL);
  const transport = createTransport({ baseUrl: url, token: flags.token ?? (env.TASKQ_TOKEN || undefined) });
  return {
    url,
    admin: createClient(AdminService, transport),
    producer: createClient(ProducerService, transport),
  };
}
