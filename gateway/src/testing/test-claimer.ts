import { Claimer } from "../claim/claimer.js";
import { GatedClaim } from "../claim/gated-claim.js";
import type { Handed } from "../claim/hand-off.js";
import type { Poll } from "../claim/poll-loop.js";
import { Waiters } from "../claim/waiters.js";
import { Profiles } from "../flow/profiles.js";
import { FlowKeyGate } from "../gates/flow-key.js";
import { MemoryLimiter } from "../limiter/memory-limiter.js";
import type { Db } from "../store/db.js";
import { QueueStore } from "../store/queue-store.js";
import { Store } from "../store/store.js";

/** A Claimer on `db` as a gateway builds one, with an in-memory limiter, and the parts tests look at. */
export function testClaimer(db: Db) {
  const store = new Store(db);
  const queues = new QueueStore(db);
  const profiles = new Profiles(queues);
  const limiter = new MemoryLimiter();
  const flowKeys = new FlowKeyGate(store, profiles, limiter);
  const gated = new GatedClaim(store, limiter, flowKeys, { pausedRetryMs: 1000, maxRunningRetryMs: 50 });
  const waiters = new Waiters<Poll, Handed>();
  const claimer = new Claimer(store, waiters, profiles, gated, flowKeys);
  return { store, queues, profiles, waiters, claimer };
}
