import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { READY_CHANNEL } from "../store/store.js";
import { duplex, type GrpcStubs, grpcStubs, seconds, unary } from "../testing/grpc-stubs.js";
import { newJob } from "../testing/new-job.js";
import { engines, haveService } from "../testing/services.js";
import { testClaimer } from "../testing/test-claimer.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { DrainedQueues } from "./drained.js";
import type { Poll } from "./poll-loop.js";

const ACTOR = "operator:test";

for (const engine of engines) {
  describe.skipIf(!engine.available())(
    `a Claim stream whose last claim found its queues drained (${engine.name})`,
    () => {
      let handle: Awaited<ReturnType<(typeof engine)["open"]>>;
      let t: ReturnType<typeof testClaimer>;
      /** Claim statements run for polls (an enqueue's hand-off is not one of them). */
      let claims = 0;
      let round = 0;
      beforeAll(async () => {
        handle = await engine.open();
        t = testClaimer(handle.db);
        const claimMany = t.store.jobsClaimMany.bind(t.store);
        t.store.jobsClaimMany = (...args) => {
          claims++;
          return claimMany(...args);
        };
      });
      afterAll(() => handle.close());

      const queue = () => `drained-${++round}`;
      const poll = (q: string, over: Partial<Poll> = {}): Poll => ({
        queues: [q],
        maxJobs: 5,
        maxWaitMs: 60_000,
        workerId: "w-drained",
        leaseMs: 30_000,
        ...over,
      });
      /** A poll's answer, which must come at once rather than at the end of its long wait. */
      function promptly<T>(answer: Promise<T>): Promise<T> {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("the poll parked instead of claiming")), 3_000);
        });
        return Promise.race([answer, late]).finally(() => clearTimeout(timer));
      }
      async function untilParked(before: number): Promise<void> {
        for (let i = 0; t.waiters.parked === before; i++) {
          if (i > 1000) throw new Error("the poll never parked");
          await new Promise((r) => setTimeout(r, 2));
        }
      }

      it("parks the stream's next poll without a claim, where an enqueue hands it the next job", async () => {
        const q = queue();
        const drained = new DrainedQueues();
        await t.store.jobsEnqueue([newJob(q), newJob(q)]);
        const first = await t.claimer.poll(poll(q), new AbortController().signal, drained);
        expect(first.jobs).toHaveLength(2);
        const before = claims;
        const next = t.claimer.poll(poll(q), new AbortController().signal, drained);
        await untilParked(0);
        expect(claims).toBe(before);
        const [job] = await t.claimer.enqueue([newJob(q)]);
        expect((await next).jobs.map((j) => j.id)).toEqual([job?.id]);
        expect(claims).toBe(before);
        // That answer found the queue drained too: the poll after it parks at once again.
        const third = t.claimer.poll(poll(q, { maxWaitMs: 300 }), new AbortController().signal, drained);
        await untilParked(0);
        expect(claims).toBe(before);
        // Its wait ran out: it looks once before it answers, as any long poll does.
        expect(await third).toEqual({ jobs: [], verdicts: [] });
        expect(claims).toBe(before + 1);
      });

      it("claims at once when a job was announced on its queues since", async () => {
        const q = queue();
        const drained = new DrainedQueues();
        await t.claimer.poll(poll(q, { maxWaitMs: 0 }), new AbortController().signal, drained);
        const [job] = await t.store.jobsEnqueue([newJob(q)]);
        // No listener here to pass the enqueue's notification on: wake as it would.
        t.waiters.wake(q);
        const before = claims;
        const res = await promptly(t.claimer.poll(poll(q), new AbortController().signal, drained));
        expect(res.jobs.map((j) => j.id)).toEqual([job?.id]);
        expect(claims).toBe(before + 1);
      });

      it("claims at once when the queue's settings changed since, or flow limits did", async () => {
        for (const change of [
          (q: string) => t.waiters.settingsChanged(q),
          () => t.waiters.allSettingsChanged(),
        ]) {
          const q = queue();
          const drained = new DrainedQueues();
          await t.claimer.poll(poll(q, { maxWaitMs: 0 }), new AbortController().signal, drained);
          const [job] = await t.store.jobsEnqueue([newJob(q)]);
          // As the listener does on a settings notification: a claim that read the old settings (say,
          // no cap where one was just set) may have left ready jobs behind.
          change(q);
          const res = await promptly(t.claimer.poll(poll(q), new AbortController().signal, drained));
          expect(res.jobs.map((j) => j.id)).toEqual([job?.id]);
        }
      });

      it("claims at once after a claim that got all it asked for, and for other queues", async () => {
        const q = queue();
        const other = queue();
        const drained = new DrainedQueues();
        await t.store.jobsEnqueue([newJob(q), newJob(q), newJob(q)]);
        const ask = poll(q, { maxJobs: 2 });
        expect((await t.claimer.poll(ask, new AbortController().signal, drained)).jobs).toHaveLength(2);
        // Full: more may be ready.
        expect(
          (await promptly(t.claimer.poll(ask, new AbortController().signal, drained))).jobs,
        ).toHaveLength(1);
        // That one found `q` drained, which says nothing of another queue.
        await t.store.jobsEnqueue([newJob(other)]);
        const res = await promptly(t.claimer.poll(poll(other), new AbortController().signal, drained));
        expect(res.jobs).toHaveLength(1);
      });

      it("claims at once for a poll that carries settlements, and for a poll that may not wait", async () => {
        const q = queue();
        const drained = new DrainedQueues();
        await t.store.jobsEnqueue([newJob(q)]);
        const [job] = (await t.claimer.poll(poll(q), new AbortController().signal, drained)).jobs;
        // Its retry is ready at once; the settle's own notification is not passed on here.
        const error = { type: "Test", message: "again", retryable: true };
        const settle = { jobId: job?.id ?? "", attempt: 1, kind: "failure" as const, error, delayMs: 0 };
        const res = await promptly(
          t.claimer.poll(poll(q, { settlements: [settle] }), new AbortController().signal, drained),
        );
        expect(res.jobs.map((j) => j.id)).toEqual([job?.id]);
        await t.store.jobsSettle([{ ...settle, attempt: 2 }]);
        const now = await promptly(
          t.claimer.poll(poll(q, { maxWaitMs: 0 }), new AbortController().signal, drained),
        );
        expect(now.jobs.map((j) => j.id)).toEqual([job?.id]);
      });

      it("claims at once on a queue claimed alone (a claim rate) or notified only when idle", async () => {
        const profiles_ = [
          { claim_rate_per_minute: 6000, claim_burst: 100 },
          { notify_mode: "on_idle_transition" },
        ];
        for (const profile of profiles_) {
          const q = queue();
          await t.queues.queueEnsure(q, profile, ACTOR);
          t.profiles.clear();
          const drained = new DrainedQueues();
          await t.claimer.poll(poll(q, { maxWaitMs: 0 }), new AbortController().signal, drained);
          const [job] = await t.store.jobsEnqueue([newJob(q)]);
          const res = await promptly(t.claimer.poll(poll(q), new AbortController().signal, drained));
          expect(res.jobs.map((j) => j.id)).toEqual([job?.id]);
        }
      });

      it("claims at once while any flow limit exists: a key's jobs go back without an announcement", async () => {
        await t.queues.flowLimitSet("drained-key", 600, 10, ACTOR);
        t.profiles.clear();
        try {
          const q = queue();
          const drained = new DrainedQueues();
          await t.claimer.poll(poll(q, { maxWaitMs: 0 }), new AbortController().signal, drained);
          const [job] = await t.store.jobsEnqueue([newJob(q)]);
          const res = await promptly(t.claimer.poll(poll(q), new AbortController().signal, drained));
          expect(res.jobs.map((j) => j.id)).toEqual([job?.id]);
        } finally {
          await t.queues.flowLimitSet("drained-key", null, null, ACTOR);
          t.profiles.clear();
        }
      });

      it("announces only the jobs an enqueue did not hand out", async () => {
        const heard: string[] = [];
        const unlisten = await handle.db.listen([READY_CHANNEL], (_channel, q) => heard.push(q));
        try {
          const [all, some, marker] = [queue(), queue(), queue()];
          const handedAll = t.claimer.poll(poll(all), new AbortController().signal);
          await untilParked(0);
          await t.claimer.enqueue([newJob(all), newJob(all)]);
          expect((await handedAll).jobs).toHaveLength(2);
          const handedSome = t.claimer.poll(poll(some, { maxJobs: 1 }), new AbortController().signal);
          await untilParked(0);
          await t.claimer.enqueue([newJob(some), newJob(some)]);
          expect((await handedSome).jobs).toHaveLength(1);
          // Notifications arrive in commit order: once the marker's is heard, the others' were.
          await t.store.jobsEnqueue([newJob(marker)]);
          for (let i = 0; !heard.includes(marker); i++) {
            if (i > 1000) throw new Error("the marker's notification never came");
            await new Promise((r) => setTimeout(r, 2));
          }
          expect(heard).toEqual([some, marker]);
        } finally {
          await unlisten();
        }
      });
    },
  );
}

