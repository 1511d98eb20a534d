import { durationMs } from "@bufbuild/protobuf/wkt";
import type { StoppedPromptly } from "@taskq/sdk/conformance";
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
