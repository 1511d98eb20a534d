import { durationMs } from "@bufbuild/protobuf/wkt";
import {
  type Concurrency,
  HandlerEventKind,
  type LeaseRequested,
  type PollRate,
} from "@taskq/sdk/conformance";
import { leaseKey } from "../trace.js";
import { ms } from "../views.js";
import type { CheckContext, Failures } from "./check.js";
import { overAsked } from "./room.js";

export function concurrency({ views, case: k }: CheckContext, c: Concurrency): Failures {
  // Each poll asks for the free slots (and, with prefetch, the buffer's room) at the time it is sent:
  // a worker that always asks for its concurrency over-claims as soon as jobs end at different times.
  const out: Failures = overAsked(views, c.atMost + (k.worker?.prefetch ?? 0));
  const running = new Set<string>();
  let peak = 0;
  for (const e of views.trace.of("handler")) {
    const key = leaseKey(e.event.jobId, e.event.attempt);
    if (e.event.kind === HandlerEventKind.STARTED) running.add(key);
    else running.delete(key);
    if (running.size > c.atMost && peak <= c.atMost)
      out.push(`${running.size} handlers ran at once at ${ms(e.t)}, more than ${c.atMost}`);
    peak = Math.max(peak, running.size);
  }
  if (peak < c.peakAtLeast)
    out.push(`at most ${peak} handlers ran at once, want ${c.peakAtLeast} (slots left idle)`);
  return out;
}

export function pollRate({ views }: CheckContext, c: PollRate): Failures {
  const window = c.window ? durationMs(c.window) : 1_000;
  const until = views.stopT ?? views.endT;
  const ts = views.polls.map((p) => p.t).filter((t) => t <= until);
  let worst = 0;
  let worstAt = 0;
  for (let i = 0, j = 0; i < ts.length; i++) {
    while ((ts[i] as number) - (ts[j] as number) > window) j++;
    if (i - j + 1 > worst) {
      worst = i - j + 1;
      worstAt = ts[j] as number;
    }
  }
  return worst > c.atMost
    ? [`${worst} polls within ${ms(window)} from ${ms(worstAt)}, want at most ${c.atMost}`]
    : [];
}

export function workerIdentity({ views, case: k }: CheckContext): Failures {
  const want = k.worker?.workerId ?? "";
  const ids = new Set(views.polls.map((p) => p.req.workerId));
  if (views.polls.length === 0) return ["the worker never polled"];
  if (ids.has("")) return ["a poll carried no worker_id"];
  if (want && (ids.size !== 1 || !ids.has(want)))
    return [`polls carried worker_id ${[...ids].join(", ")}, want ${want}`];
  return [];
}

export function leaseRequested({ views }: CheckContext, c: LeaseRequested): Failures {
  const want = c.lease ? durationMs(c.lease) : 0;
  if (views.polls.length === 0) return ["the worker never polled"];
  const bad = views.polls.find((p) => (p.req.leaseDuration ? durationMs(p.req.leaseDuration) : 0) !== want);
  if (!bad) return [];
  const got = bad.req.leaseDuration ? ms(durationMs(bad.req.leaseDuration)) : "unset";
  return [`a poll at ${ms(bad.t)} asked for lease_duration ${got}, want ${ms(want)}`];
}
