import type { Verdict } from "../gates/verdict.js";
import type { ClaimedJob, Settlement, SettleOutcome } from "../store/types.js";
import type { DrainedQueues } from "./drained.js";
import type { PollWaiters } from "./hand-off.js";

/**
 * One poll's life in the gateway, from its request to its answer: a loop through five named states.
 * Each state does one thing, and every move between them is checked against `NEXT`.
 *
 * ## ARMED
 * The poll is registered with the Waiters before it looks for work, so a job announced ready from here
 * on wakes it (none is lost between a look and a wait), and it is offered to enqueues on this gateway
 * (HandOff). A poll whose caller went away is answered empty. A Claim stream's first poll parks at once
 * when that stream's last claim found these queues drained and nothing was announced there since
 * (DrainedQueues); any other poll claims.
 *
 * ## CLAIMING
 * One claim round (`LoopParts.claim`: the gates, one claim statement, the gates after it). Jobs, a
 * verdict, settlements to report, a slotless gated queue or a caller gone: answered. Only throttles
 * whose next slot comes before the deadline: held. A flow key sent jobs back: armed again, so the jobs
 * behind them are looked at now (a few rounds at most). Nothing, before the deadline: parked.
 *
 * ## HELD
 * Waits until just before the throttle's slot (throttleSlotWithin) and claims again. A worker told
 * retry_after would come a few ms late each time, and a backlogged throttle would lose rate to that.
 *
 * ## PARKED
 * Waits for a wake (a job announced ready on one of its queues), its deadline, or its caller going
 * away; an on_idle_transition queue's poll also looks again every second (`LoopParts.parkUntil`). An
 * enqueue may take it meanwhile and hand it a claim made in the enqueue's own statement.
 *
 * ## ANSWERED
 * Done, with the answer. A poll that ends without claiming for a wake it took passes the wake on to
 * the next parked poll, so the job it announced is not left to the deadline.
 *
 * Held and parked polls leave on a hand-off with jobs or verdicts (answered), on abort (answered
 * empty), or otherwise (armed again: the next round claims).
 */
export type PollState = "ARMED" | "CLAIMING" | "HELD" | "PARKED" | "ANSWERED";

/** The moves each state may make. */
const NEXT: Readonly<Record<PollState, readonly PollState[]>> = {
  ARMED: ["CLAIMING", "PARKED", "ANSWERED"],
  CLAIMING: ["ARMED", "HELD", "PARKED", "ANSWERED"],
  HELD: ["ARMED", "ANSWERED"],
  PARKED: ["ARMED", "ANSWERED"],
  ANSWERED: [],
};

/** One validated poll. */
export interface Poll {
  queues: string[];
  maxJobs: number;
  /** 0 answers at once. */
  maxWaitMs: number;
  workerId: string;
  leaseMs: number;
  /**
   * Of maxJobs, how many the worker starts at once (its free handler slots); the rest would wait in its
   * buffer. Unset: all of them (the worker does not say). Caps the jobs of queues with a gate that
   * counts claimed jobs (see claimsAlone), which a buffered job would hold from other workers.
   */
  freeSlots?: number;
  /** Applied before the poll claims; a poll that carries any is never parked. */
  settlements?: readonly Settlement[];
}

export interface PollResult {
  jobs: ClaimedJob[];
  /** One per queue a gate declined. */
  verdicts: Verdict[];
  /** One per settlement of the poll, in order. */
  settled?: SettleOutcome[];
}

/** One claim round: a poll's result, and what it tells the loop. */
export interface Round extends PollResult {
  /** A flow key sent jobs back: others may be ready behind them. */
  sentBack: boolean;
  /** A gated queue was not claimed from for want of a free slot: the worker polls again when one frees. */
  slotless: boolean;
  settled: SettleOutcome[];
  /** It found the poll's queues drained (claimFoundDrained). */
  drained: boolean;
}

/** What the loop uses of the gateway. */
export interface LoopParts {
  /** Where polls park; its clock is the loop's. */
  waiters: PollWaiters;
  /** One claim round. */
  claim(p: Poll, settlements: readonly Settlement[]): Promise<Round>;
  /** Until when a poll that found nothing parks, at most `deadline`. */
  parkUntil(queues: readonly string[], deadline: number): Promise<number>;
  /** Counts a claim's result (begun at `startedMs`, performance.now); its verdicts only when answered. */
  count(res: PollResult, startedMs: number, answered: boolean): void;
  /** Told each state the poll enters (tests). */
  onState?: (state: PollState) => void;
}

/** Answers one poll: `drained` is what its Claim stream learned from its earlier polls, kept up to date. */
export function runPoll(parts: LoopParts, p: Poll, signal: AbortSignal, drained?: DrainedQueues) {
  return new PollLoop(parts, p, signal, drained).run();
}

type Armed = ReturnType<PollWaiters["arm"]>;

const EMPTY: PollResult = { jobs: [], verdicts: [] };

class PollLoop {
  #state: PollState = "ARMED";
  #armed: Armed | undefined;
  readonly #deadline: number;
  #settlements: readonly Settlement[];
  #flowRoundsLeft = MAX_FLOW_ROUNDS;
  #claimed = false;
  /** Set on entering PARKED or HELD: until when it waits. */
  #until = 0;

  constructor(
    private readonly parts: LoopParts,
    private readonly p: Poll,
    private readonly signal: AbortSignal,
    private readonly drained: DrainedQueues | undefined,
  ) {
    this.#deadline = parts.waiters.timers.now() + p.maxWaitMs;
    this.#settlements = p.settlements ?? [];
  }

