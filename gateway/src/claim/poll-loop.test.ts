import { describe, expect, it } from "vitest";
import type { Verdict } from "../gates/verdict.js";
import type { ClaimedJob, Settlement } from "../store/types.js";
import { ManualTimers } from "../testing/manual-timers.js";
import { DrainedQueues } from "./drained.js";
import type { Handed } from "./hand-off.js";
import {
  type LoopParts,
  MAX_FLOW_ROUNDS,
  type Poll,
  type PollState,
  type Round,
  runPoll,
} from "./poll-loop.js";
import { WAKE_AT_ONCE, Waiters } from "./waiters.js";

// The loop on its own: claim rounds are answered by the test when it says, on a clock that moves only
// when the test moves it. The claim path against a real store is covered beside (hand-off, drained,
// settle-on-poll and the gate tests).

const MAX_WAIT_MS = 10_000;

function job(id: number): ClaimedJob {
  return {
    id: String(id),
    queue: "q",
    attempt: 1,
    maxAttempts: 3,
    leaseDeadlineMs: 0,
    payload: new Uint8Array(),
    contentType: "application/json",
    priority: 0,
    flowKey: null,
    enqueuedAtMs: 0,
    headers: {},
  };
}

function round(r: Partial<Omit<Round, "jobs">> & { jobs?: number } = {}): Round {
  const { jobs = 0, ...rest } = r;
  return {
    verdicts: [],
    sentBack: false,
    slotless: false,
    settled: [],
    drained: false,
    ...rest,
    jobs: Array.from({ length: jobs }, (_, i) => job(i + 1)),
  };
}

const throttled = (retryAfterMs: number): Verdict => ({ queue: "q", reason: "THROTTLE", retryAfterMs });

/** A loop whose claim rounds wait for `answer`, its states, and the clock. */
function loop(park?: { everyMs: number }) {
  const timers = new ManualTimers();
  const waiters = new Waiters<Poll, Handed>(timers);
  const states: PollState[] = [];
  const pending: ((r: Round) => void)[] = [];
  const claimed: (readonly Settlement[])[] = [];
  const counted: boolean[] = [];
  const parts: LoopParts = {
    waiters,
    claim: (_p, settlements) => {
      claimed.push(settlements);
      return new Promise((resolve) => pending.push(resolve));
    },
    parkUntil: async (_queues, deadline) =>
      park ? Math.min(deadline, timers.now() + park.everyMs) : deadline,
    count: (_res, _started, answered) => counted.push(answered),
    onState: (s) => states.push(s),
  };
  const abort = new AbortController();
  const poll = (p: Partial<Poll> = {}, drained?: DrainedQueues) =>
    runPoll(
      parts,
      { queues: ["q"], maxJobs: 10, maxWaitMs: MAX_WAIT_MS, workerId: "w", leaseMs: 30_000, ...p },
      abort.signal,
      drained,
    );
  /** Answers the claim round in flight, once the loop has reached it. */
  const answer = async (r: Round) => {
    await settle();
    const resolve = pending.shift();
    if (!resolve) throw new Error("no claim round in flight");
    resolve(r);
    await settle();
  };
  /** A poll whose first claim round gets `r`, and its answer. */
  const pollOnce = async (r: Round, p?: Partial<Poll>, drained?: DrainedQueues) => {
    const res = poll(p, drained);
    await answer(r);
    return res;
  };
  return {
    timers,
    waiters,
    states,
    claimed,
    counted,
    abort,
    poll,
    answer,
    pollOnce,
    inFlight: () => pending.length,
  };
}

