import { durationMs } from "@bufbuild/protobuf/wkt";
import { type HandlerAborted, HandlerEventKind, type HeartbeatsInTime } from "@taskq/sdk/conformance";
import { type LeaseView, ms } from "../views.js";
import { type CheckContext, type Failures, ORDER_SLACK_MS } from "./check.js";

/** The lease deadline in effect at `t`: the latest one answered before `t`. */
function deadlineAt(l: LeaseView, t: number): number {
  let d = l.deadlines[0]?.deadlineT ?? l.handedT;
  for (const x of l.deadlines) if (x.fromT < t) d = x.deadlineT;
  return d;
}

export function heartbeatsInTime({ views }: CheckContext, c: HeartbeatsInTime): Failures {
  const margin = c.margin ? durationMs(c.margin) : 0;
  const out: Failures = [];
  for (const l of views.leases.values()) {
    const heldUntil = l.endT ?? views.endT;
    const checkpoints = [...l.beatTs.filter((t) => t < heldUntil), heldUntil];
    for (const t of checkpoints) {
      const d = deadlineAt(l, t);
      if (t > d - margin) {
        const at = t === heldUntil ? "while still held" : "by the next heartbeat";
        out.push(`lease ${l.key} reached its deadline (${ms(d)}) ${at} at ${ms(t)}, margin ${ms(margin)}`);
        break;
      }
    }
  }
  return out;
}

export function noHeartbeatAfterEnd({ views }: CheckContext): Failures {
  const out: Failures = [];
  for (const l of views.leases.values()) {
    if (l.endT === undefined) continue;
    const end = l.endT;
    const late = l.beatTs.find((t) => t > end + ORDER_SLACK_MS);
    if (late !== undefined)
      out.push(`lease ${l.key} heartbeated at ${ms(late)}, after it ended (settled or lost) at ${ms(end)}`);
  }
  return out;
}

export function handlerAborted({ views }: CheckContext, c: HandlerAborted): Failures {
  const l = views.lease(c.jobId);
  if (!l) return [`job ${c.jobId} was never handed out`];
  const cause = l.lostT ?? l.cancelT;
  if (cause === undefined)
    return [`job ${c.jobId}: the gateway never answered a heartbeat with its loss or cancel`];
  const within = c.within ? durationMs(c.within) : 1_000;
  const aborted = views.trace
    .of("handler")
    .find((e) => e.event.jobId === c.jobId && e.event.kind === HandlerEventKind.ABORTED);
  if (!aborted) return [`job ${c.jobId}: the handler never reported ABORTED`];
  if (aborted.t - cause > within)
    return [
      `job ${c.jobId}: the handler aborted ${ms(aborted.t - cause)} after the heartbeat answer, want ${ms(within)}`,
    ];
  return [];
}
