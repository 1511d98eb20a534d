import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { engines } from "../testing/services.js";
import { testClaimer } from "../testing/test-claimer.js";
import type { Claimer } from "./claimer.js";
import type { Handed } from "./hand-off.js";
import type { Poll, PollResult } from "./poll-loop.js";
import { WAKE_AT_ONCE, Waiters } from "./waiters.js";

const tick = () => new Promise((r) => setTimeout(r, 1));

describe("a wake-up reaches a few parked polls, the longest parked first", () => {
  /** `n` polls parked on `q`, each its wait's outcome: true once it returned. */
  function park(w: Waiters, q: string, n: number, deadlineMs = Date.now() + 60_000) {
    const signal = new AbortController().signal;
    return Array.from({ length: n }, () => {
      const armed = w.arm([q]);
      const state = { done: false, armed };
      armed.wait(deadlineMs, signal).then(() => {
        state.done = true;
      });
      return state;
    });
  }

  it(`wakes at most ${WAKE_AT_ONCE} parked polls per wake, in the order they parked`, async () => {
    const w = new Waiters();
    const polls = park(w, "q", WAKE_AT_ONCE * 3);
    w.wake("q");
    await tick();
    expect(polls.map((p) => p.done)).toEqual(polls.map((_, i) => i < WAKE_AT_ONCE));
    w.wake("q");
    await tick();
    expect(polls.filter((p) => p.done)).toHaveLength(2 * WAKE_AT_ONCE);
    // A woken poll that parks again queues up behind the others.
    for (const p of polls.slice(0, 2 * WAKE_AT_ONCE)) p.armed.disarm();
    expect(w.parked).toBe(WAKE_AT_ONCE);
  });

  it("wakes every poll armed and still looking, however many are parked", async () => {
    const w = new Waiters();
    park(w, "q", WAKE_AT_ONCE * 2);
    const looking = Array.from({ length: WAKE_AT_ONCE + 3 }, () => w.arm(["q"]));
    w.wake("q");
    // Each is woken before it waits: its wait returns at once, so it looks again.
    const signal = new AbortController().signal;
    const started = Date.now();
    await Promise.all(looking.map((a) => a.wait(Date.now() + 60_000, signal)));
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(looking.every((a) => a.woken())).toBe(true);
  });

  it("leaves the polls of other queues parked", async () => {
    const w = new Waiters();
    const other = park(w, "other", 2);
    const mine = park(w, "q", 2);
    w.wake("q");
    await tick();
    expect([...mine, ...other].map((p) => p.done)).toEqual([true, true, false, false]);
  });
});

for (const engine of engines) {
  describe.skipIf(!engine.available())(
    `parked polls and a backlog announced at once (${engine.name})`,
    () => {
      let handle: Awaited<ReturnType<(typeof engine)["open"]>>;
      let parts: ReturnType<typeof testClaimer>;
      let claimer: Claimer;
      let waiters: Waiters<Poll, Handed>;
      let round = 0;
      beforeAll(async () => {
        handle = await engine.open();
        parts = testClaimer(handle.db);
        ({ claimer, waiters } = parts);
      });
      afterAll(() => handle.close());

      const queue = () => `wake-${++round}`;
      async function parkPolls(q: string, n: number, signal: AbortSignal): Promise<Promise<PollResult>[]> {
        const before = waiters.parked;
        const answers = Array.from({ length: n }, (_, i) =>
          claimer.poll(
            { queues: [q], maxJobs: 1, maxWaitMs: 20_000, workerId: `w${i}`, leaseMs: 30_000 },
            signal,
          ),
        );
        for (let i = 0; waiters.parked < before + n; i++) {
          if (i > 2_000) throw new Error("the polls never parked");
          await tick();
        }
        return answers;
      }

      it("hands a backlog to every parked poll it needs: a full answer wakes the next ones", async () => {
        const q = queue();
        const polls = WAKE_AT_ONCE * 5;
        const answers = await parkPolls(q, polls, new AbortController().signal);
        // Enqueued behind the claimer's back, as another gateway or an application's transaction does:
        // one notification for the whole batch.
        const jobs = polls - 3;
        await parts.store.jobsEnqueue(Array.from({ length: jobs }, () => newJob(q)));
        waiters.wake(q);
        const claimed = await Promise.race([
          Promise.all(answers.slice(0, jobs)).then(() => "all"),
          new Promise((r) => setTimeout(() => r("timed out"), 10_000)),
        ]);
        expect(claimed).toBe("all");
        // Every job went to exactly one poll, and the three polls left (woken by the last full answers,
        // perhaps) park again.
        const got = (await Promise.all(answers.slice(0, jobs))).flatMap((r) => r.jobs.map((j) => j.id));
        expect(new Set(got).size).toBe(jobs);
        for (let i = 0; waiters.parked !== 3 && i < 2_000; i++) await tick();
        expect(waiters.parked).toBe(3);
      });

      it("passes a wake on when the woken poll goes away before it claims", async () => {
        const q = queue();
        const leaving = new AbortController();
        // The first WAKE_AT_ONCE parked go away as they are woken; the one behind them must get the job.
        const first = await parkPolls(q, WAKE_AT_ONCE, leaving.signal);
        const staying = await parkPolls(q, WAKE_AT_ONCE + 1, new AbortController().signal);
        await parts.store.jobsEnqueue([newJob(q)]);
        waiters.wake(q);
        leaving.abort();
        expect((await Promise.all(first)).every((r) => r.jobs.length === 0)).toBe(true);
        const winner = await Promise.race(
          staying.map((a) => a.then((r) => (r.jobs.length > 0 ? r : new Promise<never>(() => {})))),
        );
        expect(winner.jobs).toHaveLength(1);
      });
    },
  );
}
