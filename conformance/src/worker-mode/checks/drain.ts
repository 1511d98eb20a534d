import { durationMs } from "@bufbuild/protobuf/wkt";
import type { ClaimStreamHalfClosed, StoppedPromptly } from "@taskq/sdk/conformance";
import type { TraceEvent } from "../trace.js";
import { ms } from "../views.js";
import type { CheckContext, Failures } from "./check.js";

const STOP_READ_SLACK_MS = 250;

export function noPollAfterStop({ views }: CheckContext): Failures {
  const stop = views.stopT;
  if (stop === undefined) return ["the case never sent a stop"];
  // The stop travels over a pipe to a worker that may be busy: a poll it wrote before reading the stop
  // is no fault. A worker that goes on polling polls again when that one is answered, later than this.
  const late = views.polls.find((p) => p.t > stop + STOP_READ_SLACK_MS);
  return late ? [`polled at ${ms(late.t)}, after the stop at ${ms(stop)}`] : [];
}

export function stoppedPromptly({ views }: CheckContext, c: StoppedPromptly): Failures {
  const within = c.within ? durationMs(c.within) : 1_000;
  const stop = views.stopT;
  if (stop === undefined) return ["the case never sent a stop"];
  if (views.stoppedT === undefined) return ["the program never answered Stopped"];
  const took = views.stoppedT - stop;
  return took > within ? [`stopped ${ms(took)} after the stop, want within ${ms(within)}`] : [];
}

/**
 * Every Claim stream open at the stop ends half-closed by the worker, within `within` of the stop: not
 * cancelled (a reset can lose an answer that already carried jobs), and not left open for the gateway
 * to cut.
 */
export function claimStreamHalfClosed({ views }: CheckContext, c: ClaimStreamHalfClosed): Failures {
  const within = c.within ? durationMs(c.within) : 1_000;
  const stop = views.stopT;
  if (stop === undefined) return ["the case never sent a stop"];
  const { trace } = views;
  const endOf = (id: number) =>
    trace.events.find(
      (e): e is Extract<TraceEvent, { type: "end" | "fail" }> =>
        (e.type === "end" || e.type === "fail") && e.stream === "claim" && e.id === id,
    );
  const open = trace
    .of("open")
    .filter((o) => o.stream === "claim" && o.id > 0 && o.t <= stop)
    .filter((o) => {
      const end = endOf(o.id);
      return end === undefined || end.t > stop;
    });
  if (open.length === 0)
    return ["no Claim stream was open at the stop: the case does not exercise this check"];
  const out: Failures = [];
  for (const o of open) {
    const end = endOf(o.id);
    if (end?.type === "fail")
      out.push(
        `claim stream ${o.id} ended in a scripted failure after the stop: the case does not exercise this check`,
      );
    else if (end === undefined || end.how === "gateway")
      out.push(`claim stream ${o.id} was still open when the case ended, want it half-closed at the stop`);
    else if (end.how === "cancelled")
      out.push(
        `claim stream ${o.id} was cancelled (reset) ${ms(end.t - stop)} after the stop, want it half-closed and its last poll's answer awaited`,
      );
    else if (end.t - stop > within)
      out.push(`claim stream ${o.id} ended ${ms(end.t - stop)} after the stop, want within ${ms(within)}`);
  }
  return out;
}
