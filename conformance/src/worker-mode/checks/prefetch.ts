import { durationMs } from "@bufbuild/protobuf/wkt";
import { HandlerEventKind } from "@taskq/sdk/conformance";
import { ThrottleReason } from "@taskq/sdk/proto";
import { ms, type TraceViews } from "../views.js";
import { type CheckContext, type CheckOf, type Failures, ORDER_SLACK_MS } from "./check.js";
import { heldLeases, heldUntil, overAsked } from "./room.js";

// Checks of a worker with prefetch: it holds claimed jobs ahead of a free handler slot, and gives back
// (Released) the ones it has not started when their queue is paused or its breaker opens.

// A handler's STARTED reaches the runner on the program's stdout, not on the wire: on a loaded machine
// it can come tens of ms after a poll the worker sent once the handler had started (seen: 45 ms). A job
// that a worker wrongly starts from its buffer waits for a slot, which the cases keep busy far longer.
const HANDLER_EVENT_LAG_MS = 250;

/** Verdicts that make a prefetching worker give back its unstarted jobs of the queue. */
const GIVE_BACK = new Set<number>([ThrottleReason.PAUSED, ThrottleReason.BREAKER_OPEN]);

/** When each lease's handler first reported STARTED. */
function starts(views: TraceViews): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of views.trace.of("handler")) {
    const key = `${e.event.jobId}/${e.event.attempt}`;
    if (e.event.kind === HandlerEventKind.STARTED && !out.has(key)) out.set(key, e.t);
  }
  return out;
}

export function releasedOnVerdict({ views }: CheckContext, c: CheckOf<"releasedOnVerdict">): Failures {
  const within = c.within ? durationMs(c.within) : 500;
  const started = starts(views);
  const out: Failures = [];
  let exercised = 0;
  for (const a of views.trace.of("claim_answer"))
    for (const v of a.res.throttled) {
      if (!GIVE_BACK.has(v.reason)) continue;
      for (const l of views.leases.values()) {
        if (l.queue !== v.queue || l.handedT >= a.t || heldUntil(l) <= a.t) continue;
        // A handler that started as the verdict travelled to the worker, or whose start was reported
        // late, was not in its buffer.
        const s = started.get(l.key);
        if (s !== undefined && s <= a.t + HANDLER_EVENT_LAG_MS) continue;
        exercised++;
        const what = `job ${l.key}, held unstarted at the ${ThrottleReason[v.reason]} verdict for ${v.queue} at ${ms(a.t)}`;
        if (s !== undefined) out.push(`${what}: its handler started at ${ms(s)}`);
        const first = l.settles[0];
        if (!first) out.push(`${what}: never given back (no settle sent)`);
        else if (first.settlement.outcome.case !== "released")
          out.push(`${what}: settled ${first.settlement.outcome.case ?? "with nothing"}, want released`);
        else if (first.t - a.t > within)
          out.push(`${what}: released ${ms(first.t - a.t)} after the verdict, want within ${ms(within)}`);
      }
    }
  if (exercised === 0)
    return [
      "no PAUSED or BREAKER_OPEN verdict came while the worker held an unstarted job: the case does not exercise this check",
    ];
  return out;
}

/**
 * Jobs held at every instant stay within the bound, and so does each poll's ask: a job counts from the
 * answer that handed it out until its settle is sent (running, buffered, or finished), so a worker that
 * forgets its buffered jobs when it sizes a poll shows as soon as a poll goes out with a job buffered.
 */
export function held({ views, case: k }: CheckContext, c: CheckOf<"held">): Failures {
  const leases = heldLeases(views);
  const out: Failures = [...overAsked(views, c.atMost), ...(c.statesSlots ? unstatedSlots(views, k) : [])];
  let peak = 0;
  // The count only grows when an answer hands jobs out: counting at each answer counts at every instant.
  for (const a of views.trace.of("claim_answer")) {
    const n = leases.filter((l) => l.from <= a.t && l.until > a.t + ORDER_SLACK_MS).length;
    if (n > c.atMost && peak <= c.atMost)
      out.push(`the worker held ${n} jobs at once at ${ms(a.t)}, more than ${c.atMost}`);
    peak = Math.max(peak, n);
  }
  if (peak < c.peakAtLeast)
    out.push(`the worker held at most ${peak} jobs at once, want ${c.peakAtLeast} (buffer left empty)`);
  return out;
}

/**
 * The first poll that does not state the worker's concurrency and prefetch (at most the case's), and
 * the first that only tops up the buffer (max_jobs <= prefetch) but waits: the gateway reads
 * max_jobs - prefetch as the free handler slots, and answers a top-up at once when it finds nothing.
 */
function unstatedSlots(views: TraceViews, k: CheckContext["case"]): Failures {
  const concurrency = k.worker?.concurrency ?? 0;
  const prefetch = k.worker?.prefetch ?? 0;
  const waitMs = (p: TraceViews["polls"][number]) => (p.req.maxWait ? durationMs(p.req.maxWait) : 0);
  const out: Failures = [];
  const unstated = views.polls.find((p) => p.req.concurrency !== concurrency || p.req.prefetch > prefetch);
  if (unstated)
    out.push(
      `a poll at ${ms(unstated.t)} stated concurrency ${unstated.req.concurrency} and prefetch ${unstated.req.prefetch}, want concurrency ${concurrency} and prefetch at most ${prefetch}`,
    );
  const waits = views.polls.find((p) => p.req.maxJobs <= p.req.prefetch && waitMs(p) > 0);
  if (waits)
    out.push(
      `a poll at ${ms(waits.t)} with no free handler slot (max_jobs ${waits.req.maxJobs}, prefetch ${waits.req.prefetch}) asked to wait ${ms(waitMs(waits))}, want max_wait 0`,
    );
  return out;
}
