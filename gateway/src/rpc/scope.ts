import { type Principal, requireQueues } from "../auth/auth.js";
import type { Store } from "../store/store.js";

/**
 * For a queue-scoped token, refuses a call on jobs of queues outside its scope. Settles, heartbeats and
 * cancels name jobs, not queues, so this costs one lookup, and only for scoped tokens.
 */
export async function requireJobScope(
  store: Store,
  principal: Principal,
  jobs: readonly { jobId: string }[],
): Promise<void> {
  if (!principal.queues) return;
  requireQueues(principal, await store.jobQueues(jobs.map((j) => j.jobId)));
}
