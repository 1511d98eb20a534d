// Limits measured from the workers' side: the most claims of one queue that started within any window
// of `windowMs`, over the claims logged between two instants. A limit of N per second holds when no
// 1-second window saw more than N (+1 for delivery jitter at the window's edges).
import type { WorkerEvent } from "./oracle.js";

/** Claim start times (epoch ms) of the events in [fromMs, toMs), sorted. */
export function claimTimes(events: readonly WorkerEvent[], fromMs: number, toMs: number): number[] {
  return events
    .filter((e) => e.kind === "claimed" && e.atMs >= fromMs && e.atMs < toMs)
    .map((e) => e.atMs)
    .sort((a, b) => a - b);
}

/** The largest number of `times` (sorted) within any window [t, t + windowMs). */
export function busiestWindow(times: readonly number[], windowMs: number): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while ((times[end] as number) - (times[start] as number) >= windowMs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}