/** Lets the loop run up to its next wait (the clock does not move). */
async function settle() {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/** A drained stream: its last claim found q drained at the waiters' current stamp. */
function drainedAt(waiters: Waiters<Poll, Handed>): DrainedQueues {
  const d = new DrainedQueues();
  d.found(["q"], waiters.stamp(["q"]));
  return d;
}

describe("a poll's loop", () => {
  it("ARMED → CLAIMING → ANSWERED: a round with jobs is the answer", async () => {
    const l = loop();
    expect((await l.pollOnce(round({ jobs: 2 }))).jobs).toHaveLength(2);
    expect(l.states).toEqual(["ARMED", "CLAIMING", "ANSWERED"]);
    expect(l.waiters.size).toBe(0);
  });

  it("answers a verdict, settlements it carried and a slotless round at once, without parking", async () => {
    for (const [r, p] of [
      [round({ verdicts: [{ queue: "q", reason: "PAUSED", retryAfterMs: 1000 }] }), {}],
      [round(), { settlements: [{ jobId: "1", leaseToken: "t", outcome: { case: "success" } }] }],
      [round({ slotless: true }), {}],
    ] as [Round, Partial<Poll>][]) {
      const l = loop();
      await l.pollOnce(r, p);
      expect(l.states).toEqual(["ARMED", "CLAIMING", "ANSWERED"]);
    }
  });

  it("CLAIMING → PARKED → ARMED when woken: a wake while parked claims again at once", async () => {
    const l = loop();
    const res = l.poll();
    await l.answer(round());
    expect(l.states.at(-1)).toBe("PARKED");
    l.waiters.wake("q");
    await l.answer(round({ jobs: 1 }));
    expect((await res).jobs).toHaveLength(1);
    expect(l.states).toEqual(["ARMED", "CLAIMING", "PARKED", "ARMED", "CLAIMING", "ANSWERED"]);
  });

  it("PARKED until the deadline, then one last claim, answered empty when it finds nothing", async () => {
    const l = loop();
    const res = l.poll();
    await l.answer(round());
    l.timers.advance(MAX_WAIT_MS - 1);
    await settle();
    expect(l.inFlight()).toBe(0);
    expect(l.states.at(-1)).toBe("PARKED");
    l.timers.advance(1);
    await l.answer(round());
    expect(await res).toEqual({ jobs: [], verdicts: [] });
    expect(l.states).toEqual(["ARMED", "CLAIMING", "PARKED", "ARMED", "CLAIMING", "ANSWERED"]);
  });

  it("parks an on_idle_transition poll a second at a time (parkUntil), claiming between", async () => {
    const l = loop({ everyMs: 1000 });
    const res = l.poll({ maxWaitMs: 2500 });
    await l.answer(round());
    l.timers.advance(1000);
    await l.answer(round());
    l.timers.advance(1000);
    await l.answer(round());
    l.timers.advance(500);
    await l.answer(round());
    await res;
    expect(l.claimed).toHaveLength(4);
    expect(l.states.filter((s) => s === "PARKED")).toHaveLength(3);
  });

  it("CLAIMING → HELD until just before a throttle's slot, then claims again; its verdict is not counted", async () => {
    const l = loop();
    const res = l.poll();
    await l.answer(round({ verdicts: [throttled(100)] }));
    expect(l.states.at(-1)).toBe("HELD");
    expect(l.counted).toEqual([false]);
    l.timers.advance(94); // the slot's lead: 5 ms before it
    await settle();
    expect(l.inFlight()).toBe(0);
    l.timers.advance(1);
    await l.answer(round({ jobs: 1 }));
    expect((await res).jobs).toHaveLength(1);
    expect(l.states).toEqual(["ARMED", "CLAIMING", "HELD", "ARMED", "CLAIMING", "ANSWERED"]);
    expect(l.counted).toEqual([false, true]);
  });

  it("answers a throttle verdict whose slot comes after the deadline, or with another verdict beside it", async () => {
    for (const verdicts of [
      [throttled(MAX_WAIT_MS)],
      [throttled(10), { queue: "q", reason: "MAX_RUNNING", retryAfterMs: 50 } as Verdict],
    ]) {
      const l = loop();
      expect((await l.pollOnce(round({ verdicts }))).verdicts).toEqual(verdicts);
      expect(l.states).toEqual(["ARMED", "CLAIMING", "ANSWERED"]);
    }
  });

  it(`CLAIMING → ARMED when a flow key sent jobs back, at most ${MAX_FLOW_ROUNDS} times, then parks`, async () => {
    const l = loop();
    l.poll();
    for (let i = 0; i <= MAX_FLOW_ROUNDS; i++) await l.answer(round({ sentBack: true }));
    expect(l.claimed).toHaveLength(MAX_FLOW_ROUNDS + 1);
    expect(l.states.at(-1)).toBe("PARKED");
    expect(l.states.filter((s) => s === "CLAIMING")).toHaveLength(MAX_FLOW_ROUNDS + 1);
    l.abort.abort();
  });

  it("ARMED → PARKED before any claim on a drained stream, then claims once woken", async () => {
    const l = loop();
    const res = l.poll({}, drainedAt(l.waiters));
    await settle();
    expect(l.states).toEqual(["ARMED", "PARKED"]);
    expect(l.inFlight()).toBe(0);
    l.waiters.wake("q");
    await l.answer(round({ jobs: 1 }));
    await res;
    expect(l.states).toEqual(["ARMED", "PARKED", "ARMED", "CLAIMING", "ANSWERED"]);
  });

  it("parks a drained stream's poll once: at its deadline it claims, then answers", async () => {
    const l = loop();
    const res = l.poll({}, drainedAt(l.waiters));
    await settle();
    l.timers.advance(MAX_WAIT_MS);
    await l.answer(round());
    expect(await res).toEqual({ jobs: [], verdicts: [] });
    expect(l.states).toEqual(["ARMED", "PARKED", "ARMED", "CLAIMING", "ANSWERED"]);
  });

  it("claims at once on a drained stream when a job was announced there since", async () => {
    const l = loop();
    const drained = drainedAt(l.waiters);
    l.waiters.wake("q");
    await l.pollOnce(round({ jobs: 1 }), {}, drained);
    expect(l.states).toEqual(["ARMED", "CLAIMING", "ANSWERED"]);
  });

  it("PARKED → ANSWERED with what an enqueue handed it; PARKED → ARMED when handed nothing", async () => {
    const l = loop();
    const res = l.poll();
    await l.answer(round());
    const give = (jobs: number) => {
      const [taken] = l.waiters.take(["q"], () => "take");
      taken?.give({
        result: { jobs: Array.from({ length: jobs }, (_, i) => job(i)), verdicts: [] },
        startedMs: 0,
      });
    };
    give(0);
    await settle();
    expect(l.states.slice(-2)).toEqual(["ARMED", "CLAIMING"]);
    await l.answer(round());
    give(3);
    expect((await res).jobs).toHaveLength(3);
    expect(l.states.slice(-2)).toEqual(["PARKED", "ANSWERED"]);
  });

  it("a wake racing a claim: the claim found nothing, so it parks not at all and claims again", async () => {
    const l = loop();
    const res = l.poll();
    await settle();
    l.waiters.wake("q"); // during the round
    await l.answer(round());
    expect(l.states).toEqual(["ARMED", "CLAIMING", "PARKED", "ARMED", "CLAIMING"]);
    await l.answer(round({ jobs: 1 }));
    await res;
  });

  it("a deadline during a claim: a round that finds nothing is answered, not parked", async () => {
    const l = loop();
    const res = l.poll();
    await settle();
    l.timers.advance(MAX_WAIT_MS);
    await l.answer(round());
    await res;
    expect(l.states).toEqual(["ARMED", "CLAIMING", "ANSWERED"]);
    expect(l.timers.pending).toBe(0);
  });

  it("a full answer wakes polls parked on its queues: more may be ready", async () => {
    const l = loop();
    const parked = l.waiters.arm(["q"]);
    const woken = parked.wait(l.timers.now() + MAX_WAIT_MS, new AbortController().signal);
    await l.pollOnce(round({ jobs: 2 }), { maxJobs: 2 });
    expect(parked.woken()).toBe(true);
    await woken;
  });
});

describe("a poll's loop, its caller gone", () => {
  it("in ARMED: answered empty, no claim", async () => {
    const l = loop();
    l.abort.abort();
    expect(await l.poll()).toEqual({ jobs: [], verdicts: [] });
    expect(l.claimed).toHaveLength(0);
    expect(l.states).toEqual(["ARMED", "ANSWERED"]);
  });

  it("in CLAIMING: answered with the round's result (the stream gives back what it cannot deliver)", async () => {
    const l = loop();
    const res = l.poll();
    await settle();
    l.abort.abort();
    await l.answer(round());
    await res;
    expect(l.states).toEqual(["ARMED", "CLAIMING", "ANSWERED"]);
    expect(l.waiters.size).toBe(0);
  });

  it("in HELD: answered empty, no second claim", async () => {
    const l = loop();
    const res = l.poll();
    await l.answer(round({ verdicts: [throttled(100)] }));
    l.abort.abort();
    expect(await res).toEqual({ jobs: [], verdicts: [] });
    expect(l.claimed).toHaveLength(1);
    expect(l.states).toEqual(["ARMED", "CLAIMING", "HELD", "ANSWERED"]);
    expect(l.timers.pending).toBe(0);
  });

  it("in PARKED: answered empty, its timer and registration gone", async () => {
    const l = loop();
    const res = l.poll();
    await l.answer(round());
    l.abort.abort();
    expect(await res).toEqual({ jobs: [], verdicts: [] });
    expect(l.states).toEqual(["ARMED", "CLAIMING", "PARKED", "ANSWERED"]);
    expect([l.timers.pending, l.waiters.size]).toEqual([0, 0]);
  });

  it("after taking a wake it did not claim for: passes the wake on to the next parked polls", async () => {
    const l = loop();
    const res = l.poll({}, drainedAt(l.waiters)); // parked before any claim
    await settle();
    // Parked after it: one wake reaches it and the WAKE_AT_ONCE - 1 parked next, not the last.
    const others = Array.from({ length: WAKE_AT_ONCE }, () => l.waiters.arm(["q"]));
    for (const o of others) o.wait(l.timers.now() + MAX_WAIT_MS, new AbortController().signal);
    l.waiters.wake("q");
    expect(others.map((o) => o.woken())).toEqual(others.map((_, i) => i < WAKE_AT_ONCE - 1));
    l.abort.abort(); // gone before it claims
    await res;
    expect(l.claimed).toHaveLength(0);
    expect(others.at(-1)?.woken()).toBe(true);
  });
});
