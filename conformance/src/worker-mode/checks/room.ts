import { type LeaseView, ms, type TraceViews } from "../views.js";
import type { Failures } from "./check.js";

// What a worker holds, and so how many jobs it may still ask for: shared by `concurrency` (room is
// the worker's slots plus its prefetch) and `held` (room is the bound the case sets).

/** When the worker stopped holding the lease: its first settle sent (on a poll or not), or its loss. */
export function heldUntil(l: LeaseView): number {
  return Math.min(l.endT ?? Number.POSITIVE_INFINITY, l.carriedT ?? Number.POSITIVE_INFINITY);
}

/** Each lease as an interval: held from the answer that handed it out until heldUntil. */
export function heldLeases(views: TraceViews): Array<{ key: string; from: number; until: number }> {
  return [...views.leases.values()].map((l) => ({ key: l.key, from: l.handedT, until: heldUntil(l) }));
}

// A worker that frees a slot sends the settle and the poll that refills the slot at once, on two
// streams: on a loaded machine the settle can reach the gateway tens of ms after the poll (25 ms was
// seen to flake). A worker that asks for a busy slot holds it far longer: the cases' jobs run 200 ms.
const SETTLE_CROSSING_MS = 100;

/**
 * The first poll that asked for more jobs than `room` less the jobs the worker held when it sent it: a
 * worker asks for its free slots, not its concurrency.
 */
export function overAsked(views: TraceViews, room: number): Failures {
  const leases = heldLeases(views);
  for (const p of views.polls) {
    const n = leases.filter((l) => l.from < p.t && l.until > p.t + SETTLE_CROSSING_MS).length;
    if (n + p.req.maxJobs > room)
      return [
        `a poll at ${ms(p.t)} asked for ${p.req.maxJobs} jobs while the worker held ${n}, more than ${room} in all`,
      ];
  }
  return [];
}
