import { afterAll, beforeAll, beforeEach } from "vitest";
import { Claimer } from "../claim/claimer.js";
import { GatedClaim } from "../claim/gated-claim.js";
import { Waiters } from "../claim/waiters.js";
import { Profiles } from "../flow/profiles.js";
import { FlowKeyGate } from "../gates/flow-key.js";
import type { Limiter } from "../limiter/limiter.js";
import { MemoryLimiter } from "../limiter/memory-limiter.js";
import { type Db, pgliteDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import { QueueStore } from "../store/queue-store.js";
import { Store } from "../store/store.js";
import type { NewJob } from "../store/types.js";
import { newJob } from "./new-job.js";

export const ACTOR = "operator:test";

/**
 * One gateway's claim path with the limiter and gates on a clock the test moves, over a PGlite
 * database (tests sharing one use their own queue names). `shareLimiterOf`: another gateway of the
 * same fleet, whose limiter (Redis in production) this one shares.
 */
export function gateHarness(
  db: Db,
  shareLimiterOf?: { limiter: MemoryLimiter },
  wrapLimiter: (l: MemoryLimiter) => Limiter = (l) => l,
) {
  const store = new ClaimCountingStore(db);
  const queues = new QueueStore(db);
  const profiles = new Profiles(queues);
  let now = Date.now();
  const clock = () => now;
  const limiter = shareLimiterOf?.limiter ?? new MemoryLimiter(clock);
  const flowKeys = new FlowKeyGate(store, profiles, limiter, clock);
  const timings = { pausedRetryMs: 1000, maxRunningRetryMs: 50 };
  const gated = new GatedClaim(store, wrapLimiter(limiter), flowKeys, timings, clock);
  const claimer = new Claimer(store, new Waiters(), profiles, gated, flowKeys);
  return {
    db,
    store,
    queues,
    limiter,
    advance: (ms: number) => {
      now += ms;
    },
    enqueue: (queue: string, n = 1, over: Partial<NewJob> = {}, at?: Date) =>
      store.jobsEnqueue(
        Array.from({ length: n }, () => newJob(queue, over)),
        at,
      ),
    /** Runs a verb, then drops the cached settings as the change notification would. */
    verb: async <T>(run: (q: QueueStore) => Promise<T>): Promise<T> => {
      const out = await run(queues);
      profiles.clear();
      return out;
    },
    poll: (queue: string | string[], maxJobs = 10) =>
      claimer.poll(
        {
          queues: Array.isArray(queue) ? queue : [queue],
          maxJobs,
          maxWaitMs: 0,
          workerId: "w",
          leaseMs: 30_000,
        },
        new AbortController().signal,
      ),
  };
}

export type GateHarness = ReturnType<typeof gateHarness>;

/**
 * For the tests of one describe: a migrated PGlite database shared by them (each uses its own queue
 * names), closed after them, and a fresh harness on it before each test (`h`, which a test may replace).
 */
export function gateTests(): { readonly db: Db; h: GateHarness } {
  const t = {} as { db: Db; h: GateHarness };
  beforeAll(async () => {
    t.db = await openGateDb();
  });
  afterAll(() => t.db.close());
  beforeEach(() => {
    t.h = gateHarness(t.db);
  });
  return t;
}

export async function openGateDb(): Promise<Db> {
  const db = await pgliteDb();
  await migrate(db);
  return db;
}

/** Counts the claim statements begun, so a test can tell whether a gate let one run. */
class ClaimCountingStore extends Store {
  claimsBegun = 0;
  override jobsClaimMany(...args: Parameters<Store["jobsClaimMany"]>) {
    this.claimsBegun++;
    return super.jobsClaimMany(...args);
  }
}

/** The limiter with its rateTake replaced; every other call goes to it. */
export function withRateTake(l: MemoryLimiter, rateTake: Limiter["rateTake"]): Limiter {
  return new Proxy(l, {
    get: (target, key) => {
      if (key === "rateTake") return rateTake;
      const v = Reflect.get(target, key);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

/** Jobs of the queue waiting at attempt 0: never claimed, or put back with their attempt restored. */
export async function neverHandedOut(db: Db, queue: string): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    {
      name: "",
      text: "select count(*)::int as n from taskq.jobs where queue = $1 and state = 'queued' and attempt = 0",
    },
    [queue],
  );
  return row?.n ?? -1;
}
