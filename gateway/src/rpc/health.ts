import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
  HealthCheckResponse_ServingStatus as Status,
} from "@taskq/sdk/internal";

/** Whether the gateway can serve now, and each change of it (ServingState). */
export interface Serving {
  serving(): Promise<boolean>;
  /** Calls `onChange` on each change; the function returned stops it. */
  watch(onChange: (serving: boolean) => void): () => void;
}

/**
 * grpc.health.v1.Health: one status for the whole gateway, reported for the empty service name and for
 * each of `services` (fully qualified, e.g. taskq.v1.WorkerService). Unauthenticated (auth/roles.ts).
 */
export function healthService(state: Serving, services: readonly string[]): ServiceImpl<typeof Health> {
  const known = new Set(["", ...services]);
  const status = async () => ((await state.serving()) ? Status.SERVING : Status.NOT_SERVING);
  return {
    async check(req) {
      if (!known.has(req.service)) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      return create(HealthCheckResponseSchema, { status: await status() });
    },

    async list() {
      const now = await status();
      const statuses = Object.fromEntries(
        [...known].map((name) => [name, create(HealthCheckResponseSchema, { status: now })]),
      );
      return create(HealthListResponseSchema, { statuses });
    },

    // The current status at once, then each change, until the caller leaves or the gateway closes.
    async *watch(req, ctx) {
      if (!known.has(req.service)) {
        // The protocol's answer to an unknown name: SERVICE_UNKNOWN, and the call stays open.
        yield create(HealthCheckResponseSchema, { status: Status.SERVICE_UNKNOWN });
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
        return;
      }
      let wake: (() => void) | null = null;
      let latest = await status();
      const stop = state.watch((serving) => {
        latest = serving ? Status.SERVING : Status.NOT_SERVING;
        wake?.();
      });
      const ended = () => wake?.();
      ctx.signal.addEventListener("abort", ended, { once: true });
      try {
        let sent: Status | null = null;
        while (!ctx.signal.aborted) {
          if (latest !== sent) {
            sent = latest;
            yield create(HealthCheckResponseSchema, { status: sent });
            continue;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = null;
        }
      } finally {
        stop();
        ctx.signal.removeEventListener("abort", ended);
      }
    },
  };
}
