import { sharedWhileInFlight } from "../shared-while-in-flight.js";
import type { Readiness } from "./readiness.js";

/** How long one answer of the stores stands for every Check in that time, ms. */
const PROBE_TTL_MS = 1000;
/** How often the stores are asked while anyone Watches, ms. */
const WATCH_INTERVAL_MS = 1000;

/**
 * Whether this gateway can serve, as the gRPC health service reports it: yes while Postgres (and Redis,
 * where configured) answer, no while one of them does not or once the gateway drains on shutdown.
 *
 * The stores are asked as /readyz asks them, at most once a second however many callers ask (the health
 * service is unauthenticated), and only while someone asks: Check probes on demand, Watch polls while at
 * least one watcher is open.
 */
export class ServingState {
  readonly #readiness: Readiness;
  #draining = false;
  #last: { serving: boolean; at: number } | null = null;
  readonly #watchers = new Set<(serving: boolean) => void>();
  #timer: NodeJS.Timeout | null = null;
  /** One readiness probe for the callers that ask while it runs. */
  readonly #probe = sharedWhileInFlight(() =>
    this.#readiness.problem().then(
      (problem) => {
        const serving = problem === null && !this.#draining;
        this.#last = { serving, at: Date.now() };
        return serving;
      },
      () => false,
    ),
  );

  constructor(readiness: Readiness) {
    this.#readiness = readiness;
  }

  /** True once `drain` was called. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Whether the gateway can serve now (answers within the readiness probe's own bound, 2 s at most). */
  serving(): Promise<boolean> {
    if (this.#draining) return Promise.resolve(false);
    const last = this.#last;
    if (last && Date.now() - last.at < PROBE_TTL_MS) return Promise.resolve(last.serving);
    return this.#probe();
  }

  /**
   * Calls `seen` with `serving()` about once a second from now on, and at once on `drain`; returns the
   * stop. Callers keep what they last reported and speak only of changes.
   */
  watch(seen: (serving: boolean) => void): () => void {
    this.#watchers.add(seen);
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.#poll(), WATCH_INTERVAL_MS);
      this.#timer.unref();
    }
    return () => {
      this.#watchers.delete(seen);
      if (this.#watchers.size === 0 && this.#timer) {
        clearInterval(this.#timer);
        this.#timer = null;
      }
    };
  }

  /** From now on NOT_SERVING, told to every watcher at once: the gateway is shutting down. */
  drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    this.#announce(false);
  }

  async #poll(): Promise<void> {
    this.#announce(await this.serving());
  }

  #announce(serving: boolean): void {
    for (const seen of this.#watchers) seen(serving);
  }
}
