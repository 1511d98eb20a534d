import { durationMs } from "@bufbuild/protobuf/wkt";
import type { QueueKeepsPolling, VerdictsHonoured } from "@taskq/sdk/conformance";
import { ThrottleReason } from "@taskq/sdk/proto";
import { ms, type TraceViews } from "../views.js";
import { type CheckContext, CLOCK_SLACK_MS, type Failures } from "./check.js";

/** Every verdict the gateway gave, with when. */
function verdicts(views: TraceViews) {
  return views.trace.of("claim_answer").flatMap((a) =>
    a.res.throttled.map((v) => ({
      t: a.t,
      queue: v.queue,
      reason: v.reason,
      retryAfterMs: v.retryAfter ? durationMs(v.retryAfter) : 0,
    })),
  );
}

/** The first poll naming `queue` that arrived after `t`. */
function nextPollOf(views: TraceViews, queue: string, t: number) {
  return views.polls.find((p) => p.t > t && p.req.queues.includes(queue));
}

/** When the worker stopped being expected to poll: the stop, else the end of the trace. */
const pollingEnd = (views: TraceViews) => views.stopT ?? views.endT;

export function verdictsHonoured({ views }: CheckContext, c: VerdictsHonoured): Failures {
  const late = c.lateAtMost ? durationMs(c.lateAtMost) : 1_000;
  const out: Failures = [];
  const all = verdicts(views);
  if (all.length === 0) return ["the gateway gave no verdict: the case does not exercise this check"];
  for (const v of all) {
    const reason = ThrottleReason[v.reason] ?? `unknown ${v.reason}`;
    const what = `verdict for ${v.queue} (${reason}, retry_after ${ms(v.retryAfterMs)}) at ${ms(v.t)}`;
    const next = nextPollOf(views, v.queue, v.t);
    if (next) {
      const gap = next.t - v.t;
      if (gap < v.retryAfterMs - CLOCK_SLACK_MS)
        out.push(`${what}: polled ${v.queue} again after only ${ms(gap)}`);
      else if (gap > v.retryAfterMs + late)
        out.push(
          `${what}: polled ${v.queue} again after ${ms(gap)}, want at most ${ms(v.retryAfterMs + late)}`,
        );
    } else if (pollingEnd(views) - v.t > v.retryAfterMs + late) {
      out.push(`${what}: never polled ${v.queue} again`);
    }
  }
  return out;
}

export function queueKeepsPolling({ views }: CheckContext, c: QueueKeepsPolling): Failures {
  const within = c.within ? durationMs(c.within) : 500;
  const out: Failures = [];
  for (const v of verdicts(views).filter((x) => x.queue !== c.queue)) {
    const next = nextPollOf(views, c.queue, v.t);
    const gap = (next?.t ?? Number.POSITIVE_INFINITY) - v.t;
    if (gap > within && pollingEnd(views) - v.t > within)
      out.push(
        `after a verdict for ${v.queue} at ${ms(v.t)}, ${c.queue} was not polled within ${ms(within)}`,
      );
  }
  return out;
}
