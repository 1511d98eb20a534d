import type { CronSchedule } from "./cron.js";

/** What the planner needs of a stored schedule. */
export interface PlanInput {
  cron: CronSchedule;
  /** The schedule's smear offset, ms, in [0, smear): see taskq.schedules.smear_offset_ms. */
  smearOffsetMs: number;
  missedPolicy: "skip" | "fire_once";
  /** Every slot at or before this is done. */
  lastSlot: Date;
}

export interface Firing {
  /** The cron slot, the at-most-once key. */
  slot: Date;
  /** When the job becomes ready: slot + smear offset. */
  runAt: Date;
}

export interface Plan {
  /** Slots to fire now, oldest first. */
  fire: Firing[];
  /** Missed slots to pass over without firing (the skip policy): mark done up to here. */
  skipTo: Date | null;
}

export interface PlanOptions {
  /**
   * A slot later than this (ms) is missed: no gateway ran (or led) in time. Younger slots are only late
   * (a leader hand-over, a slow tick) and all fire.
   */
  graceMs: number;
  /** Most slots of one schedule fired per tick; the rest wait for the next tick. */
  maxFirings: number;
}

/**
 * The slots of one schedule due at `now`. Slots within the grace window each fire once. Older ones
 * were missed: the skip policy passes over them, fire_once fires the latest of them once.
 */
export function planFirings(s: PlanInput, now: Date, opts: PlanOptions): Plan {
  const fire: Firing[] = [];
  const at = (slot: Date): Firing => ({ slot, runAt: new Date(slot.getTime() + s.smearOffsetMs) });
  const cutoff = new Date(now.getTime() - opts.graceMs);
  let from = s.lastSlot;
  let skipTo: Date | null = null;
  if (from < cutoff) {
    const missed = s.cron.latestAtOrBefore(cutoff);
    if (missed && missed > s.lastSlot) {
      if (s.missedPolicy === "fire_once") fire.push(at(missed));
      else skipTo = missed;
    }
    from = cutoff;
  }
  for (let slot = s.cron.next(from); slot && slot <= now && fire.length < opts.maxFirings; ) {
    fire.push(at(slot));
    slot = s.cron.next(slot);
  }
  return { fire, skipTo: fire.length > 0 ? null : skipTo };
}

/** The schedule's next firing after `t` (slot and run time), or null when it never fires again. */
export function nextFiring(s: Pick<PlanInput, "cron" | "smearOffsetMs">, t: Date): Firing | null {
  const slot = s.cron.next(t);
  return slot ? { slot, runAt: new Date(slot.getTime() + s.smearOffsetMs) } : null;
}
