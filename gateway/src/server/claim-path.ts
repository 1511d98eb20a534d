import { Claimer } from "../claim/claimer.js";
import { GatedClaim } from "../claim/gated-claim.js";
import type { PollWaiters } from "../claim/hand-off.js";
import { ThrottledTally } from "../claim/throttled-tally.js";
import { Waiters } from "../claim/waiters.js";
import type { Config } from "../config.js";
import { Profiles } from "../flow/profiles.js";
import { SettingsNotices } from "../flow/settings-notices.js";
import { FlowKeyGate } from "../gates/flow-key.js";
import type { Limiter } from "../limiter/limiter.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics.js";
import type { Db } from "../store/db.js";
import { DbClock } from "../store/db-clock.js";
import type { QueueStore } from "../store/queue-store.js";
import type { Store } from "../store/store.js";
import { WorkerStore } from "../store/worker-store.js";
import { WorkerRecords } from "../workers/worker-records.js";
import { listenForChanges } from "./listen-for-changes.js";

/** The claim path, wired: long polls, cached settings, the gates. */
export interface ClaimPath {
  readonly claimer: Claimer;
  /** The workers polling this gateway, written to the workers list every few seconds. */
  readonly records: WorkerRecords;
  /**
   * Stops its background work: the throttled tally's and worker records' flushes (this gateway's
   * workers leave the list), the clock's samples, the LISTEN.
   */
  stop(): Promise<void>;
}

export interface ClaimPathParts {
  db: Db;
  store: Store;
  queueStore: QueueStore;
  metrics: Metrics;
  limiter: Limiter;
  /** The gates' clock; default Postgres's (DbClock) for the ramp and this process's for flow-key waits. */
  clock?: () => number;
  config: Config;
  log: Logger;
  /** This gateway's instance id, under which its workers are listed. */
  gatewayId: string;
}

/** Builds the claimer and its gates, and starts listening for ready jobs and settings changes. */
export async function startClaimPath(p: ClaimPathParts): Promise<ClaimPath> {
  const profiles = new Profiles(p.queueStore);
  const notices = new SettingsNotices();
  // A settings verb answers once its change is in force here (the cached profile dropped at once) and,
  // as far as one gateway can tell, everywhere: its NOTIFY came back (at most 1 s).
  p.queueStore.watchSettings((queue) => {
    const seen = notices.seen(queue);
    return async () => {
      profiles.queueChanged(queue);
      await notices.waitPast(queue, seen, 1000);
    };
  });
  const waiters: PollWaiters = new Waiters();
  const stopListening = await listenForChanges(p.db, waiters, profiles, notices, p.log);
  const flowKeys = new FlowKeyGate(p.store, profiles, p.limiter, p.clock);
  // The ramp's progress compares with a start Postgres stamped: read on Postgres's clock, not ours.
  const dbClock = p.clock ? null : new DbClock(p.db);
  await dbClock?.start();
  const gatedClaim = new GatedClaim(
    p.store,
    p.limiter,
    flowKeys,
    { pausedRetryMs: p.config.pausedRetryMs, maxRunningRetryMs: p.config.maxRunningRetryMs },
    p.clock ?? dbClock?.now ?? Date.now,
  );
  const tally = new ThrottledTally(
    p.queueStore,
    p.config.throttledFlushMs,
    p.log.child({ component: "tally" }),
  );
  tally.start();
  const claimer = new Claimer(p.store, waiters, profiles, gatedClaim, flowKeys, p.metrics, tally);
  const records = new WorkerRecords(
    new WorkerStore(p.db),
    p.gatewayId,
    p.config.workerRecordsFlushMs,
    p.log.child({ component: "workers" }),
  );
  records.start();
  return {
    claimer,
    records,
    stop: async () => {
      await tally.stop();
      await records.stop();
      dbClock?.stop();
      await stopListening();
    },
  };
}
