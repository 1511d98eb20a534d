import type { Expectation, WorkerCase } from "@taskq/sdk/conformance";
import type { CheckContext, Failures } from "./checks/check.js";
import { concurrency, leaseRequested, pollRate, workerIdentity } from "./checks/claims.js";
import { claimStreamHalfClosed, noPollAfterStop, stoppedPromptly } from "./checks/drain.js";
import { handlerAborted, heartbeatsInTime, noHeartbeatAfterEnd } from "./checks/heartbeats.js";
import { hygiene } from "./checks/hygiene.js";
import { held, releasedOnVerdict } from "./checks/prefetch.js";
import { settleCount, settled } from "./checks/settles.js";
import { reconnectBackoff, streamOpens } from "./checks/streams.js";
import { queueKeepsPolling, verdictsHonoured } from "./checks/verdicts.js";
import type { Trace } from "./trace.js";
import { TraceViews } from "./views.js";

function check(ctx: CheckContext, e: Expectation): Failures {
  const c = e.check;
  switch (c.case) {
    case "settled":
      return settled(ctx, c.value);
    case "settleCount":
      return settleCount(ctx, c.value);
    case "verdictsHonoured":
      return verdictsHonoured(ctx, c.value);
    case "heartbeatsInTime":
      return heartbeatsInTime(ctx, c.value);
    case "noHeartbeatAfterEnd":
      return noHeartbeatAfterEnd(ctx);
    case "handlerAborted":
      return handlerAborted(ctx, c.value);
    case "concurrency":
      return concurrency(ctx, c.value);
    case "pollRate":
      return pollRate(ctx, c.value);
    case "workerIdentity":
      return workerIdentity(ctx);
    case "streamOpens":
      return streamOpens(ctx, c.value);
    case "reconnectBackoff":
      return reconnectBackoff(ctx, c.value);
    case "noPollAfterStop":
      return noPollAfterStop(ctx);
    case "stoppedPromptly":
      return stoppedPromptly(ctx, c.value);
    case "queueKeepsPolling":
      return queueKeepsPolling(ctx, c.value);
    case "leaseRequested":
      return leaseRequested(ctx, c.value);
    case "claimStreamHalfClosed":
      return claimStreamHalfClosed(ctx, c.value);
    case "releasedOnVerdict":
      return releasedOnVerdict(ctx, c.value);
    case "held":
      return held(ctx, c.value);
    default:
      return ["an expectation names no check"];
  }
}

/** Every failure of the case: the protocol checks every case gets, then each expectation, tagged. */
export function judge(k: WorkerCase, trace: Trace, token?: string): Failures {
  const ctx: CheckContext = { views: new TraceViews(trace), case: k, token };
  const out = hygiene(ctx);
  for (const e of k.expect) for (const f of check(ctx, e)) out.push(`${e.check.case}: ${f}`);
  return out;
}
