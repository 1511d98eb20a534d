import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../store/db.js";
import { QueueStore } from "../store/queue-store.js";
import { READY_CHANNEL, Store } from "../store/store.js";
import { duplex, type GrpcStubs, grpcStubs, seconds, unary } from "../testing/grpc-stubs.js";
import { newJob } from "../testing/new-job.js";
import { engines, haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { IDLE_TRANSITION_RECHECK_MS } from "./claimer.js";

const job = (queue: string) => newJob(queue, { maxAttempts: 3 });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const engine of engines) {
  describe.skipIf(!engine.available())(`notify_mode NOTIFY counts on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let unlisten: () => Promise<void>;
    const heard = new Map<string, number>();
    beforeAll(async () => {
      ({ db, close } = await engine.open());
      unlisten = await db.listen([READY_CHANNEL], (_channel, queue) => {
        heard.set(queue, (heard.get(queue) ?? 0) + 1);
      });
    });
    afterAll(async () => {
      await unlisten();
      await close();
    });

    it("under steady enqueues into a busy queue, on_idle_transition sends far fewer NOTIFYs than always", async () => {
      const store = new Store(db);
      const queues = new QueueStore(db);
      await queues.queueEnsure("busy-always", { notify_mode: "always" }, "test");
      await queues.queueEnsure("busy-idle", { notify_mode: "on_idle_transition" }, "test");
      for (const q of ["busy-always", "busy-idle"]) {
        // The first enqueue finds the queue idle; then a worker keeps taking one job per ten enqueued,
        // so the queue stays busy (never empty).
        for (let i = 0; i < 200; i++) {
          await store.jobsEnqueue([job(q)]);
          if (i % 10 === 9) await store.jobsClaim({ queues: [q], limit: 1, leaseMs: 60_000, workerId: "w" });
        }
      }
      await sleep(300);
      expect(heard.get("busy-always")).toBe(200);
      expect(heard.get("busy-idle")).toBe(1);

      // Drained, the queue is idle again: the next enqueue notifies.
      await store.jobsClaim({ queues: ["busy-idle"], limit: 1000, leaseMs: 60_000, workerId: "w" });
      await store.jobsEnqueue([job("busy-idle"), job("busy-idle")]);
      await store.jobsEnqueue([job("busy-idle")]);
      await sleep(300);
      expect(heard.get("busy-idle")).toBe(2);
    });
  });
}

const gatewayEngines = [
  { engine: "pglite" as const, available: true },
  { engine: "postgres" as const, available: haveService("postgres") && haveService("redis") },
];

for (const { engine, available } of gatewayEngines) {
  describe.skipIf(!available)(`idle workers wake promptly in both notify modes (${engine})`, () => {
    let gw: TestGateway;
    let stubs: GrpcStubs;
    beforeAll(async () => {
      gw = await startTestGateway({ engine });
      stubs = grpcStubs(gw.grpcUrl);
      const queues = new QueueStore(gw.store.db);
      await queues.queueEnsure("wake-always", { notify_mode: "always" }, "test");
      await queues.queueEnsure("wake-idle", { notify_mode: "on_idle_transition" }, "test");
    });
    afterAll(async () => {
      stubs.close();
      await gw.stop();
    });

    /** How long a parked poll on `queue` takes to get a job that `add` makes ready 300 ms in. */
    const wakeAfter = async (queue: string, add: () => Promise<unknown>) => {
      const claim = duplex(stubs.worker, "Claim");
      const t0 = Date.now();
      const answer = claim.send({ queues: [queue], max_jobs: 1, max_wait: seconds(8) });
      await sleep(300);
      await add();
      const res = await answer;
      claim.end();
      return { jobs: res.jobs.length, ms: Date.now() - t0 - 300 };
    };
    const enqueue = (queue: string) => () =>
      unary(stubs.producer, "Enqueue", { job: { queue, payload: Buffer.from("{}") } });

    it("an enqueue into an idle queue wakes a parked poll at once, in both modes", async () => {
      for (const q of ["wake-always", "wake-idle"]) {
        const r = await wakeAfter(q, enqueue(q));
        expect(r.jobs).toBe(1);
        expect(r.ms).toBeLessThan(IDLE_TRANSITION_RECHECK_MS);
      }
    });

    it("a ready job that sent no NOTIFY still reaches a poll parked on an on_idle_transition queue", async () => {
      // Inserted behind the gateway's back (no NOTIFY): what an enqueue that saw a ready job, claimed
      // a moment later by another worker, leaves behind.
      const silently = (queue: string) => () =>
        gw.store.db.query(
          {
            name: "",
            text: `insert into taskq.jobs (queue, state, payload, max_attempts, run_at, enqueued_at)
                   values ($1, 'queued', '', 3, now(), now())`,
          },
          [queue],
        );
      const r = await wakeAfter("wake-idle", silently("wake-idle"));
      expect(r.jobs).toBe(1);
      expect(r.ms).toBeLessThan(IDLE_TRANSITION_RECHECK_MS + 1500);
      // An always-mode poll relies on the NOTIFY alone: it sleeps on until max_wait (and its last look
      // then finds the job).
      const claim = duplex(stubs.worker, "Claim");
      const answer = claim.send({ queues: ["wake-always"], max_jobs: 1, max_wait: seconds(2.5) });
      await sleep(300);
      await silently("wake-always")();
      const t0 = Date.now();
      const res = await answer;
      claim.end();
      expect(Date.now() - t0).toBeGreaterThan(1500);
      expect(res.jobs).toHaveLength(1);
    });
  });
}
