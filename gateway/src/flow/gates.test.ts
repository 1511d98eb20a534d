import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Claimer } from "../claim/claimer.js";
import { GatedClaim } from "../claim/gated-claim.js";
import { Waiters } from "../claim/waiters.js";
import { LimiterUnavailableError } from "../limiter/fail-closed.js";
import type { Limiter } from "../limiter/limiter.js";
import { MemoryLimiter } from "../limiter/memory-limiter.js";
import { type Db, pgliteDb } from "../store/db.js";
import { migrate } from "../store/migrate.js";
import { QueueStore } from "../store/queue-store.js";
import { Store } from "../store/store.js";
import type { NewJob } from "../store/types.js";
import { newJob } from "../testing/new-job.js";
import { knownQueues } from "../testing/services.js";
import { FlowKeyGate } from "./flow-keys.js";
import { Profiles } from "./profiles.js";

const ACTOR = "operator:test";

/**
 * One gateway's claim path with the limiter and gates on a clock the test moves, over a PGlite
 * database shared by the tests of one describe (each test uses its own queue names).
 */
function setup(
  db: Db,
  shareLimiterOf?: { limiter: MemoryLimiter },
  wrapLimiter: (l: MemoryLimiter) => Limiter = (l) => l,
) {
  const store = new ClaimCountingStore(db);
  const queues = new QueueStore(db);
  const profiles = new Profiles(queues);
  let now = Date.now();
  const clock = () => now;
  // Another gateway of the same fleet shares the limiter (Redis in production).
  const limiter = shareLimiterOf?.limiter ?? new MemoryLimiter(clock);
  const flowKeys = new FlowKeyGate(store, profiles, limiter, clock);
  const gated = new GatedClaim(
    store,
    wrapLimiter(limiter),
    flowKeys,
    { pausedRetryMs: 1000, maxRunningRetryMs: 50 },
    clock,
  );
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

/** Counts the claim statements begun, so a test can tell what ran beside what. */
class ClaimCountingStore extends Store {
  claimsBegun = 0;
  override jobsClaimMany(...args: Parameters<Store["jobsClaimMany"]>) {
    this.claimsBegun++;
    return super.jobsClaimMany(...args);
  }
}

/** The limiter with its rateTake replaced; every other call goes to it. */
function withRateTake(l: MemoryLimiter, rateTake: Limiter["rateTake"]): Limiter {
  return new Proxy(l, {
    get: (target, key) => {
      if (key === "rateTake") return rateTake;
      const v = Reflect.get(target, key);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

type Harness = ReturnType<typeof setup>;
let h: Harness;

/** Jobs of the queue waiting at attempt 0: never claimed, or put back with their attempt restored. */
async function neverHandedOut(queue: string): Promise<number> {
  const [row] = await h.db.query<{ n: number }>(
    {
      name: "",
      text: "select count(*)::int as n from taskq.jobs where queue = $1 and state = 'queued' and attempt = 0",
    },
    [queue],
  );
  return row?.n ?? -1;
}
let shared: Db;

async function openDb(): Promise<Db> {
  const db = await pgliteDb();
  await migrate(db);
  return db;
}

describe("claim-time gates (one gateway, injected clock)", () => {
  beforeAll(async () => {
    shared = await openDb();
  });
  afterAll(() => shared.close());
  beforeEach(() => {
    h = setup(shared);
  });
  it("never gates a queue that sets nothing", async () => {
    await h.enqueue("plain", 3);
    const r = await h.poll("plain");
    expect(r.jobs).toHaveLength(3);
    expect(r.verdicts).toEqual([]);
  });

  it("pause answers PAUSED and hands out nothing; resume hands out again", async () => {
    await h.enqueue("p", 2);
    await h.verb((q) => q.queuePause("p", ACTOR));
    expect(await h.poll("p")).toEqual({
      jobs: [],
      verdicts: [{ queue: "p", reason: "PAUSED", retryAfterMs: 1000 }],
    });
    await h.verb((q) => q.queueResume("p", ACTOR));
    expect((await h.poll("p")).jobs).toHaveLength(2);
  });

  it("orders verdicts: PAUSED over MAX_RUNNING over THROTTLE", async () => {
    await h.enqueue("o", 5);
    await h.verb((q) => q.queueSetConcurrency("o", 1, ACTOR));
    await h.verb((q) => q.queueSetThrottle("o", 1, 60_000, ACTOR));
    expect((await h.poll("o")).jobs).toHaveLength(1); // takes the slot and fills the cap
    expect((await h.poll("o")).verdicts[0]?.reason).toBe("MAX_RUNNING");
    await h.verb((q) => q.queuePause("o", ACTOR));
    expect((await h.poll("o")).verdicts[0]?.reason).toBe("PAUSED");
    await h.verb((q) => q.queueResume("o", ACTOR));
    await h.verb((q) => q.queueSetConcurrency("o", null, ACTOR));
    expect((await h.poll("o")).verdicts[0]?.reason).toBe("THROTTLE");
  });

  it("caps running jobs exactly and frees a slot on settle", async () => {
    await h.enqueue("cap", 10);
    await h.verb((q) => q.queueSetConcurrency("cap", 3, ACTOR));
    const first = await h.poll("cap");
    expect(first.jobs).toHaveLength(3);
    expect(await h.poll("cap")).toMatchObject({
      jobs: [],
      verdicts: [{ reason: "MAX_RUNNING", retryAfterMs: 50 }],
    });
    const done = first.jobs[0];
    if (!done) throw new Error("no job");
    await h.store.jobsSettle([
      { jobId: done.id, attempt: done.attempt, kind: "success", result: new Uint8Array() },
    ]);
    expect((await h.poll("cap")).jobs).toHaveLength(1);
  });

  it("throttles to one claim per period/limit, one job per poll, with the exact retry_after", async () => {
    await h.enqueue("t", 5);
    await h.verb((q) => q.queueSetThrottle("t", 10, 1000, ACTOR)); // one claim per 100 ms
    expect((await h.poll("t")).jobs).toHaveLength(1);
    h.advance(30);
    expect(await h.poll("t")).toMatchObject({
      jobs: [],
      verdicts: [{ reason: "THROTTLE", retryAfterMs: 70 }],
    });
    h.advance(70); // a worker that sleeps exactly retry_after is admitted
    expect((await h.poll("t")).jobs).toHaveLength(1);
  });

  it("spends no throttle slot on an empty queue", async () => {
    await knownQueues(h.db, "e");
    await h.verb((q) => q.queueSetThrottle("e", 1, 60_000, ACTOR));
    expect(await h.poll("e")).toEqual({ jobs: [], verdicts: [] });
    await h.enqueue("e", 1);
    expect((await h.poll("e")).jobs).toHaveLength(1);
  });

  it("applies a throttle change on the next claim, dropping the slot the old rate held", async () => {
    await h.enqueue("c", 3);
    await h.verb((q) => q.queueSetThrottle("c", 1, 60_000, ACTOR));
    expect((await h.poll("c")).jobs).toHaveLength(1);
    expect((await h.poll("c")).verdicts[0]?.retryAfterMs).toBe(60_000);
    await h.verb((q) => q.queueSetThrottle("c", 10, 1000, ACTOR));
    expect((await h.poll("c")).jobs).toHaveLength(1);
    await h.verb((q) => q.queueDeleteThrottle("c", ACTOR));
    expect((await h.poll("c")).jobs).toHaveLength(1);
  });

  it("meters the claim rate with a burst (GCRA) and refunds tokens a claim did not use", async () => {
    await h.enqueue("r", 3);
    await h.verb((q) => q.queueEnsure("r", { claim_rate_per_minute: 600, claim_burst: 5 }, ACTOR));
    expect((await h.poll("r", 10)).jobs).toHaveLength(3); // 5 admitted, 3 used, 2 refunded
    await h.enqueue("r", 5);
    expect((await h.poll("r", 10)).jobs).toHaveLength(2);
    expect(await h.poll("r", 10)).toMatchObject({
      jobs: [],
      verdicts: [{ reason: "RATE_LIMIT", retryAfterMs: 100 }],
    });
    h.advance(100);
    expect((await h.poll("r", 10)).jobs).toHaveLength(1);
  });

  it("takes claim-rate tokens beside the claim while the rate has room, handing out only those admitted", async () => {
    // A take waits until a claim statement has begun: it is then beside the claim, not before it.
    let beside = false;
    h = setup(shared, undefined, (l) =>
      withRateTake(l, async (...a) => {
        const begun = h.store.claimsBegun;
        for (let i = 0; beside && h.store.claimsBegun === begun; i++) {
          if (i > 200) throw new Error("the take waited for nothing: it ran before the claim");
          await new Promise((r) => setTimeout(r, 5));
        }
        return l.rateTake(...a);
      }),
    );
    await h.enqueue("rb", 10, { priority: 1 });
    await h.enqueue("rb", 1, { priority: 9 });
    await h.verb((q) => q.queueEnsure("rb", { claim_rate_per_minute: 600, claim_burst: 6 }, ACTOR));
    expect((await h.poll("rb", 4)).jobs).toHaveLength(4); // took first: all 4 admitted, so the rate has room
    beside = true;
    await h.enqueue("rb", 1, { priority: 5 });
    // Claimed 4 beside a take that admitted the 2 tokens left: the best 2 are handed out, 2 go back.
    const second = await h.poll("rb", 4);
    expect(second.jobs.map((j) => j.priority)).toEqual([5, 1]);
    expect(await neverHandedOut("rb")).toBe(6);
    // That take did not admit all: the next takes first, claiming nothing the rate refuses.
    beside = false;
    const begun = h.store.claimsBegun;
    expect(await h.poll("rb", 4)).toMatchObject({
      jobs: [],
      verdicts: [{ reason: "RATE_LIMIT", retryAfterMs: 100 }],
    });
    expect(h.store.claimsBegun).toBe(begun);
    h.advance(100);
    expect((await h.poll("rb", 4)).jobs).toHaveLength(1);
  });

  it("claims beside a take only while tokens are left over: at a rate that binds it takes first", async () => {
    await h.enqueue("rt", 10);
    await h.verb((q) => q.queueEnsure("rt", { claim_rate_per_minute: 600, claim_burst: 2 }, ACTOR));
    expect((await h.poll("rt", 1)).jobs).toHaveLength(1); // took first; one token left
    expect((await h.poll("rt", 1)).jobs).toHaveLength(1); // beside its take, which emptied the bucket
    for (let i = 0; i < 3; i++) {
      h.advance(100); // one token a tick, each taken before a claim: nothing claimed to be put back
      const begun = h.store.claimsBegun;
      expect((await h.poll("rt", 1)).jobs).toHaveLength(1);
      expect(await h.poll("rt", 1)).toMatchObject({ jobs: [], verdicts: [{ reason: "RATE_LIMIT" }] });
      expect(h.store.claimsBegun).toBe(begun + 1);
    }
  });

  it("puts back what it claimed beside a take that fails (limiter unreachable) and declines RATE_LIMIT", async () => {
    let down = false;
    h = setup(shared, undefined, (l) =>
      withRateTake(l, async (...a) => {
        if (down) throw new LimiterUnavailableError("redis down");
        return l.rateTake(...a);
      }),
    );
    await h.enqueue("rd", 5);
    await h.verb((q) => q.queueEnsure("rd", { claim_rate_per_minute: 6000, claim_burst: 100 }, ACTOR));
    expect((await h.poll("rd", 2)).jobs).toHaveLength(2);
    down = true;
    const begun = h.store.claimsBegun;
    expect(await h.poll("rd", 2)).toEqual({
      jobs: [],
      verdicts: [{ queue: "rd", reason: "RATE_LIMIT", retryAfterMs: 1000 }],
    });
    expect(h.store.claimsBegun).toBe(begun + 1); // claimed beside the take, then put back
    expect(await neverHandedOut("rd")).toBe(3);
    down = false;
    expect((await h.poll("rd", 5)).jobs).toHaveLength(3);
  });

  it("ramps max_running after a resume: RAMPING until the window has passed", async () => {
    await h.enqueue("ramp", 20);
    await h.verb((q) => q.queueEnsure("ramp", { max_running: 10, ramp_seconds: 10 }, ACTOR));
    await h.verb((q) => q.queuePause("ramp", ACTOR));
    await h.verb((q) => q.queueResume("ramp", ACTOR));
    expect((await h.poll("ramp", 20)).jobs).toHaveLength(1); // near zero: one
    expect((await h.poll("ramp", 20)).verdicts[0]?.reason).toBe("RAMPING");
    // The cap is scaled under the row lock, on the database's clock: the window is moved back instead.
    const rampedFor = (s: number) =>
      h.db.query(
        {
          name: "",
          text: `update taskq.queues set ramp_started_at = now() - $1 * interval '1 second' where name = 'ramp'`,
        },
        [s],
      );
    await rampedFor(4.5);
    expect((await h.poll("ramp", 20)).jobs).toHaveLength(4); // about half way: cap 5
    await rampedFor(10);
    expect((await h.poll("ramp", 20)).jobs).toHaveLength(5); // full cap 10
    expect((await h.poll("ramp", 20)).verdicts[0]?.reason).toBe("MAX_RUNNING");
  });

  it("ramps the claim rate after a resume: a tenth of the full rate in the first fifth", async () => {
    await h.enqueue("rr", 500);
    await h.verb((q) =>
      q.queueEnsure("rr", { claim_rate_per_minute: 6000, claim_burst: 1, ramp_seconds: 10 }, ACTOR),
    );
    await h.verb((q) => q.queuePause("rr", ACTOR));
    await h.verb((q) => q.queueResume("rr", ACTOR));
    let claimed = 0;
    let ramping = 0;
    for (let t = 0; t < 2000; t += 10) {
      const r = await h.poll("rr", 10);
      claimed += r.jobs.length;
      if (r.verdicts[0]?.reason === "RAMPING") ramping++;
      h.advance(10);
    }
    expect(claimed).toBeLessThanOrEqual(0.25 * 200);
    expect(claimed).toBeGreaterThanOrEqual(15);
    expect(ramping).toBeGreaterThan(0);
    h.advance(8000);
    let full = 0;
    for (let t = 0; t < 1000; t += 10) {
      full += (await h.poll("rr", 10)).jobs.length;
      h.advance(10);
    }
    expect(full).toBeGreaterThanOrEqual(99); // 100/s
  });

  it("ages priority: a job that waited long enough overtakes fresher higher-priority work", async () => {
    const past = new Date(Date.now() - 10 * 60_000);
    const [old] = await h.enqueue("age", 1, { priority: 0 }, past);
    await h.enqueue("age", 2, { priority: 5 });
    const strict = await h.poll("age", 1);
    expect(strict.jobs[0]?.priority).toBe(5);
    await h.store.jobsUnclaim(strict.jobs.map((j) => ({ jobId: j.id, attempt: j.attempt })));
    await h.verb((q) => q.queueSetAging("age", 60, ACTOR)); // +1 per minute: the old job is at 10
    const aged = await h.poll("age", 1);
    expect(aged.jobs[0]?.id).toBe(old?.id);
  });

  it("ages across priority levels: the best aged job may come from a middle level", async () => {
    const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);
    await h.enqueue("age3", 3, { priority: 9 }); // fresh: 9
    const [middle] = await h.enqueue("age3", 1, { priority: 5 }, minutesAgo(5)); // 5 + 5 = 10
    await h.enqueue("age3", 1, { priority: 0 }, minutesAgo(6)); // 0 + 6 = 6
    await h.enqueue("age3", 2, { priority: 5 }, minutesAgo(1)); // 5 + 1 = 6
    await h.verb((q) => q.queueSetAging("age3", 60, ACTOR));
    // Neither the highest priority (9) nor the oldest job (6) is best: the middle level's oldest (10) is.
    const best = await h.poll("age3", 1);
    expect(best.jobs.map((j) => j.id)).toEqual([middle?.id]);
    const next = await h.poll("age3", 3);
    expect(next.jobs.map((j) => j.priority)).toEqual([9, 9, 9]);
  });

  it("keeps equal waiters in order under aging", async () => {
    const at = new Date(Date.now() - 120_000);
    const ids = (await h.enqueue("eq", 3, {}, at)).map((j) => j.id);
    await h.verb((q) => q.queueSetAging("eq", 60, ACTOR));
    expect((await h.poll("eq", 3)).jobs.map((j) => j.id)).toEqual(ids);
  });

  it("gives jobs the queue's default TTL, never hands out an expired one, and expires it", async () => {
    await h.verb((q) => q.queueEnsure("ttl", { default_ttl_seconds: 60 }, ACTOR));
    const t0 = new Date(Date.now() - 61_000);
    const [stale] = await h.enqueue("ttl", 1, {}, t0);
    const [own] = await h.enqueue("ttl", 1, { ttlSeconds: 3600 }, t0);
    const r = await h.poll("ttl");
    expect(r.jobs.map((j) => j.id)).toEqual([own?.id]);
    expect(await h.store.jobsExpireTtl(100)).toBe(1);
    expect(await h.store.jobGet(stale?.id ?? "")).toMatchObject({
      state: "cancelled",
      outcome: "expired_ttl",
    });
  });

  it("never TTL-expires a running job", async () => {
    const [j] = await h.enqueue("ttl2", 1, { ttlSeconds: 1 });
    expect((await h.poll("ttl2")).jobs).toHaveLength(1);
    expect(await h.store.jobsExpireTtl(100, new Date(Date.now() + 60_000))).toBe(0);
    expect((await h.store.jobGet(j?.id ?? ""))?.state).toBe("running");
  });

  it("meters flow keys without head-of-line blocking, and says FLOW_KEY when only they wait", async () => {
    await h.verb((q) => q.flowLimitSet("acme", 60, 1, ACTOR));
    await h.enqueue("fk", 5, { flowKey: "acme", priority: 9 }); // ahead of the others
    await h.enqueue("fk", 3, { flowKey: "other" });
    await h.enqueue("fk", 2);
    const first = await h.poll("fk", 10);
    expect(first.jobs.filter((j) => j.flowKey === "acme")).toHaveLength(1);
    expect(first.jobs).toHaveLength(6);
    // The four acme jobs put back were never handed out: their attempt is restored.
    const waiting = await h.db.query<{ attempt: number }>({
      name: "",
      text: "select attempt from taskq.jobs where flow_key = 'acme' and state = 'queued'",
    });
    expect(waiting.map((r) => r.attempt)).toEqual([0, 0, 0, 0]);
    expect(await h.poll("fk", 10)).toMatchObject({
      jobs: [],
      verdicts: [{ queue: "fk", reason: "FLOW_KEY", retryAfterMs: 1000 }],
    });
    h.advance(1000);
    expect((await h.poll("fk", 10)).jobs).toHaveLength(1);
  });

  it.each([
    ["an ungated queue", "hol1", null],
    ["a gated queue", "hol2", 1000],
  ])(
    "never lets a limited key's backlog hold back other keys in %s, even when it fills a whole claim",
    async (_, queue, cap) => {
      await h.verb((q) => q.flowLimitSet(`${queue}-key`, 60, 1, ACTOR));
      await knownQueues(h.db, queue);
      if (cap) await h.verb((q) => q.queueSetConcurrency(queue, cap, ACTOR));
      await h.enqueue(queue, 20, { flowKey: `${queue}-key`, priority: 9 }); // far more than one claim takes
      await h.enqueue(queue, 3, { flowKey: "free" });
      const first = await h.poll(queue, 1);
      expect(first.jobs.map((j) => j.flowKey)).toEqual([`${queue}-key`]);
      // A second gateway has not yet learned that the key is out of tokens: its first claim takes only
      // that key's jobs, all sent back; it must still hand out the other keys' jobs in this poll.
      const other = setup(shared, h);
      const second = await other.poll(queue, 3);
      expect(second.jobs.map((j) => j.flowKey)).toEqual(["free", "free", "free"]);
    },
  );

  it("leaves unknown flow keys unlimited", async () => {
    await h.verb((q) => q.flowLimitSet("acme2", 60, 1, ACTOR));
    await h.enqueue("u", 5, { flowKey: "nobody-limits-me" });
    expect((await h.poll("u", 10)).jobs).toHaveLength(5);
  });
});

describe("operator verbs", () => {
  // A database of its own per test: these tests check that nothing at all was written.
  beforeEach(async () => {
    h = setup(await openDb());
  });
  afterEach(() => h.db.close());
  const auditCount = async () =>
    (
      await h.db.query<{ n: number }>({ name: "", text: "select count(*)::int as n from taskq.queue_audit" })
    )[0]?.n;

  it("refuses every out-of-range setting with a message naming the field, writing nothing", async () => {
    const bad: [(q: QueueStore) => Promise<unknown>, string][] = [
      [(q) => q.queueSetThrottle("x", 0, 1000, ACTOR), "limit"],
      [(q) => q.queueSetThrottle("x", 100_001, 1000, ACTOR), "limit"],
      [(q) => q.queueSetThrottle("x", 1, 999, ACTOR), "period_ms"],
      [(q) => q.queueSetThrottle("x", 1, 86_400_001, ACTOR), "period_ms"],
      [(q) => q.queueSetConcurrency("x", 0, ACTOR), "max_running"],
      [(q) => q.queueEnsure("x", { max_running: -1 }, ACTOR), "profile.max_running"],
      [(q) => q.queueEnsure("x", { claim_rate_per_minute: 0 }, ACTOR), "profile.claim_rate_per_minute"],
      [
        (q) => q.queueEnsure("x", { claim_rate_per_minute: 60, claim_burst: 0 }, ACTOR),
        "profile.claim_burst",
      ],
      [(q) => q.queueEnsure("x", { claim_burst: 5 }, ACTOR), "profile.claim_burst"],
      [(q) => q.queueEnsure("x", { ramp_seconds: 0 }, ACTOR), "profile.ramp_seconds"],
      [(q) => q.queueEnsure("x", { default_ttl_seconds: 0 }, ACTOR), "profile.default_ttl_seconds"],
      [(q) => q.queueEnsure("x", { notify_mode: "sometimes" }, ACTOR), "profile.notify_mode"],
      [(q) => q.queueEnsure("x", { max_running: 1.5 }, ACTOR), "profile.max_running"],
      [(q) => q.queueEnsure("x", { bogus: 1 }, ACTOR), "profile.bogus"],
      [(q) => q.queueEnsure("bad name", {}, ACTOR), "queue"],
      [(q) => q.queueSetAging("x", 0, ACTOR), "aging_seconds"],
      [(q) => q.flowLimitSet("k", 0, 1, ACTOR), "rate_per_minute"],
      [(q) => q.flowLimitSet("k", 60, 0, ACTOR), "burst"],
      [(q) => q.flowLimitSet("k".repeat(256), 60, 1, ACTOR), "flow_key"],
      [(q) => q.queuePause("x", ""), "actor"],
    ];
    for (const [run, field] of bad) {
      const err = await run(h.queues).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.name, field).toBe("InvalidArgumentError");
      expect(err?.message.startsWith(`${field} `), `${err?.message}`).toBe(true);
    }
    expect(await auditCount()).toBe(0);
    expect(await h.queues.queuesList()).toEqual([]);
    expect(await h.queues.flowLimitsList()).toEqual([]);
  });

  it("writes one audit row per verb with actor and {before, after}", async () => {
    await knownQueues(h.db, "a");
    await h.queues.queueSetThrottle("a", 5, 60_000, "operator:ada");
    await h.queues.queueDeleteThrottle("a", "operator:ada");
    await h.queues.queuePause("a", "operator:ada");
    const rows = await h.db.query<{
      event_type: string;
      actor: string;
      detail: { before: unknown; after: unknown };
    }>({
      name: "",
      text: "select event_type, actor, detail from taskq.queue_audit where queue = 'a' order by id",
    });
    expect(rows.map((r) => r.event_type)).toEqual(["queue.throttle", "queue.unthrottle", "queue.pause"]);
    expect(rows.every((r) => r.actor === "operator:ada")).toBe(true);
    expect(rows[0]?.detail).toMatchObject({
      before: { throttle: null },
      after: { throttle: { limit: 5, period_ms: 60_000, source: "console" } },
    });
  });

  it("refuses to change a config-sourced throttle through the API, and clears only waiting jobs", async () => {
    await knownQueues(h.db, "cfg");
    await h.queues.queueSetThrottle("cfg", 10, 60_000, "config", "config");
    const err = await h.queues.queueSetThrottle("cfg", 20, 60_000, ACTOR).catch((e: Error) => e);
    expect((err as Error).name).toBe("FailedPreconditionError");
    const del = await h.queues.queueDeleteThrottle("cfg", ACTOR).catch((e: Error) => e);
    expect((del as Error).name).toBe("FailedPreconditionError");
    await h.enqueue("cfg", 3);
    await h.enqueue("cfg", 1, { delayMs: 60_000 });
    await h.verb((q) => q.queueDeleteThrottle("cfg", "config", "config"));
    expect((await h.poll("cfg", 1)).jobs).toHaveLength(1);
    expect(await h.queues.queueClear("cfg", ACTOR)).toBe(3);
    const left = await h.db.query<{ state: string }>({
      name: "",
      text: "select state from taskq.jobs where queue = 'cfg'",
    });
    expect(left.map((r) => r.state)).toEqual(["running"]);
  });
});