// Two gateways on one database, as a fleet runs: a worker's poll on the first parks without a claim
// after a drained answer, and an enqueue through the second (which has no poll to hand it to) still
// reaches it, by the notification.
// Gateways on Postgres share the test Redis for their limiters.
const services = haveService("postgres") && haveService("redis");

describe.skipIf(!services)("a drained Claim stream in a fleet of two gateways", () => {
  let first: TestGateway;
  let second: TestGateway;
  let stubs: { first: GrpcStubs; second: GrpcStubs };
  beforeAll(async () => {
    first = await startTestGateway({ engine: "postgres" });
    second = await startTestGateway({ databaseUrl: first.databaseUrl ?? "" });
    stubs = { first: grpcStubs(first.grpcUrl), second: grpcStubs(second.grpcUrl) };
  });
  afterAll(async () => {
    stubs.first.close();
    stubs.second.close();
    await second.stop();
    await first.stop();
  });

  it("parks the next poll without a claim, and wakes it for a job enqueued elsewhere", async () => {
    const q = "drained-fleet";
    const claims = async () =>
      (await first.metrics.claimSeconds.get()).values.find((v) => v.metricName?.endsWith("_count"))?.value ??
      0;
    const enqueue = (via: GrpcStubs) =>
      unary(via.producer, "Enqueue", { job: { queue: q, payload: Buffer.from("{}") } });
    await enqueue(stubs.first);
    const stream = duplex(stubs.first.worker, "Claim");
    const ask = { queues: [q], max_jobs: 5, max_wait: seconds(20), worker_id: "w-fleet" };
    expect((await stream.send(ask)).jobs).toHaveLength(1);
    const before = await claims();
    const next = stream.send(ask);
    await new Promise((r) => setTimeout(r, 300));
    expect(await claims()).toBe(before);
    const t0 = Date.now();
    const { job_id } = await enqueue(stubs.second);
    const res = await next;
    stream.end();
    expect(res.jobs.map((j: { id: string }) => j.id)).toEqual([job_id]);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(await claims()).toBe(before + 1);
  });

  it("answers the next poll at once when another gateway changed the queue's settings since", async () => {
    const q = "drained-fleet-cap";
    await unary(stubs.second.admin, "EnsureQueue", { queue: q });
    await unary(stubs.first.producer, "EnqueueBatch", {
      jobs: [1, 2].map(() => ({ queue: q, payload: Buffer.from("{}") })),
    });
    const stream = duplex(stubs.first.worker, "Claim");
    const ask = { queues: [q], max_jobs: 5, max_wait: seconds(20), worker_id: "w-fleet" };
    expect((await stream.send(ask)).jobs).toHaveLength(2);
    // A cap of one while both run: the next poll's answer is MAX_RUNNING, not a 20 s park.
    await unary(stubs.second.admin, "SetQueueConcurrency", { queue: q, max_running: 1 });
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    const res = await stream.send(ask);
    stream.end();
    expect(res.throttled.map((v: { reason: string }) => v.reason)).toEqual(["THROTTLE_REASON_MAX_RUNNING"]);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});