  async run(): Promise<PollResult> {
    this.#armed = this.parts.waiters.arm(this.p.queues, this.p);
    this.parts.onState?.("ARMED");
    try {
      for (;;) {
        const answer = await this.#step();
        if (answer) return answer;
      }
    } finally {
      this.#armed?.disarm();
    }
  }

  /** Does the current state's work and moves on; the answer once ANSWERED. */
  #step(): Promise<PollResult | undefined> | PollResult | undefined {
    switch (this.#state) {
      case "ARMED":
        return this.#look();
      case "CLAIMING":
        return this.#claim();
      case "HELD":
      case "PARKED":
        return this.#wait();
      case "ANSWERED":
        throw new Error("poll loop: stepped past its answer");
    }
  }

  #to(next: PollState): void {
    if (!NEXT[this.#state].includes(next))
      throw new Error(`poll loop: no move from ${this.#state} to ${next}`);
    this.#state = next;
    this.parts.onState?.(next);
  }

  /** Enters ARMED again: a fresh registration, so a wake taken before is not taken again. */
  #rearm(): void {
    this.#to("ARMED");
    this.#armed?.disarm();
    this.#armed = this.parts.waiters.arm(this.p.queues, this.p);
  }

  #answer(res: PollResult): PollResult {
    this.#to("ANSWERED");
    return res;
  }

  /** Answers a caller gone away; a wake it took and did not claim for goes to the next parked poll. */
  #gone(): PollResult {
    if (this.#armed?.woken()) for (const q of this.p.queues) this.parts.waiters.wake(q);
    return this.#answer(EMPTY);
  }

  async #look(): Promise<PollResult | undefined> {
    if (this.signal.aborted) return this.#gone();
    if (!this.#claimed && (await this.#preParks())) return;
    this.#to("CLAIMING");
  }

  /**
   * Parks a Claim stream's poll before any claim when the stream's last claim found these queues
   * drained and no job was announced there since (read once armed: an announcement from here on wakes
   * it, one before changed the stamp). Once per poll: it claims after.
   */
  async #preParks(): Promise<boolean> {
    const { drained, p } = this;
    if (!drained || this.#settlements.length > 0 || p.maxWaitMs === 0) return false;
    if (!drained.holds(p.queues, this.parts.waiters.stamp(p.queues))) return false;
    this.#claimed = true; // from here on the poll claims when it looks
    await this.#park();
    return true;
  }

  async #park(): Promise<void> {
    this.#until = await this.parts.parkUntil(this.p.queues, this.#deadline);
    this.#to("PARKED");
  }

  async #claim(): Promise<PollResult | undefined> {
    const { parts, p, signal, drained } = this;
    // Taken before the claim, for a stream that keeps what its polls found (none for ClaimOnce).
    const stamp = drained ? parts.waiters.stamp(p.queues) : 0;
    const started = performance.now();
    const round = await parts.claim(p, this.#settlements);
    this.#claimed = true;
    const { sentBack, settled, drained: found, slotless, ...claimed } = round;
    drained?.found(p.queues, found ? stamp : undefined);
    const carried = this.#settlements.length > 0;
    const res = carried ? { ...claimed, settled } : claimed;
    const answerNow = carried || slotless;
    this.#settlements = [];
    const slotAt =
      res.jobs.length === 0 && !signal.aborted && !answerNow
        ? throttleSlotWithin(res.verdicts, this.#deadline, parts.waiters.timers.now())
        : null;
    parts.count(res, started, slotAt === null);
    // A full answer may have left more ready: as many parked polls again look (Waiters.wake).
    if (res.jobs.length >= p.maxJobs) for (const q of p.queues) parts.waiters.wake(q);
    if (slotAt !== null) {
      this.#until = slotAt;
      this.#to("HELD");
      return;
    }
    if (res.jobs.length > 0 || res.verdicts.length > 0 || signal.aborted || answerNow)
      return this.#answer(res);
    // Jobs a flow key sent back leave others ready behind them: look again now, skipping that key.
    if (sentBack && this.#flowRoundsLeft-- > 0) {
      this.#rearm();
      return;
    }
    if (parts.waiters.timers.now() >= this.#deadline) return this.#answer(res);
    await this.#park();
  }

  /** HELD or PARKED: waits until due, woken, handed an answer or gone. */
  async #wait(): Promise<PollResult | undefined> {
    const armed = this.#armed as Armed;
    await armed.wait(this.#until, this.signal);
    const handed = armed.answer();
    if (handed) {
      this.drained?.found(this.p.queues, handed.drainedStamp);
      this.parts.count(handed.result, handed.startedMs, true);
      const { result } = handed;
      if (result.jobs.length > 0 || result.verdicts.length > 0) return this.#answer(result);
    }
    if (this.signal.aborted) return this.#gone();
    this.#rearm();
  }
}

/**
 * When a poll declined only by THROTTLE should look again: a little before the soonest slot (the
 * limiter admits a take up to a few ms early for the slot's own time, so a held poll lands exactly on
 * it), or null when there is another verdict or the slot comes after the poll's deadline. A worker
 * told retry_after instead arrives a few ms late each time, and a backlogged throttle loses a share of
 * its rate to that.
 */
export function throttleSlotWithin(
  verdicts: readonly Verdict[],
  deadline: number,
  now: number,
): number | null {
  if (verdicts.length === 0 || verdicts.some((v) => v.reason !== "THROTTLE")) return null;
  const soonest = Math.min(...verdicts.map((v) => v.retryAfterMs));
  if (now + soonest >= deadline) return null;
  return now + Math.max(1, soonest - THROTTLE_SLOT_LEAD_MS);
}

/** How much before a slot a held poll looks again, ms (within the limiter's early window). */
const THROTTLE_SLOT_LEAD_MS = 5;

/** Claim rounds per poll when flow keys send jobs back. */
export const MAX_FLOW_ROUNDS = 4;
